package relay

import (
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// resourceKey is uri as an MCP server finds a resource by it: the TypeScript SDK
// looks a resources/read uri up as new URL(uri).toString(), so the key is the URI's
// WHATWG URL Standard serialization (github.com/nlnwa/whatwg-url, whose hosts go
// through UTS #46 IDNA mapping with golang.org/x/net/idna). Every spelling a server
// reads as the same URI has one key: "FILE:///a/./b", " file:///a/b",
// "file://%6cocalhost/a/%2e/b", "https://intranet:443/x", "https://%69ntranet/x" and
// "https://intra\u00adnet/x" (a soft hyphen, which IDNA maps to nothing) all key as
// their plain form. A string the parser refuses (a server's new URL() throws, so no
// server finds a resource by it) keys as itself. A visibility key
// (docs/channels.md#hidden).
//
// With several servers a uri is <server>+<uri> (docs/servers.md#naming) and the
// server parses only what follows the first "+", so that part is keyed on its own.
func resourceKey(uri string) string {
	if i := strings.IndexByte(uri, '+'); i > 0 && !strings.ContainsAny(uri[:i], ":/?#") {
		return strings.ToLower(uri[:i]) + "+" + resourceKey(uri[i+1:])
	}
	u, err := whatwg.Parse(uri)
	if err != nil {
		return uri
	}
	return u.Href(false)
}
