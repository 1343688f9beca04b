package engine

import "strings"

// credentialSuffixes are file names or endings that hold credentials, beside
// sensitiveSegments (targets.go).
var credentialSuffixes = []string{
	".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", "/.pgpass", "/.htpasswd", "/credentials",
	"/credentials.json", "/secrets.json", "/secrets.yaml", "/secrets.yml", "/.vault-token", "/shadow",
}

// CredentialPath reports whether s, a file path (absolute, relative, ~-relative,
// Windows) or a file: URI, names a file that holds credentials: under ~/.ssh, ~/.aws,
// ~/.gnupg, ~/.kube, ~/.docker, a .env, .netrc, .npmrc, .pypirc or .git-credentials, a
// private key (id_rsa, *.pem, *.key), a credentials or secrets file, /run/secrets
// (docs/engine.md#credential-paths). A string with whitespace in it is no path.
func CredentialPath(s string) bool {
	if len(s) == 0 || len(s) > 4096 || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	p := strings.ToLower(strings.ReplaceAll(s, `\`, "/"))
	if strings.HasPrefix(p, "file:") {
		p = strings.TrimPrefix(strings.TrimPrefix(p, "file:"), "//")
		p = percentDecode(p)
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	for _, seg := range sensitiveSegments {
		if i := strings.Index(p, seg); i >= 0 {
			if seg[len(seg)-1] == '/' {
				return true
			}
			// a file segment ends the name or a path segment: /.env, /.env.local, not /.environment
			rest := p[i+len(seg):]
			if rest == "" || rest[0] == '/' || rest[0] == '.' {
				return true
			}
		}
	}
	for _, suf := range credentialSuffixes {
		if strings.HasSuffix(p, suf) {
			return true
		}
	}
	return strings.Contains(p, "/run/secrets/")
}
