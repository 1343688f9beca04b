package otlplog

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/vocab"
)

// collector is an OTLP/HTTP logs endpoint that keeps what it receives.
type collector struct {
	mu   sync.Mutex
	logs []map[string]string // attributes plus "body" and "severity"
	auth []string            // each export's Authorization header
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req collogs.ExportLogsServiceRequest
	if r.URL.Path != "/v1/logs" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auth = append(c.auth, r.Header.Get("Authorization"))
	for _, rl := range req.ResourceLogs {
		svc := ""
		for _, a := range rl.Resource.GetAttributes() {
			if a.Key == "service.name" {
				svc = a.Value.GetStringValue()
			}
		}
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				m := map[string]string{"body": lr.Body.GetStringValue(), "severity": lr.SeverityText, "service": svc}
				for _, a := range lr.Attributes {
					m[a.Key] = a.Value.GetStringValue()
				}
				c.logs = append(c.logs, m)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
	w.Write(out)
}

// TestSinkExports proves each record reaches the collector as one log record whose
// body is the record's JSON and whose attributes name its event, action and replica.
func TestSinkExports(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	s, err := New(srv.URL, "mcpgate", "test")
	if err != nil {
		t.Fatal(err)
	}
	recs := []*audit.Record{
		{TS: "2026-11-29T10:00:00.000Z", EventID: "ev-1", ActionTaken: vocab.Pass, Tool: "read_file", Outcome: vocab.OutcomeOK, Replica: "gw1"},
		{TS: "2026-11-29T10:00:01.000Z", EventID: "ev-2", ActionTaken: vocab.Block, Tool: "read_file", Reason: vocab.ReasonFilterBlock, Replica: "gw1"},
	}
	for _, r := range recs {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.logs) != 2 {
		t.Fatalf("collector got %d log records, want 2", len(col.logs))
	}
	for i, l := range col.logs {
		r := recs[i]
		if l["mcpgate.event_id"] != r.EventID || l["mcpgate.action_taken"] != string(r.ActionTaken) ||
			l["mcpgate.replica"] != "gw1" || !strings.Contains(l["body"], `"event_id":"`+r.EventID+`"`) || l["service"] != "mcpgate" {
			t.Errorf("log %d: %v", i, l)
		}
	}
	if col.logs[1]["severity"] != "WARN" || col.logs[0]["severity"] != "INFO" {
		t.Errorf("severities %q %q, want INFO then WARN", col.logs[0]["severity"], col.logs[1]["severity"])
	}
}

func TestNewRejectsBadEndpoints(t *testing.T) {
	for _, e := range []string{"", "localhost:4318", "grpc://h:4317", "http://", "grpc://alice:s3cret@h:4317"} {
		_, err := New(e, "mcpgate", "test")
		if err == nil {
			t.Errorf("New(%q) succeeded", e)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("New(%q): the error holds the password: %v", e, err)
		}
	}
}

// TestUserinfoIsBasicAuth: an endpoint's user-info is the collector's credentials,
// sent as HTTP Basic authorization, so the password need not stand in a log line.
func TestUserinfoIsBasicAuth(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	s, err := New(strings.Replace(srv.URL, "http://", "http://alice:s3cret@", 1), "mcpgate", "test")
	if err != nil {
		t.Fatal(err)
	}
	s.Write(&audit.Record{EventID: "ev-1", ActionTaken: vocab.Pass})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	col.mu.Lock()
	defer col.mu.Unlock()
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	if len(col.auth) == 0 || col.auth[0] != want {
		t.Fatalf("Authorization %q, want %q", col.auth, want)
	}
}
