package engine

import "strings"

// Places a renderer hides besides HTML comments and hidden elements
// (docs/engine.md#markup): Markdown comments (a reference definition to "#" that
// no renderer shows, `[//]: # (...)`), JSON-LD blocks (`<script
// type="application/ld+json">`, data for crawlers), image alt text (Markdown and
// HTML) and title attributes. Words there that address the model are
// output_hidden_instructions.

// mdCommentAt parses a Markdown comment whose '[' is at s[i], at a line start: a
// label of at most 32 bytes, ':', a destination of "#", "<>" or "//", and a title
// in parentheses or quotes. It returns the title's span and the end.
func mdCommentAt(s string, i int) (bs, be, end int, ok bool) {
	if i > 0 && s[i-1] != '\n' {
		return 0, 0, 0, false
	}
	c := strings.IndexByte(s[i+1:min(len(s), i+34)], ']')
	if c < 0 || i+c+2 >= len(s) || s[i+c+2] != ':' {
		return 0, 0, 0, false
	}
	k := i + c + 3
	for k < len(s) && s[k] == ' ' {
		k++
	}
	switch {
	case strings.HasPrefix(s[k:], "<>"), strings.HasPrefix(s[k:], "//"):
		k += 2
	case strings.HasPrefix(s[k:], "#"):
		k++
	default:
		return 0, 0, 0, false
	}
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if k >= len(s) {
		return 0, 0, 0, false
	}
	closing := byte(0)
	switch s[k] {
	case '(':
		closing = ')'
	case '"', '\'':
		closing = s[k]
	default:
		return 0, 0, 0, false
	}
	bs = k + 1
	e := strings.IndexByte(s[bs:min(len(s), bs+maxMarkup)], closing)
	if e < 0 {
		return 0, 0, 0, false
	}
	return bs, bs + e, bs + e + 1, true
}

// jsonLDAt parses a <script type="application/ld+json"> block whose '<' is at s[i]
// and returns its body and end.
func jsonLDAt(s string, i int) (bs, be, end int, ok bool) {
	if i+8 > len(s) || !strings.EqualFold(s[i+1:i+7], "script") {
		return 0, 0, 0, false
	}
	e := strings.IndexByte(s[i:min(len(s), i+256)], '>')
	if e < 0 || indexFold(s[i:i+e], "ld+json") < 0 {
		return 0, 0, 0, false
	}
	bs = i + e + 1
	c := indexFold(s[bs:min(len(s), bs+maxMarkup)], "</script")
	if c < 0 {
		be = min(len(s), bs+maxMarkup)
		return bs, be, be, true
	}
	be = bs + c
	end = be + len("</script")
	if end < len(s) && s[end] == '>' {
		end++
	}
	return bs, be, end, true
}

// tagAttr returns the value of attribute name (lower case) of the start tag whose
// '<' is at s[i], or "".
func tagAttr(s string, i int, name string) string {
	e := strings.IndexByte(s[i:min(len(s), i+maxMarkup)], '>')
	if e < 0 {
		return ""
	}
	tag := s[i : i+e]
	for k := 0; ; {
		j := indexFold(tag[k:], name+"=")
		if j < 0 {
			return ""
		}
		j += k
		k = j + len(name) + 1
		if j == 0 || tag[j-1] != ' ' && tag[j-1] != '\n' && tag[j-1] != '\t' {
			continue // "data-alt=", not "alt="
		}
		if k < len(tag) && (tag[k] == '"' || tag[k] == '\'') {
			q := tag[k]
			if c := strings.IndexByte(tag[k+1:], q); c >= 0 {
				return tag[k+1 : k+1+c]
			}
			return tag[k+1:]
		}
		v := tag[k:]
		if c := strings.IndexAny(v, " \t\n"); c >= 0 {
			v = v[:c]
		}
		return v
	}
}

// hiddenOrdersIn reports words aimed at the model in text no renderer shows.
func hiddenOrdersIn(body string) bool {
	return addressesModel(body) || directiveIn(body) != dirNone
}

// ---- the scanner's side ----

// mdComment checks a '[' at s[i] for a Markdown comment that addresses the model.
func (t *textScan) mdComment(i int) bool {
	bs, be, end, ok := mdCommentAt(t.s, i)
	if ok && hiddenOrdersIn(t.s[bs:be]) {
		t.k.add(rHiddenOrders, "markdown_comment", i, end)
	}
	return ok
}

// hiddenAttrs checks the tag at s[i]: a JSON-LD block, or alt and title attributes,
// that address the model (an order in plain words: alt text is read aloud and shown
// where an image fails, so the looser test of a comment would flag captions).
func (t *textScan) hiddenAttrs(i int) {
	s := t.s
	if bs, be, end, ok := jsonLDAt(s, i); ok {
		if hiddenOrdersIn(s[bs:be]) {
			t.k.add(rHiddenOrders, "json_ld", i, end)
		}
		return
	}
	for _, a := range [...]string{"alt", "title", "aria-label"} {
		if v := tagAttr(s, i, a); len(v) >= 12 && directiveIn(v) != dirNone {
			t.k.add(rHiddenOrders, "html_attribute", i, i+strings.IndexByte(s[i:], '>')+1)
			return
		}
	}
}

// altText checks a Markdown image's alt text s[as:ae] for an order in plain words.
func (t *textScan) altText(as, ae, start, end int) {
	if ae-as >= 12 && directiveIn(t.s[as:ae]) != dirNone {
		t.k.add(rHiddenOrders, "alt_text", start, end)
	}
}
