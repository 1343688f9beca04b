package engine

import "strings"

// Fetches a renderer makes beyond Markdown images and <img src> (docs/engine.md#markup):
// HTML and SVG elements whose attributes name a resource loaded as soon as the
// markup renders (<source srcset>, <video poster>, SVG <image href>, <link href>,
// ...), CSS url(), and Mermaid node images (`A@{ img: "https://..." }`). Like
// imgTagAt, the parsers are pure functions of the text, so the scanner
// (output_exfil_url) and the Warn sanitizer (defang) agree on every URL.

// fetchAttrs names, per element (lower case), the attributes whose URL the element
// fetches when it renders. srcset holds a list of candidates ("url 2x, url 640w").
var fetchAttrs = map[string][]string{
	"source":  {"src", "srcset"},
	"picture": {"srcset"},
	"video":   {"src", "poster"},
	"audio":   {"src"},
	"track":   {"src"},
	"image":   {"href", "xlink:href", "src"}, // SVG
	"feimage": {"href", "xlink:href"},        // SVG filter input
	"use":     {"href", "xlink:href"},        // SVG <use> of an external document
	"link":    {"href"},
	"input":   {"src"}, // type=image
	"embed":   {"src"},
	"object":  {"data"},
	"iframe":  {"src"},
	"frame":   {"src"},
	"script":  {"src"},
	"body":    {"background"},
	"table":   {"background"},
	"td":      {"background"},
	"img":     {"srcset", "lowsrc", "dynsrc"}, // src is imgTagAt's
}

// fetchURL is one URL a renderer fetches, at s[us:ue], in the markup s[start:end].
// sheet marks a <link href>: a stylesheet or font URL carries its parameters in the
// query ("family=Inter:wght@400;700"), so it gets a link's threshold.
type fetchURL struct {
	start, end int
	us, ue     int
	ent        string
	sheet      bool
}

// carries reports whether the URL carries data out (urlCarriesData).
func (f fetchURL) carries(s string) bool { return urlCarriesData(s[f.us:f.ue], !f.sheet) }

// fetchTagAt parses the HTML or SVG start tag whose '<' is at s[i] and appends to
// dst the URLs of its fetching attributes (fetchAttrs); CSS url() in a style
// attribute is cssURL's. It returns dst unchanged for any other tag.
func fetchTagAt(s string, i int, dst []fetchURL) []fetchURL {
	j := i + 1
	for j < len(s) && j-i <= 9 && (isAlnum(s[j]) || s[j] == ':') {
		j++
	}
	if j == i+1 || j >= len(s) || !(isHTMLSpace(s[j]) || s[j] == '/' || s[j] == '>') {
		return dst
	}
	var low [12]byte
	name := string(lowerInto(low[:0], s[i+1:j]))
	if k := strings.IndexByte(name, ':'); k >= 0 {
		name = name[k+1:] // "svg:image"
	}
	attrs, known := fetchAttrs[name]
	if !known {
		return dst
	}
	e := strings.IndexByte(s[j:min(len(s), j+maxMarkup)], '>')
	if e < 0 {
		return dst
	}
	end := j + e + 1
	tag := s[j : j+e]
	htmlAttrs(tag, func(an string, vs, ve int) {
		vs, ve = j+vs, j+ve
		for _, a := range attrs {
			if !strings.EqualFold(an, a) {
				continue
			}
			ent := "html_" + name + "_" + strings.TrimPrefix(a, "xlink:")
			if a == "srcset" {
				dst = srcsetURLs(s, vs, ve, i, end, ent, dst)
			} else {
				us, ue := trimSpaceSpan(s, vs, ve)
				if ue > us {
					dst = append(dst, fetchURL{i, end, us, ue, ent, name == "link"})
				}
			}
		}
	})
	return dst
}

// srcsetURLs appends the URLs of a srcset value s[vs:ve]: comma-separated
// candidates, each a URL and an optional descriptor ("a.png 2x, b.png 640w").
func srcsetURLs(s string, vs, ve, start, end int, ent string, dst []fetchURL) []fetchURL {
	for k := vs; k < ve; {
		for k < ve && (s[k] == ' ' || s[k] == ',' || s[k] == '\n' || s[k] == '\t') {
			k++
		}
		us := k
		for k < ve && s[k] != ' ' && s[k] != '\n' && s[k] != '\t' {
			k++
		}
		ue := k
		if ue > us && s[ue-1] == ',' {
			ue-- // "a.png,b.png": a URL may not end in a comma (HTML, srcset parsing)
		}
		if ue > us {
			dst = append(dst, fetchURL{start, end, us, ue, ent, false})
		}
		for k < ve && s[k] != ',' {
			k++
		}
	}
	return dst
}

