package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

var update = flag.Bool("update", false, "rewrite the reply and record sections of testdata/golden/*.txtar")

// archive is a txtar archive: a comment, then files each introduced by a
// "-- name --" line (the format of golang.org/x/tools/txtar, which this module does
// not otherwise need).
type archive struct {
	comment string
	names   []string
	files   map[string]string
}

func parseArchive(b string) *archive {
	a := &archive{files: map[string]string{}}
	cur := ""
	var buf strings.Builder
	flush := func() {
		if cur == "" {
			a.comment = buf.String()
		} else {
			a.names = append(a.names, cur)
			a.files[cur] = buf.String()
		}
		buf.Reset()
	}
	for _, line := range strings.SplitAfter(b, "\n") {
		if t := strings.TrimRight(line, "\n"); strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			cur = t[3 : len(t)-3]
			continue
		}
		buf.WriteString(line)
	}
	flush()
	return a
}

func (a *archive) set(name, content string) {
	if _, ok := a.files[name]; !ok {
		a.names = append(a.names, name)
	}
	a.files[name] = content
}

func (a *archive) format() string {
	var b strings.Builder
	b.WriteString(a.comment)
	for _, n := range a.names {
		fmt.Fprintf(&b, "-- %s --\n%s", n, a.files[n])
	}
	return b.String()
}

// TestGolden runs each testdata/golden/*.txtar through Handle: the comment sets the
// flags ("filter: on|off", "fail-mode: open|closed"), policies/*.js are the policy
// set, request.json the tools/call params, upstream.json the upstream's answer
// ({"result": …}, {"error": …} or {"fail": "unavailable"|"timeout"|"cancelled"}).
// reply.json and record.json are what the client gets and the audit record, with
// the event id, the time stamp and the timings replaced by fixed values. Refresh
// them with go test -update (make golden) and review the diff.
func TestGolden(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	if len(paths) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a := parseArchive(string(raw))
			filter := !strings.Contains(a.comment, "filter: off")
			failClosed := strings.Contains(a.comment, "fail-mode: closed")
			policies := map[string]string{}
			for _, n := range a.names {
				if strings.HasPrefix(n, "policies/") {
					policies[strings.TrimPrefix(n, "policies/")] = a.files[n]
				}
			}
			p, rec := newPipeline(t, policies, filter, failClosed)
			c := call(`{}`)
			c.Params = json.RawMessage(strings.TrimSpace(a.files["request.json"]))
			reply := p.Handle(context.Background(), c, goldenUpstream(t, a.files["upstream.json"]))
			if len(rec.recs) != 1 {
				t.Fatalf("%d records", len(rec.recs))
			}
			eventID := rec.recs[0].EventID
			gotReply := normalize(t, replyJSON(reply), eventID)
			gotRecord := normalize(t, recordJSON(t, rec.recs[0]), eventID)
			if *update {
				a.set("reply.json", gotReply)
				a.set("record.json", gotRecord)
				if err := os.WriteFile(path, []byte(a.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for name, got := range map[string]string{"reply.json": gotReply, "record.json": gotRecord} {
				if want := a.files[name]; got != want {
					t.Errorf("%s differs (refresh with make golden):\ngot:\n%s\nwant:\n%s", name, got, want)
				}
			}
		})
	}
}

func goldenUpstream(t *testing.T, spec string) Upstream {
	var u struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
		Fail   string          `json:"fail"`
	}
	if err := json.Unmarshal([]byte(spec), &u); err != nil {
		t.Fatalf("upstream.json: %v", err)
	}
	return func(ctx context.Context, params json.RawMessage) (*jsonrpc.Message, error) {
		switch u.Fail {
		case "unavailable":
			return nil, ErrUnavailable
		case "timeout":
			return nil, ErrTimeout
		case "cancelled":
			return nil, ErrCancelled
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(spec)); err != nil {
			t.Errorf("upstream.json: %v", err)
		}
		raw := `{"jsonrpc":"2.0","id":1,` + strings.TrimPrefix(buf.String(), "{")
		return &jsonrpc.Message{Raw: []byte(raw), Kind: jsonrpc.KindResponse, ID: json.RawMessage("1"), Result: u.Result, Error: u.Error}, nil
	}
}

// replyJSON shows a Reply as JSON: which of its forms it took, and the bytes.
func replyJSON(r Reply) string {
	m := map[string]any{}
	switch {
	case r.NoReply:
		m["no_reply"] = true
	case r.Original != nil:
		m["original"] = json.RawMessage(r.Original)
	case r.Error != nil:
		m["error"] = r.Error
	default:
		m["result"] = r.Result
	}
	return marshalNoEscape(m)
}

// marshalNoEscape is json.Marshal without the HTML escapes of <, > and &.
func marshalNoEscape(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

// recordJSON is the record with its volatile fields fixed: ts, elapsed_ms and every
// stage_ms value.
func recordJSON(t *testing.T, r any) string {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["ts"], m["elapsed_ms"] = "<ts>", 0
	if st, ok := m["stage_ms"].(map[string]any); ok {
		for k := range st {
			st[k] = 0
		}
	}
	return marshalNoEscape(m)
}

// normalize puts the fixed event id in and indents the JSON.
func normalize(t *testing.T, s, eventID string) string {
	s = strings.ReplaceAll(s, eventID, "<event_id>")
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return buf.String() + "\n"
}
