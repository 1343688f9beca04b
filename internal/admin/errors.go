package admin

import "errors"

// Start-up errors of New, matched with errors.Is.
var (
	ErrBadAddr    = errors.New("admin: bad listen address")
	ErrNoToken    = errors.New("admin: a listener off loopback needs a bearer token: set mcpgate.admin.token in --config or MCPGATE_ADMIN_TOKEN")
	ErrNoStore    = errors.New("admin: no audit store to read")
	ErrShortToken = errors.New("admin: the bearer token must be at least 16 characters")
	ErrBadDigest  = errors.New("admin: tokenSHA256 must be 64 hex digits (sha256 of the token)")
)