// cssURLAt parses the argument of a CSS url( whose '(' is at s[p], up to lim: the
// URL span, with quotes and spaces trimmed, and the end after ')'.
func cssURLAt(s string, p, lim int) (us, ue, end int, ok bool) {
	lim = min(lim, len(s), p+maxMarkup)
	c := strings.IndexByte(s[p+1:lim], ')')
	if c < 0 {
		return 0, 0, 0, false
	}
	us, ue = trimSpaceSpan(s, p+1, p+1+c)
	if ue-us >= 2 && (s[us] == '"' || s[us] == '\'') && s[ue-1] == s[us] {
		us, ue = us+1, ue-1
	}
	return us, ue, p + 2 + c, ue > us
}

// mermaidImgAt parses a Mermaid node image `img: "URL"` whose ':' is at s[c]
// (Mermaid 11 shape data, `A@{ img: "...", label: "..." }`): the URL span and the
// end after its closing quote.
func mermaidImgAt(s string, c int) (us, ue, end int, ok bool) {
	if c < 3 || !strings.EqualFold(s[c-3:c], "img") || c > 3 && isWordByte(s[c-4]) {
		return 0, 0, 0, false
	}
	k := c + 1
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k >= len(s) || s[k] != '"' && s[k] != '\'' {
		return 0, 0, 0, false
	}
	q := s[k]
	us = k + 1
	e := strings.IndexByte(s[us:min(len(s), us+maxMarkup)], q)
	if e < 0 {
		return 0, 0, 0, false
	}
	ue = us + e
	return us, ue, ue + 1, ue > us
}

func trimSpaceSpan(s string, a, b int) (int, int) {
	for a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\n' || s[a] == '\r') {
		a++
	}
	for b > a && (s[b-1] == ' ' || s[b-1] == '\t' || s[b-1] == '\n' || s[b-1] == '\r') {
		b--
	}
	return a, b
}

// ---- the scanner's side ----

// fetchTag reports the fetching attributes of the tag at s[i] whose URL carries data
// (urlCarriesData, with an image's threshold but for <link>: these load without a
// click).
func (t *textScan) fetchTag(i int) {
	var buf [4]fetchURL
	for _, f := range fetchTagAt(t.s, i, buf[:0]) {
		if f.carries(t.s) {
			t.k.add(rExfil, f.ent, f.start, f.end)
			return
		}
	}
}

// cssURL checks a '(' at s[i] for a CSS url() outside a tag (a <style> block, an
// inline stylesheet) whose URL carries data.
func (t *textScan) cssURL(i int) {
	s := t.s
	if i < 3 || !strings.EqualFold(s[i-3:i], "url") || i > 3 && isWordByte(s[i-4]) {
		return
	}
	if us, ue, end, ok := cssURLAt(s, i, len(s)); ok && urlCarriesData(s[us:ue], true) {
		t.k.add(rExfil, "css_url", i-3, end)
	}
}

// mermaidImg checks a ':' at s[i] for a Mermaid node image whose URL carries data.
func (t *textScan) mermaidImg(i int) {
	if us, ue, end, ok := mermaidImgAt(t.s, i); ok && urlCarriesData(t.s[us:ue], true) {
		t.k.add(rExfil, "mermaid_img", i-3, end)
	}
}

// ---- the sanitizer's side ----

// mayFetch reports whether s may hold markup fetchURLs finds: '<' before a letter,
// "url(" or "img:" in any case.
func mayFetch(s string) bool {
	return strings.Contains(s, "<") || strings.Contains(s, "(") && (strings.Contains(s, "url(") || strings.Contains(s, "URL(") || indexFold(s, "url(") >= 0) ||
		strings.Contains(s, ":") && (strings.Contains(s, "img:") || indexFold(s, "img:") >= 0)
}

// fetchURLs appends to dst the spans of the URLs of fetching markup in s that carry
// data (what fetchTag, cssURL and mermaidImg report).
func fetchURLs(s string, dst [][2]int) [][2]int {
	if !mayFetch(s) {
		return dst
	}
	var buf [4]fetchURL
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			for _, f := range fetchTagAt(s, i, buf[:0]) {
				if f.carries(s) {
					dst = append(dst, [2]int{f.us, f.ue})
				}
			}
		case '(':
			if i >= 3 && strings.EqualFold(s[i-3:i], "url") && !(i > 3 && isWordByte(s[i-4])) {
				if us, ue, _, ok := cssURLAt(s, i, len(s)); ok && urlCarriesData(s[us:ue], true) {
					dst = append(dst, [2]int{us, ue})
				}
			}
		case ':':
			if us, ue, _, ok := mermaidImgAt(s, i); ok && urlCarriesData(s[us:ue], true) {
				dst = append(dst, [2]int{us, ue})
			}
		}
	}
	return dst
}
