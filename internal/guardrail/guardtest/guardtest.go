// Package guardtest is a test-bed content guardrail speaking LiteLLM's Generic
// Guardrail API, for unit and end-to-end tests. It decides on markers in the texts
// it is sent:
//
//	GUARD:block     BLOCKED, blocked_reason "test guardrail blocked"
//	GUARD:redact    GUARDRAIL_INTERVENED: every "secret-" word becomes "[REDACTED]"
//	GUARD:escape    GUARDRAIL_INTERVENED: the text gains an OSC 52 escape (the
//	                gateway's rules and sanitizer must catch it)
//	GUARD:finding   NONE with one finding (rule_id "test_finding") on that text
//	GUARD:hang      no answer until the request is cancelled
//	GUARD:garbage   a body that is not JSON
//	GUARD:5xx       HTTP 503
//	GUARD:big       an answer over 1 MiB
//
// and NONE otherwise. A marker written GUARD:post-<marker> acts only on a result
// (mcp.phase "post"), so a call whose arguments carry it reaches the upstream. With
// Prefix set (say "SOFT:") the markers begin with it instead, so two services tell
// their markers apart. Every request it took is kept for the test to read.
package guardtest

import (
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/guardrail"
)

// Request is one request the service took.
type Request struct {
	Header http.Header
	Body   []byte
	// SignatureOK is whether the HMAC signature matched (false without a secret).
	SignatureOK bool
}

// Service is the test-bed guardrail; its zero value works without a secret.
type Service struct {
	// Secret, when set, is the HMAC secret the signature is checked against; a request
	// whose signature does not match is answered 401.
	Secret string
	// Prefix is the markers' prefix; "" means "GUARD:".
	Prefix string
	mu     sync.Mutex
	reqs   []Request
}

// Requests returns the requests taken so far.
func (s *Service) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

var secretWord = regexp.MustCompile(`secret-[A-Za-z0-9]+`)

// ServeHTTP answers one Generic Guardrail API request.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{Header: r.Header.Clone(), Body: body}
	if s.Secret != "" {
		at, _ := strconv.ParseInt(r.Header.Get(guardrail.HeaderTimestamp), 10, 64)
		_, want := guardrail.Sign([]byte(s.Secret), time.Unix(at, 0), body)
		req.SignatureOK = hmac.Equal([]byte(want), []byte(r.Header.Get(guardrail.HeaderSignature)))
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if s.Secret != "" && !req.SignatureOK {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var in struct {
		Texts []string `json:"texts"`
		MCP   struct {
			Phase string `json:"phase"`
		} `json:"mcp"`
	}
	if json.Unmarshal(body, &in) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	prefix := s.Prefix
	if prefix == "" {
		prefix = "GUARD:"
	}
	post := prefix + "post-"
	marks := make([]string, len(in.Texts)) // the texts as markers read them: GUARD:<marker>
	for i, t := range in.Texts {
		if in.MCP.Phase == "post" {
			t = strings.ReplaceAll(t, post, prefix)
		} else {
			t = strings.ReplaceAll(t, post, "")
		}
		if prefix != "GUARD:" {
			t = strings.ReplaceAll(strings.ReplaceAll(t, "GUARD:", ""), prefix, "GUARD:")
		}
		marks[i] = t
	}
	all := strings.Join(marks, "\n")
	w.Header().Set("Content-Type", "application/json")
	answer := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	switch {
	case strings.Contains(all, "GUARD:hang"):
		<-r.Context().Done()
	case strings.Contains(all, "GUARD:garbage"):
		_, _ = io.WriteString(w, "<html>not json")
	case strings.Contains(all, "GUARD:5xx"):
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	case strings.Contains(all, "GUARD:big"):
		answer(map[string]any{"action": "NONE", "pad": strings.Repeat("x", 1<<20)})
	case strings.Contains(all, "GUARD:block"):
		answer(map[string]any{"action": "BLOCKED", "blocked_reason": "test guardrail blocked"})
	case strings.Contains(all, "GUARD:redact") || strings.Contains(all, "GUARD:escape"):
		out := make([]string, len(in.Texts))
		for i, t := range in.Texts {
			out[i] = secretWord.ReplaceAllString(t, "[REDACTED]")
			if strings.Contains(marks[i], "GUARD:escape") {
				out[i] = t + " \x1b]52;c;c2VjcmV0\x07"
			}
		}
		answer(map[string]any{"action": "GUARDRAIL_INTERVENED", "texts": out})
	case strings.Contains(all, "GUARD:finding"):
		idx := 0
		for i, t := range marks {
			if strings.Contains(t, "GUARD:finding") {
				idx = i
			}
		}
		answer(map[string]any{"action": "NONE", "findings": []any{map[string]any{
			"rule_id": "test_finding", "severity": "high", "index": idx, "start": 0, "end": 5}}})
	default:
		answer(map[string]any{"action": "NONE"})
	}
}
