package channelcheck

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.mau.fi/util/confusable"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// URLRule returns the rule a URL-mode elicitation's url breaks, or "": not https
// (or not a URL at all), a private host, a look-alike host. The order is that of
// the checks: a plain-http URL to a private host is elicitation_url_insecure.
func URLRule(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || !strings.EqualFold(u.Scheme, "https") {
		return RuleElicitationInsecureURL
	}
	if u.User != nil {
		return RuleElicitationLookalikeHost // "https://github.com@evil.example/" shows one host and opens another
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if PrivateHost(host) {
		return RuleElicitationPrivateHost
	}
	if LookalikeHost(host) || SpoofedSubdomain(host) || BrandLure(host) {
		return RuleElicitationLookalikeHost
	}
	return ""
}

// internalSuffixes are names that resolve only inside a network (RFC 6761, RFC 6762,
// RFC 8375, ICANN's .internal) or name a cloud metadata service.
var internalSuffixes = []string{"localhost", "local", "internal", "lan", "intranet", "corp", "home", "home.arpa", "localdomain"}

// PrivateHost reports whether host (lower case, no port) is loopback, private
// (RFC 1918, RFC 4193), link-local, shared (RFC 6598), unspecified or multicast, in
// any IPv4 spelling a browser accepts (dotted, decimal, hex, octal), or a name that
// resolves only inside a network: localhost, *.local, *.internal, a single label.
func PrivateHost(host string) bool {
	h := strings.Trim(host, "[]")
	if a, err := netip.ParseAddr(h); err == nil {
		return privateAddr(a)
	}
	if a, ok := legacyIPv4(h); ok {
		return privateAddr(a)
	}
	if !strings.Contains(h, ".") {
		return true // a single label: resolved by the local search domain
	}
	for _, s := range internalSuffixes {
		if h == s || strings.HasSuffix(h, "."+s) {
			return true
		}
	}
	return false
}

func privateAddr(a netip.Addr) bool {
	a = a.Unmap()
	cgnat := netip.MustParsePrefix("100.64.0.0/10")
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() || cgnat.Contains(a) ||
		a == netip.MustParseAddr("fd00:ec2::254")
}

// legacyIPv4 reads the IPv4 forms the WHATWG URL parser accepts besides dotted
// decimal: one to four parts, each decimal, 0x hex or 0 octal ("2130706433",
// "0x7f.1", "0177.0.0.1").
func legacyIPv4(h string) (netip.Addr, bool) {
	parts := strings.Split(h, ".")
	if len(parts) > 4 || h == "" {
		return netip.Addr{}, false
	}
	var nums []uint64
	for _, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(p, "0x"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" && base == 16 {
			digits = "0"
		}
		n, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		nums = append(nums, n)
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (24 - 8*i)
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// LookalikeHost reports whether a host name imitates another: a label that is not
// valid punycode, one that mixes scripts (beyond the combinations UTS #39's
// Highly Restrictive level allows: Latin with Han and Hiragana/Katakana, Hangul, or
// Bopomofo), or a non-ASCII label whose skeleton is all ASCII ("аррӏе" in Cyrillic
// is "apple"). Plain ASCII names and ordinary IDNs ("münchen.de", "пример.рф") are
// not look-alikes.
func LookalikeHost(host string) bool {
	for _, label := range strings.Split(host, ".") {
		if label == "" {
			continue
		}
		if strings.HasPrefix(label, "xn--") {
			u, err := idna.Punycode.ToUnicode(label)
			if err != nil {
				return true
			}
			label = u
		}
		if isASCII(label) {
			continue
		}
		if mixedScript(label) {
			return true
		}
		if skel := confusable.Skeleton(label); isASCII(skel) && skel != label {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

var scripts = map[string]*unicode.RangeTable{
	"Latin": unicode.Latin, "Greek": unicode.Greek, "Cyrillic": unicode.Cyrillic, "Armenian": unicode.Armenian,
	"Hebrew": unicode.Hebrew, "Arabic": unicode.Arabic, "Han": unicode.Han, "Hiragana": unicode.Hiragana,
	"Katakana": unicode.Katakana, "Hangul": unicode.Hangul, "Bopomofo": unicode.Bopomofo, "Thai": unicode.Thai,
	"Devanagari": unicode.Devanagari, "Georgian": unicode.Georgian, "Cherokee": unicode.Cherokee,
}

// allowedMixes are the script sets UTS #39 section 5.2 (Highly Restrictive) allows in
// one identifier.
var allowedMixes = []map[string]bool{
	{"Latin": true, "Han": true, "Hiragana": true, "Katakana": true},
	{"Latin": true, "Han": true, "Hangul": true},
	{"Latin": true, "Han": true, "Bopomofo": true},
}

// mixedScript reports whether the letters of s come from more than one script, in a
// combination Highly Restrictive does not allow. A letter of a script not in the
// table counts as its own script.
func mixedScript(s string) bool {
	seen := map[string]bool{}
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		name := "other:" + strconv.Itoa(int(r)>>7)
		for n, t := range scripts {
			if unicode.Is(t, r) {
				name = n
				break
			}
		}
		seen[name] = true
	}
	if len(seen) < 2 {
		return false
	}
	for _, mix := range allowedMixes {
		ok := true
		for n := range seen {
			ok = ok && mix[n]
		}
		if ok {
			return false
		}
	}
	return true
}

// brands are the names phishing pages most often put in a subdomain to pass for the
// real sign-in page ("github.login-check.example").
var brands = map[string]bool{
	"github": true, "gitlab": true, "bitbucket": true, "atlassian": true, "google": true, "gmail": true,
	"microsoft": true, "microsoftonline": true, "office365": true, "outlook": true, "azure": true, "live": true,
	"apple": true, "icloud": true, "paypal": true, "amazon": true, "aws": true, "okta": true, "auth0": true,
	"slack": true, "dropbox": true, "facebook": true, "linkedin": true, "openai": true, "anthropic": true,
	"stripe": true, "cloudflare": true, "npmjs": true, "docker": true, "salesforce": true, "zoom": true,
}

// lureWords are the words a phishing domain adds to a brand ("session-check",
// "secure-login", "account-verify").
var lureWords = []string{"login", "logon", "signin", "sign-in", "auth", "secure", "verify", "verif", "session",
	"account", "sso", "oauth", "confirm", "update", "support", "check", "recover", "unlock", "security", "wallet"}

// SpoofedSubdomain reports whether a host (lower case) puts another site's name in
// front of its own registrable domain (eTLD+1, golang.org/x/net/publicsuffix), the
// subdomain spoofing the MCP 2026-07-28 elicitation section tells clients to guard
// against: a whole domain as labels ("github.com.session-check.example",
// "accounts.google.com.evil.example"), or a brand's name as a label (or a label's
// first word) under a domain that carries a lure word ("github.login-verify.example",
// "paypal-secure.account-check.example"). A company's own host for a brand
// ("github.acme.com" for GitHub Enterprise) is not one: its domain names no lure.
func SpoofedSubdomain(host string) bool {
	host = strings.TrimSuffix(host, ".")
	reg, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil || len(reg) >= len(host) {
		return false
	}
	sub := strings.Split(host[:len(host)-len(reg)-1], ".")
	for i, l := range sub {
		if i > 0 && (genericTLDs[l] || i > 1 && secondLevels[sub[i-1]] && icannTLD(l)) {
			return true // "<name>.com." or "<name>.co.uk." before the real domain
		}
	}
	regName := reg[:strings.IndexByte(reg, '.')]
	if brands[regName] {
		return false // the brand's own domain
	}
	lure := false
	for _, w := range lureWords {
		lure = lure || strings.Contains(regName, w)
	}
	if !lure {
		return false
	}
	for _, l := range sub {
		first := l
		if k := strings.IndexAny(l, "-_"); k > 0 {
			first = l[:k]
		}
		if brands[first] {
			return true
		}
	}
	return false
}

// genericTLDs are the top-level domains that, as a label inside a host, can only be
// another site's name ("github.com.<domain>"); a country code alone is often a
// region ("app.us.auth0.com"), so it counts only after a second level (secondLevels:
// "paypal.co.uk.<domain>").
var (
	genericTLDs  = map[string]bool{"com": true, "net": true, "org": true, "io": true, "dev": true, "app": true, "ai": true, "gov": true, "edu": true, "info": true, "biz": true}
	secondLevels = map[string]bool{"co": true, "com": true, "org": true, "net": true, "gov": true, "ac": true, "edu": true}
)

// icannTLD reports whether a label is a top-level domain of the ICANN section of the
// public suffix list ("com", "io", "uk"), as a host's last label.
func icannTLD(l string) bool {
	if l == "" || !isASCII(l) {
		return false
	}
	ps, icann := publicsuffix.PublicSuffix("x." + l)
	return icann && ps == l
}

// BrandLure reports whether a host's registrable domain (eTLD+1) passes for a
// brand's sign-in page on its own: a brand and a lure word as its '-'-separated
// parts or run together ("github-login.com", "secure-paypal-verify.net",
// "microsoftsignin.com"), or a brand spelled with digits for letters or "rn" for
// "m" ("paypa1.com", "micros0ft-account.com", "rnicrosoft.com"). The brand's own
// domain and a part that only starts like a lure ("stripe-checkout") are not.
func BrandLure(host string) bool {
	reg, err := publicsuffix.EffectiveTLDPlusOne(strings.TrimSuffix(host, "."))
	if err != nil {
		return false
	}
	name := reg[:strings.IndexByte(reg, '.')]
	if brands[name] {
		return false
	}
	brand, lure := false, false
	for _, p := range strings.Split(name, "-") {
		switch {
		case brands[p] && p != "live" && p != "zoom":
			brand = true
		case lureWord(p):
			lure = true
		case leetBrand(p):
			return true
		default:
			for b := range brands {
				if len(b) >= 5 && len(p) > len(b) && (strings.HasPrefix(p, b) && lureWord(p[len(b):]) || strings.HasSuffix(p, b) && lureWord(p[:len(p)-len(b)])) {
					return true // "githublogin", "securepaypal"
				}
			}
		}
	}
	return brand && lure
}

// lureWord reports whether p is one of lureWords ("verif" as a prefix:
// "verification").
func lureWord(p string) bool {
	for _, w := range lureWords {
		if p == w || w == "verif" && strings.HasPrefix(p, w) {
			return true
		}
	}
	return false
}

// leetBrand reports whether p reads as a brand once digits that stand for letters
// (0 o, 1 l or i, 3 e, 4 a, 5 s, 7 t) and "rn" for "m" are read back, and differs
// from it as written.
func leetBrand(p string) bool {
	if len(p) < 5 || brands[p] {
		return false
	}
	for _, one := range [...]byte{'l', 'i'} {
		var b strings.Builder
		for i := 0; i < len(p); i++ {
			c := p[i]
			switch c {
			case '0':
				c = 'o'
			case '1':
				c = one
			case '3':
				c = 'e'
			case '4':
				c = 'a'
			case '5':
				c = 's'
			case '7':
				c = 't'
			case 'r':
				if i+1 < len(p) && p[i+1] == 'n' {
					c = 'm'
					i++
				}
			}
			b.WriteByte(c)
		}
		if brands[b.String()] {
			return true
		}
	}
	return false
}
