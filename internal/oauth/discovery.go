package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxDocBytes bounds a metadata document, a JWKS or an introspection answer.
const maxDocBytes = 1 << 20

// serverMetadata is the part of the authorization server's metadata (RFC 8414 §2,
// OpenID Connect Discovery 1.0 §3) the gateway reads.
type serverMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
}

// metadataURLs are where the issuer's metadata may be: the RFC 8414 §3.1 form (the
// well-known path inserted before the issuer's path), then OpenID Connect
// Discovery's (appended to it).
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.Path, "/")
	rfc := *u
	rfc.Path = "/.well-known/oauth-authorization-server" + path
	oidc := *u
	oidc.Path = path + "/.well-known/openid-configuration"
	return []string{rfc.String(), oidc.String()}
}

// discover fetches the issuer's metadata; its issuer must equal ours exactly (RFC
// 8414 §3.3), or a document served for another issuer could name its keys.
func discover(ctx context.Context, c *http.Client, issuer string) (*serverMetadata, error) {
	var errs []error
	for _, u := range metadataURLs(issuer) {
		var m serverMetadata
		if err := fetchJSON(ctx, c, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != issuer {
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", u, m.Issuer, issuer))
			continue
		}
		return &m, nil
	}
	return nil, fmt.Errorf("authorization server metadata: %w", errors.Join(errs...))
}

// fetchJSON GETs url and decodes its JSON body, at most maxDocBytes.
func fetchJSON(ctx context.Context, c *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeBody(resp, u, v)
}

func decodeBody(resp *http.Response, u string, v any) error {
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	if len(b) > maxDocBytes {
		return fmt.Errorf("%s: answer over %d bytes", u, maxDocBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: not a JSON document of the expected shape", u)
	}
	return nil
}
