package engine

import (
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// Targets an agent must not fetch (docs/engine.md#targets): a link in a result that
// points at cloud metadata, at the gateway's own host or network, or at local files
// holding credentials is an invitation to SSRF or to a local read.

// metadataHosts are the names of cloud instance-metadata endpoints.
var metadataHosts = map[string]bool{
	"metadata.google.internal": true, "metadata.goog": true, "metadata": true,
	"metadata.azure.com": true, "instance-data": true, "instance-data.ec2.internal": true,
	"metadata.packet.net": true, "metadata.platformequinix.com": true,
	"localhost": true, "localhost.localdomain": true, "ip6-localhost": true, "ip6-loopback": true,
}

// metadataAddrs are instance-metadata addresses outside the private and link-local
// ranges (AWS's IPv6 endpoint, Alibaba Cloud, Oracle Cloud's legacy one).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("192.0.0.192"),
}

// sensitivePaths are file: paths (prefixes, or segments when they start with '/')
// whose contents are credentials or system state.
var sensitivePaths = []string{
	"/etc/", "/proc/", "/sys/", "/dev/", "/root/", "/var/run/secrets", "/run/secrets", "/var/lib/kubelet",
	"/boot/", "c:/windows/", "/windows/system32",
}

var sensitiveSegments = []string{
	"/.ssh/", "/.aws/", "/.gnupg/", "/.kube/", "/.docker/", "/.config/gcloud", "/.azure/", "/.netrc", "/.git-credentials",
	"/.env", "/.npmrc", "/.pypirc", "/id_rsa", "/id_ed25519", "/.bash_history", "/.zsh_history",
}

// unsafeTarget reports why uri is a target an agent must not fetch, or "". roots are
// the clean absolute paths of the client's declared roots (rootPaths); with none, a
// file: URI is judged by its path alone.
func unsafeTarget(uri string, roots []string) string {
	c := strings.IndexByte(uri, ':')
	if c <= 0 || c > 10 {
		return ""
	}
	scheme := strings.ToLower(uri[:c])
	rest := uri[c+1:]
	switch scheme {
	case "file":
		p := rest
		if strings.HasPrefix(p, "//") {
			p = p[2:]
			if k := strings.IndexByte(p, '/'); k >= 0 {
				p = p[k:] // file://host/path
			} else {
				p = "/"
			}
		}
		p = strings.ToLower(percentDecode(p))
		for _, sp := range sensitivePaths {
			if strings.HasPrefix(p, sp) || strings.HasPrefix(p, "/"+sp[1:]) && len(p) > 2 && p[2] == ':' && strings.HasPrefix(p[3:], sp) {
				return "file_sensitive"
			}
		}
		if len(p) > 3 && p[0] == '/' && p[2] == ':' { // /C:/Windows/...
			for _, sp := range sensitivePaths {
				if strings.HasPrefix(p[3:], sp) {
					return "file_sensitive"
				}
			}
		}
		for _, seg := range sensitiveSegments {
			if strings.Contains(p, seg) {
				return "file_sensitive"
			}
		}
		if p == "/etc" || p == "/proc" || p == "/root" {
			return "file_sensitive"
		}
		if len(roots) > 0 && !fileWithin(uri, roots) {
			return "file_outside_roots"
		}
		return ""
	case "http", "https", "ws", "wss", "ftp", "gopher", "dict", "ldap", "tftp", "smb", "redis", "mongodb", "mysql", "postgres", "postgresql":
	default:
		return ""
	}
	host := urlHost(uri)
	if host == "" {
		return ""
	}
	host = strings.TrimSuffix(host, ".")
	if metadataHosts[host] || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".internal") && strings.HasPrefix(host, "metadata") {
		return "metadata_or_local_host"
	}
	a, ok := hostAddr(host)
	if !ok {
		if a, ok = embeddedAddr(host); !ok {
			return ""
		}
	}
	a = a.Unmap()
	for _, m := range metadataAddrs {
		if a == m {
			return "metadata_address"
		}
	}
	switch {
	case a.IsLoopback(), a.IsUnspecified():
		return "loopback_address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link_local_address" // 169.254.169.254 and fe80::
	case a.IsPrivate():
		return "private_address"
	case a.Is4() && a.As4()[0] == 100 && a.As4()[1]&0xC0 == 64:
		return "private_address" // 100.64.0.0/10, carrier-grade NAT
	}
	return ""
}

