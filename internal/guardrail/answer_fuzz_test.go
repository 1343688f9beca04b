package guardrail

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

// answering is a transport that answers every request with body, status 200.
type answering []byte

func (a answering) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(a)), Request: r}, nil
}

// FuzzGenericAnswer: any answer body to a Generic Guardrail API request is a verdict
// (none, block, intervene) or a failure, never a panic; an intervention replaces
// exactly the texts sent; each finding names the guardrail, a bounded rule id, and
// lies within the text it points to.
func FuzzGenericAnswer(f *testing.F) {
	for _, s := range []string{`{"action":"NONE"}`, `{"action":"BLOCKED","blocked_reason":"x"}`,
		`{"action":"GUARDRAIL_INTERVENED","texts":["a","b"]}`, `{"action":"GUARDRAIL_INTERVENED","texts":["a"]}`,
		`{"action":"NONE","findings":[{"rule_id":"r","severity":"HIGH","index":1,"start":-3,"end":99}]}`,
		`{"action":"NONE","findings":[{"type":"","index":7,"entity":"` + string(bytes.Repeat([]byte("e"), 80)) + `"}]}`, `nope`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := New(map[string]Spec{"g": {Kind: KindGeneric, URL: "http://guard.invalid", Breaker: &Breaker{Failures: 1 << 30}}})
		if err != nil {
			t.Fatal(err)
		}
		s.guards[0].client.Transport = answering(body)
		c := &Content{Method: "tools/call", Phase: "post", Texts: []Text{{"/content/0/text", "héllo"}, {"/content/1/text", "world"}}}
		outs := s.Run(context.Background(), c, nil)
		if len(outs) != 1 {
			t.Fatalf("outcomes %+v", outs)
		}
		o := outs[0]
		switch {
		case o.Failure != "" && o.Verdict != "", o.Failure == "" && o.Verdict != None && o.Verdict != Block && o.Verdict != Intervene:
			t.Fatalf("outcome %+v", o)
		case o.Verdict == Intervene && len(o.Texts) != len(o.Sent):
			t.Fatalf("%d replacements for %d texts sent", len(o.Texts), len(o.Sent))
		}
		at := map[string]string{}
		for _, x := range c.Texts {
			at[x.Pointer] = x.Value
		}
		for _, fd := range o.Findings {
			text, ok := at[fd.Pointer]
			if fd.Source != "guardrail:g" || fd.RuleID == "" || len(fd.RuleID) > maxRuleID || len(fd.Entity) > maxRuleID ||
				fd.Pointer != "" && (!ok || fd.Start < 0 || fd.Start > fd.End || fd.End > len(text)) {
				t.Fatalf("finding %+v", fd)
			}
		}
	})
}
