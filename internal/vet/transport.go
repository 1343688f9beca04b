package vet

import (
	"encoding/json"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Loopback reports whether host (a URL's hostname) is this machine: localhost, a
// name under .localhost, or a loopback address.
func Loopback(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Plaintext reports whether raw is an http:// or ws:// URL to a host that is not
// loopback, and returns that host.
func Plaintext(raw string) (host string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
	default:
		return "", false
	}
	if u.Hostname() == "" || Loopback(u.Hostname()) {
		return "", false
	}
	return u.Hostname(), true
}

func plaintextFinding(server, ptr, host, what string) Finding {
	return newFinding(RulePlaintextTransport, server, ptr,
		what+" reaches "+strconv.Quote(host)+" over plaintext http: anyone on the path can read and change the traffic; use https")
}

// tlsOffEnv are environment variables that turn certificate verification off, with
// the values that do.
var tlsOffEnv = map[string][]string{
	"NODE_TLS_REJECT_UNAUTHORIZED": {"0"},
	"PYTHONHTTPSVERIFY":            {"0"},
	"GIT_SSL_NO_VERIFY":            {"1", "true", "yes"},
	"UV_INSECURE_HOST":             nil, // any value
	"PIP_TRUSTED_HOST":             nil,
	"NPM_CONFIG_STRICT_SSL":        {"false", "0"},
	"npm_config_strict_ssl":        {"false", "0"},
	"CURL_INSECURE":                {"1", "true"},
}

// tlsOffFlag matches command-line flags that turn certificate verification off.
var tlsOffFlag = regexp.MustCompile(`^--?(insecure|k8s-insecure|allow-insecure|tls-insecure|insecure-tls|insecure-skip-tls-verify|` +
	`(tls|ssl)-?(skip|no)-?verify|(skip|no|disable|ignore)-(tls|ssl|cert|certificate)(-verify|-verification|-check|-checks|-errors)?|` +
	`ignore-certificate-errors|no-check-certificate|strict-ssl=false|insecure-skip-verify)(=true)?$`)

// tlsOffKeys are entry members that turn verification off when true; tlsOnKeys
// those that do when false.
var (
	tlsOffKeys = []string{"insecure", "insecureskipverify", "tlsskipverify", "skiptlsverify", "skipverify", "allowinsecure", "ignorecertificateerrors"}
	tlsOnKeys  = []string{"rejectunauthorized", "verifyssl", "verifytls", "sslverify", "tlsverify", "strictssl", "verify", "verifycertificate"}
)

// checkTransport gives vet_plaintext_transport for a url (or an argument URL of a
// stdio bridge) over plaintext to a remote host, and vet_tls_verification_off for
// environment, flags or entry members that turn certificate checks off.
func checkTransport(s Server) []Finding {
	var out []Finding
	if h, ok := Plaintext(s.URL); ok {
		out = append(out, plaintextFinding(s.Name, s.Pointer+"/url", h, "the server's url"))
	}
	for i, a := range s.Args {
		if h, ok := Plaintext(a); ok {
			out = append(out, plaintextFinding(s.Name, s.Pointer+"/args/"+strconv.Itoa(i), h, "argument "+strconv.Itoa(i)+" (a remote server's URL)"))
		}
		if tlsOffFlag.MatchString(strings.ToLower(a)) {
			out = append(out, newFinding(RuleTLSUnverified, s.Name, s.Pointer+"/args/"+strconv.Itoa(i),
				"the flag "+strconv.Quote(a)+" turns TLS certificate verification off: anyone on the path can impersonate the server"))
		}
	}
	for name, v := range s.Env {
		vals, ok := tlsOffEnv[name]
		if !ok || (vals != nil && !slices.Contains(vals, strings.ToLower(strings.TrimSpace(v)))) {
			continue
		}
		out = append(out, newFinding(RuleTLSUnverified, s.Name, s.Pointer+"/env/"+escape(name),
			"the environment variable "+name+" turns TLS certificate verification off for the server"))
	}
	for key, raw := range s.Raw {
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		k := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(key))
		if (b && slices.Contains(tlsOffKeys, k)) || (!b && slices.Contains(tlsOnKeys, k)) {
			out = append(out, newFinding(RuleTLSUnverified, s.Name, s.Pointer+"/"+escape(key),
				strconv.Quote(key)+" turns TLS certificate verification off for the server"))
		}
	}
	return out
}
