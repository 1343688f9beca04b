package guardrail_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate/internal/guardrail"
)

// TestPresets replays each vendor fixture of testdata/presets: the service answers
// the fixture's answers in order, the requests must equal the fixture's (as JSON),
// and the outcome must be the one it wants.
func TestPresets(t *testing.T) {
	files, _ := filepath.Glob("testdata/presets/*.json")
	if len(files) == 0 {
		t.Fatal("no preset fixtures")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var fx struct {
				Preset   string            `json:"preset"`
				NeMo     *guardrail.NeMo   `json:"nemo"`
				Phase    string            `json:"phase"`
				Texts    []string          `json:"texts"`
				Requests []json.RawMessage `json:"requests"`
				Answers  []json.RawMessage `json:"answers"`
				Want     struct {
					Verdict  guardrail.Verdict `json:"verdict"`
					Texts    []string          `json:"texts"`
					Findings []string          `json:"findings"`
				} `json:"want"`
			}
			if err := json.Unmarshal(b, &fx); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var got []json.RawMessage
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				n := len(got)
				got = append(got, body)
				mu.Unlock()
				if n >= len(fx.Answers) {
					http.Error(w, "no more answers", http.StatusInternalServerError)
					return
				}
				_, _ = w.Write(fx.Answers[n])
			}))
			defer srv.Close()
			s := newSet(t, map[string]guardrail.Spec{"v": {Kind: "generic", Preset: fx.Preset, NeMo: fx.NeMo, URL: srv.URL}})
			c := content(fx.Texts...)
			c.Phase = fx.Phase
			o := s.Run(context.Background(), c, nil)[0]
			if len(got) != len(fx.Requests) {
				t.Fatalf("%d requests, want %d", len(got), len(fx.Requests))
			}
			for i := range got {
				if !jsonEqual(got[i], fx.Requests[i]) {
					t.Errorf("request %d\n got %s\nwant %s", i, got[i], fx.Requests[i])
				}
			}
			var ids []string
			for _, f := range o.Findings {
				if f.Source != "guardrail:v" {
					t.Errorf("finding source %q", f.Source)
				}
				ids = append(ids, f.RuleID)
			}
			if o.Verdict != fx.Want.Verdict || !reflect.DeepEqual(o.Texts, fx.Want.Texts) || strings.Join(ids, ",") != strings.Join(fx.Want.Findings, ",") {
				t.Fatalf("outcome %+v, want %+v", o, fx.Want)
			}
		})
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestPresetMalformed: a vendor answer of the wrong shape is a failure under the fail
// mode, like a generic one.
func TestPresetMalformed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"unexpected":true}`)
	}))
	defer srv.Close()
	for _, p := range guardrail.Presets {
		spec := guardrail.Spec{Kind: "generic", Preset: p, URL: srv.URL}
		if p == guardrail.PresetNeMo {
			spec.NeMo = &guardrail.NeMo{Model: "m"}
		}
		s := newSet(t, map[string]guardrail.Spec{"v": spec})
		if o := s.Run(context.Background(), content("x"), nil)[0]; o.Failure != guardrail.FailureError || !o.Stops() {
			t.Errorf("%s: %+v", p, o)
		}
	}
	if err := (guardrail.Spec{Kind: "opa", Preset: "lakera", URL: "http://x"}).Validate(); err == nil {
		t.Error("a preset on an authorization guardrail was accepted")
	}
	for _, spec := range []guardrail.Spec{
		{Kind: "generic", Preset: "nemo", URL: "http://x"},                                                // no model
		{Kind: "generic", Preset: "lakera", URL: "http://x", NeMo: &guardrail.NeMo{Model: "m"}},           // nemo on another preset
		{Kind: "generic", Preset: "nemo", URL: "http://x", NeMo: &guardrail.NeMo{ConfigID: "self-check"}}, // still no model
	} {
		if err := spec.Validate(); err == nil {
			t.Errorf("%+v was accepted", spec)
		}
	}
}

// FuzzPresetAnswers: whatever a vendor's service answers, each preset's outcome is a
// failure (under the fail mode) or a verdict of a content guardrail (none, block,
// intervene) whose replacement texts, when it has some, are one per text sent; the
// service's bytes never panic the gateway.
func FuzzPresetAnswers(f *testing.F) {
	var answer atomic.Value
	answer.Store([]byte{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(answer.Load().([]byte))
	}))
	f.Cleanup(srv.Close)
	sets := map[string]*guardrail.Set{}
	for _, p := range guardrail.Presets {
		spec := guardrail.Spec{Kind: "generic", Preset: p, URL: srv.URL, Timeout: "10s", Breaker: &guardrail.Breaker{Failures: 1 << 30}}
		if p == guardrail.PresetNeMo {
			spec.NeMo = &guardrail.NeMo{Model: "m"}
		}
		s, err := guardrail.New(map[string]guardrail.Spec{"v": spec})
		if err != nil {
			f.Fatal(err)
		}
		sets[p] = s
	}
	files, _ := filepath.Glob("testdata/presets/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		var fx struct {
			Preset  string            `json:"preset"`
			Answers []json.RawMessage `json:"answers"`
		}
		_ = json.Unmarshal(b, &fx)
		for _, a := range fx.Answers {
			f.Add(uint8(slices.Index(guardrail.Presets, fx.Preset)), true, []byte(a), "Contact jane.doe@example.com")
		}
	}
	f.Add(uint8(2), true, []byte(`[{"entity_type":"X","start":0,"end":99}]`), "héllo wörld")
	f.Fuzz(func(t *testing.T, which uint8, post bool, body []byte, text string) {
		p := guardrail.Presets[int(which)%len(guardrail.Presets)]
		answer.Store(body)
		c := content(text, "a second text")
		if !post {
			c.Phase = "pre"
		}
		o := sets[p].Run(context.Background(), c, nil)[0]
		switch {
		case o.Failure != "":
		case o.Verdict == guardrail.Intervene:
			if len(o.Texts) != len(o.Sent) {
				t.Fatalf("%s: %d replacement texts for %d sent", p, len(o.Texts), len(o.Sent))
			}
		case o.Verdict == guardrail.None || o.Verdict == guardrail.Block:
			if o.Texts != nil {
				t.Fatalf("%s: texts with verdict %s", p, o.Verdict)
			}
		default:
			t.Fatalf("%s: verdict %q", p, o.Verdict)
		}
	})
}