// TargetKind reports why an agent must not fetch uri (docs/engine.md#targets): the
// entity of output_ssrf_target ("metadata_address", "link_local_address",
// "metadata_or_local_host", "loopback_address", "private_address", "file_sensitive")
// or "" for a target it may fetch. A file: URI is judged by its path alone.
func TargetKind(uri string) string { return unsafeTarget(uri, nil) }

// embeddedAddr reads the IPv4 address a wildcard-DNS name spells and resolves to:
// four decimal labels ("169.254.169.254.nip.io", "app.10.0.0.1.sslip.io") or one
// label of four dash-separated ones ("169-254-169-254.sslip.io"), followed by a
// domain of at least two labels. A reverse-lookup name (in-addr.arpa) is none.
func embeddedAddr(h string) (netip.Addr, bool) {
	if strings.HasSuffix(h, ".arpa") {
		return netip.Addr{}, false
	}
	labels := strings.Split(h, ".")
	octet := func(l string) (byte, bool) {
		if l == "" || len(l) > 3 {
			return 0, false
		}
		v, err := strconv.ParseUint(l, 10, 8)
		return byte(v), err == nil
	}
	quad := func(ls []string) (netip.Addr, bool) {
		var b [4]byte
		for i, l := range ls {
			v, ok := octet(l)
			if !ok {
				return netip.Addr{}, false
			}
			b[i] = v
		}
		return netip.AddrFrom4(b), true
	}
	for i := 0; i+4+2 <= len(labels); i++ {
		if a, ok := quad(labels[i : i+4]); ok {
			return a, true
		}
	}
	for i := 0; i+1+2 <= len(labels); i++ {
		if ls := strings.Split(labels[i], "-"); len(ls) == 4 {
			if a, ok := quad(ls); ok {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

// hostAddr reads a host as an IP address, including the forms URL parsers accept
// and people use to dodge filters: a decimal or hexadecimal integer
// (2852039166, 0xA9FEA9FE) and dotted parts in octal or hex.
func hostAddr(h string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(h); err == nil {
		return a, true
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			if strings.HasPrefix(p, "0") && len(p) > 1 {
				v, err = strconv.ParseUint(p[1:], 8, 32)
			}
			if err != nil {
				return netip.Addr{}, false
			}
		}
		vals = append(vals, v)
	}
	var ip uint64
	switch len(vals) {
	case 1:
		ip = vals[0]
	case 2:
		ip = vals[0]<<24 | vals[1]
	case 3:
		ip = vals[0]<<24 | vals[1]<<16 | vals[2]
	case 4:
		ip = vals[0]<<24 | vals[1]<<16 | vals[2]<<8 | vals[3]
	}
	if ip > 0xFFFFFFFF {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b = append(b, byte(v))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// targetCheck reports uri (a link's target at s[start:end]) when an agent must not
// fetch it.
func (t *textScan) targetCheck(uri string, start, end int) {
	if t.piiOnly {
		return
	}
	if why := unsafeTarget(uri, t.k.roots); why != "" {
		t.k.add(rSSRF, why, start, end)
	}
}

// uriMember checks a member named "uri" (a resource_link's or an embedded
// resource's target) whose whole value is a URI.
func (t *textScan) uriMember() {
	if t.piiOnly || t.k.inKey || t.k.key != "uri" || len(t.s) > 4096 {
		return
	}
	t.targetCheck(t.s, 0, len(t.s))
}

// rootPaths reads the client's declared roots (Root.uri, MCP 2025-11-25 client/roots)
// as clean absolute paths; a root that is not a file:// URI of an absolute path on
// this host is left out (it cannot contain a file: target).
func rootPaths(uris []string) []string {
	var out []string
	for _, u := range uris {
		if p, ok := filePath(u); ok {
			out = append(out, p)
		}
	}
	return out
}

// filePath is the clean absolute path of a file: URI on this host (no host or
// "localhost"), percent-encoding decoded and "." and ".." segments resolved, or false.
// A query or fragment is ignored: it does not change the file read.
func filePath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || !strings.EqualFold(u.Scheme, "file") || u.Opaque != "" || u.User != nil ||
		(u.Host != "" && !strings.EqualFold(u.Host, "localhost")) ||
		!strings.HasPrefix(u.Path, "/") || strings.ContainsRune(u.Path, 0) {
		return "", false
	}
	return path.Clean(u.Path), true
}

// fileWithin reports whether a file: URI names a root or a path under one, comparing
// whole segments ("/home/bob/app" does not hold "/home/bob/application"). A URI with
// another host, or one that cannot be read as a path, is outside.
func fileWithin(uri string, roots []string) bool {
	p, ok := filePath(uri)
	if !ok {
		return false
	}
	for _, r := range roots {
		if p == r || r == "/" || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}
