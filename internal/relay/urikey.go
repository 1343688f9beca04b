package relay

import "strings"

// specialSchemes are the WHATWG URL Standard's special schemes (§ 4.1), whose
// hosts are lower-cased and whose paths take "\" as "/".
var specialSchemes = map[string]bool{"ftp": true, "file": true, "http": true, "https": true, "ws": true, "wss": true}

// resourceKey is uri as an MCP server finds a resource by it: the TypeScript SDK
// looks a resources/read uri up as new URL(uri).toString() (WHATWG URL Standard), so
// "FILE:///a/./b", " file:///a/b" and "file://localhost/a/%2e/b" all read
// "file:///a/b". It approximates that serialization, erring toward equating URIs:
// C0 controls and spaces trimmed, tab and newlines removed, scheme and authority
// lower-cased, "." and ".." path segments (also as %2e) resolved. A visibility key.
//
// With several servers a uri is <server>+<uri> (docs/servers.md#naming) and the
// server parses only what follows the first "+", so that part is keyed on its own.
func resourceKey(uri string) string {
	if i := strings.IndexByte(uri, '+'); i > 0 && !strings.ContainsAny(uri[:i], ":/?#") {
		return strings.ToLower(uri[:i]) + "+" + resourceKey(uri[i+1:])
	}
	s := strings.TrimFunc(uri, func(r rune) bool { return r <= ' ' })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	i := strings.IndexByte(s, ':')
	if i <= 0 || strings.ContainsAny(s[:i], "/?#") {
		return s
	}
	scheme, rest := strings.ToLower(s[:i]), s[i+1:]
	tail := ""
	if j := strings.IndexAny(rest, "?#"); j >= 0 {
		rest, tail = rest[:j], rest[j:]
	}
	special := specialSchemes[scheme]
	if special {
		rest = strings.ReplaceAll(rest, `\`, "/")
	}
	if scheme == "file" && !strings.HasPrefix(rest, "//") {
		rest = "//" + "/" + strings.TrimPrefix(rest, "/")
	}
	authority := ""
	if strings.HasPrefix(rest, "//") {
		k := strings.IndexByte(rest[2:], '/')
		if k < 0 {
			authority, rest = rest, ""
		} else {
			authority, rest = rest[:2+k], rest[2+k:]
		}
		authority = strings.ToLower(authority)
		if scheme == "file" && authority == "//localhost" {
			authority = "//"
		}
	}
	if strings.HasPrefix(rest, "/") {
		rest = removeDotSegments(rest)
	}
	if authority == "" && strings.HasPrefix(rest, "//") {
		rest = "/." + rest // as the WHATWG serializer does, so the path never reads as an authority
	}
	return scheme + ":" + authority + rest + tail
}

// removeDotSegments resolves "." and ".." segments of an absolute path, also
// spelled with %2e in either case, as the WHATWG path state does.
func removeDotSegments(path string) string {
	segs := strings.Split(path[1:], "/")
	out := make([]string, 0, len(segs))
	for i, seg := range segs {
		last := i == len(segs)-1
		switch strings.ToLower(seg) {
		case ".", "%2e":
			if last {
				out = append(out, "")
			}
		case "..", ".%2e", "%2e.", "%2e%2e":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, seg)
		}
	}
	return "/" + strings.Join(out, "/")
}
