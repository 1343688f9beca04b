package guardrail

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// Set is the configured guardrails. A nil *Set has none; its methods are safe for
// concurrent use.
type Set struct {
	guards []*guard // by name
	now    func() time.Time
	// replay, when set, holds recorded outcomes by phase: Run returns them and calls
	// no service (Replay).
	replay map[string][]Outcome
}

type guard struct {
	name   string
	c      *compiled
	client *http.Client
	br     breaker
	cache  *verdictCache // nil when no method has a cacheTTL
}

// New builds the guardrails of specs, reading their TLS files. No specs: nil, nil.
// Errors name the guardrail and the problem.
func New(specs map[string]Spec) (*Set, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	s := &Set{now: time.Now}
	var errs []error
	names := make([]string, 0, len(specs))
	for name := range specs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c, err := specs[name].compile(true)
		if err != nil {
			errs = append(errs, fmt.Errorf("guardrail %q: %w", name, err))
			continue
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = c.tls
		tr.MaxIdleConnsPerHost = 16
		g := &guard{name: name, c: c, client: &http.Client{
			Transport: tr,
			// A redirect would carry the body (and its signature) elsewhere: never followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
		for _, ttl := range c.cacheTTL {
			if ttl > 0 {
				g.cache = newVerdictCache(c.cacheMax)
				break
			}
		}
		s.guards = append(s.guards, g)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// Names lists the guardrails as "<name> (<kind>, fail <mode>)", for the start-up log.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.guards))
	for _, g := range s.guards {
		mode := FailOpen
		if g.c.failClosed {
			mode = FailClosed
		}
		out = append(out, g.name+" ("+g.c.kind+", fail "+mode+")")
	}
	return out
}

// Text is one string leaf sent to a content guardrail: its JSON pointer in the
// document the built-in rules read (the arguments, or the result) and its value.
type Text struct {
	Pointer string
	Value   string
}

// Content is what a content guardrail is asked about.
type Content struct {
	Method          string // the MCP method
	Server, Tool    string // the configured server name and the tool as the client sees it
	Phase           string // pre (a request's arguments) or post (a result)
	ProtocolVersion string
	EventID         string // the record's event_id, sent as litellm_call_id
	User            ctxapi.User
	Texts           []Text
	Findings        []engine.Finding // the built-in rules' findings over the same document
}

// Access is what an authorization guardrail is asked about.
type Access struct {
	// Phase is pre, or pre_rewritten for arguments a pre policy rewrote; it keys a
	// replayed outcome and is not sent.
	Phase  string
	Method string
	// Server is the configured server name; Tool the tool, the prompt's name or the
	// resource's URI, as the client sees it.
	Server, Tool string
	// Resource is the AuthZEN resource type: tool (""), prompt or resource.
	Resource        string
	ProtocolVersion string
	EventID         string
	User            ctxapi.User
	Arguments       json.RawMessage // the arguments the upstream would get (a prompt's too)
}

// Resource types of an authorization request.
const (
	ResourceTool     = "tool"
	ResourcePrompt   = "prompt"
	ResourceResource = "resource"
)

// Verdict is a guardrail's answer.
type Verdict string

// Verdicts.
const (
	None      Verdict = "none"      // content: NONE
	Block     Verdict = "block"     // content: BLOCKED
	Intervene Verdict = "intervene" // content: GUARDRAIL_INTERVENED
	Allow     Verdict = "allow"     // authorization: allowed
	Deny      Verdict = "deny"      // authorization: denied
)

// Failure says why a guardrail gave no verdict; the record carries it.
type Failure string

// Failures.
const (
	FailureTimeout Failure = "guardrail_timeout"
	FailureError   Failure = "guardrail_error"
)

// Outcome is one guardrail's part in a phase.
// Its JSON form is what --capture stores and a fixture stubs (Recorded).
type Outcome struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Verdict is the answer; "" when Failure is set.
	Verdict Verdict `json:"verdict,omitempty"`
	// Failure is set when no verdict came (FailureTimeout, FailureError); Detail says
	// which: timeout, status_<code>, malformed, oversized, transport, circuit_open,
	// truncated (texts past maxBytes were not sent, and the fail mode is closed).
	Failure    Failure `json:"failure,omitempty"`
	Detail     string  `json:"detail,omitempty"`
	FailClosed bool    `json:"fail_closed,omitempty"`
	// Reason is a BLOCKED answer's blocked_reason: for the client only, never a record.
	Reason string `json:"blocked_reason,omitempty"`
	// Sent are the indexes into Content.Texts that were sent; Texts are the
	// replacements of an Intervene, Texts[i] for Content.Texts[Sent[i]].
	Sent  []int    `json:"sent,omitempty"`
	Texts []string `json:"texts,omitempty"`
	// Findings are the answer's findings, Source "guardrail:<name>".
	Findings []engine.Finding `json:"findings,omitempty"`
	// Cached says the verdict came from the verdict cache: the service was not called
	// (docs/guardrails.md#verdict-cache). A cached BLOCKED has no Reason.
	Cached  bool          `json:"cached,omitempty"`
	Elapsed time.Duration `json:"-"`
}

// Recorded is one outcome with the phase it was given in (pre, pre_rewritten,
// post): an entry of a capture (gateway run --capture) or a fixture's stub.
type Recorded struct {
	Phase string `json:"phase"`
	Outcome
}

// Replay returns a Set that calls no service: Run gives back the recorded outcomes
// of the phase asked (a content phase's generic ones, an authorization's others), so
// mcpgate replay and mcpgate test reproduce a decision offline. A phase with none
// recorded gets none. Each finding's source is its guardrail's, as live: a fixture
// need not write it, nor can it pass one off as a built-in finding. No records: nil.
func Replay(recorded []Recorded) *Set {
	if len(recorded) == 0 {
		return nil
	}
	s := &Set{now: time.Now, replay: map[string][]Outcome{}}
	for _, r := range recorded {
		o := r.Outcome
		if len(o.Findings) > 0 {
			o.Findings = slices.Clone(o.Findings)
			for i := range o.Findings {
				o.Findings[i].Source = Source(o.Name)
			}
		}
		s.replay[r.Phase] = append(s.replay[r.Phase], o)
	}
	return s
}

func (s *Set) replayed(content *Content, access *Access) []Outcome {
	var out []Outcome
	if content != nil {
		for _, o := range s.replay[content.Phase] {
			if o.Kind == KindGeneric {
				out = append(out, o)
			}
		}
	}
	if access != nil {
		phase := access.Phase
		if phase == "" {
			phase = "pre"
		}
		for _, o := range s.replay[phase] {
			if o.Kind != KindGeneric {
				out = append(out, o)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Stops reports whether the outcome stops the message: a block, a deny, or a
// failure under fail mode closed.
func (o Outcome) Stops() bool {
	return o.Verdict == Block || o.Verdict == Deny || (o.Failure != "" && o.FailClosed)
}

// Source is the ctx.findings source of a guardrail's findings.
func Source(name string) string { return "guardrail:" + name }

// Content reports whether a content guardrail takes method.
func (s *Set) Content(method string) bool { return s.any(method, false) }

// Authorizes reports whether an authorization guardrail takes method.
func (s *Set) Authorizes(method string) bool { return s.any(method, true) }

func (s *Set) any(method string, authz bool) bool {
	if s == nil {
		return false
	}
	if s.replay != nil {
		for _, outs := range s.replay {
			for _, o := range outs {
				if (o.Kind != KindGeneric) == authz && method == methods.ToolsCall {
					return true
				}
			}
		}
		return false
	}
	for _, g := range s.guards {
		if g.c.kind != KindGeneric == authz && slices.Contains(g.c.methods, method) {
			return true
		}
	}
	return false
}

// FailsClosed reports whether a content guardrail that takes method has fail mode
// closed: a message it could not judge is withheld.
func (s *Set) FailsClosed(method string) bool {
	if s == nil || s.replay != nil {
		return false
	}
	for _, g := range s.guards {
		if g.c.kind == KindGeneric && g.c.failClosed && slices.Contains(g.c.methods, method) {
			return true
		}
	}
	return false
}

// Run asks, in parallel and within one deadline (the longest timeout among them),
// every content guardrail that takes content.Method about content (when not nil) and
// every authorization guardrail that takes access.Method about access (when not nil).
// The outcomes come in guardrail name order. If ctx ends first the outcomes say
// timeout; the caller tells a cancellation by ctx.Err().
func (s *Set) Run(ctx context.Context, content *Content, access *Access) []Outcome {
	if s == nil {
		return nil
	}
	if s.replay != nil {
		return s.replayed(content, access)
	}
	var run []*guard
	var longest time.Duration
	for _, g := range s.guards {
		if (g.c.kind == KindGeneric && content != nil && slices.Contains(g.c.methods, content.Method)) ||
			(g.c.kind != KindGeneric && access != nil && slices.Contains(g.c.methods, access.Method)) {
			run = append(run, g)
			longest = max(longest, g.c.timeout)
		}
	}
	if len(run) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, longest)
	defer cancel()
	out := make([]Outcome, len(run))
	var wg sync.WaitGroup
	for i, g := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			if g.c.kind == KindGeneric {
				out[i] = g.judge(ctx, s.now, content)
			} else {
				out[i] = g.authorize(ctx, s.now, access)
			}
			out[i].Name, out[i].Kind, out[i].FailClosed = g.name, g.c.kind, g.c.failClosed
			out[i].Elapsed = time.Since(start)
		}()
	}
	wg.Wait()
	return out
}

// failed is an Outcome with no verdict.
func failed(f Failure, detail string) Outcome { return Outcome{Failure: f, Detail: detail} }

// genericRequest is the LiteLLM Generic Guardrail API request, plus the mcp member a
// LiteLLM service ignores.
type genericRequest struct {
	Texts         []string    `json:"texts"`
	InputType     string      `json:"input_type"` // request or response
	LitellmCallID string      `json:"litellm_call_id"`
	RequestData   requestData `json:"request_data"`
	MCP           mcpContext  `json:"mcp"`
}

// requestData is the caller, in LiteLLM's names: never a token or its hash.
type requestData struct {
	UserID string `json:"user_api_key_user_id,omitempty"`
	Alias  string `json:"user_api_key_alias,omitempty"` // the client id (callerId)
}

type mcpContext struct {
	Method          string        `json:"method"`
	Server          string        `json:"server"`
	Tool            string        `json:"tool,omitempty"`
	Phase           string        `json:"phase"`
	ProtocolVersion string        `json:"protocol_version,omitempty"`
	Pointers        []string      `json:"pointers"`
	Findings        []wireFinding `json:"findings"`
	Truncated       bool          `json:"truncated,omitempty"`
}

type wireFinding struct {
	RuleID   string `json:"rule_id"`
	Severity string `json:"severity"`
	Entity   string `json:"entity,omitempty"`
	Pointer  string `json:"pointer"`
	Start    int    `json:"start"`
	End      int    `json:"end"`
}

// genericAnswer is the Generic Guardrail API answer, plus the optional findings.
type genericAnswer struct {
	Action        string          `json:"action"`
	BlockedReason string          `json:"blocked_reason"`
	Texts         []string        `json:"texts"`
	Findings      []answerFinding `json:"findings"`
}

// answerFinding is one finding of an answer: index names the text it lies in.
type answerFinding struct {
	RuleID   string `json:"rule_id"`
	Type     string `json:"type"`
	Severity string `json:"severity"`
	Entity   string `json:"entity"`
	Index    *int   `json:"index"`
	Start    int    `json:"start"`
	End      int    `json:"end"`
}

func (g *guard) content(ctx context.Context, now func() time.Time, c *Content) Outcome {
	req := genericRequest{InputType: "request", LitellmCallID: c.EventID,
		RequestData: requestData{UserID: c.User.UserID, Alias: c.User.CallerID},
		MCP: mcpContext{Method: c.Method, Server: c.Server, Tool: c.Tool, Phase: c.Phase, ProtocolVersion: c.ProtocolVersion,
			Pointers: []string{}, Findings: make([]wireFinding, 0, len(c.Findings))}}
	if c.Phase == "post" {
		req.InputType = "response"
	}
	req.Texts = []string{}
	var sent []int
	budget := g.c.maxBytes
	for i, t := range c.Texts {
		if len(t.Value) > budget {
			req.MCP.Truncated = true
			continue
		}
		budget -= len(t.Value)
		sent = append(sent, i)
		req.Texts = append(req.Texts, t.Value)
		req.MCP.Pointers = append(req.MCP.Pointers, t.Pointer)
	}
	if req.MCP.Truncated && g.c.failClosed {
		return failed(FailureError, "truncated")
	}
	if g.c.preset != "" {
		return g.presetContent(ctx, now, c, req.Texts, sent)
	}
	for _, f := range c.Findings {
		req.MCP.Findings = append(req.MCP.Findings, wireFinding{RuleID: f.RuleID, Severity: f.Severity.String(),
			Entity: f.Entity, Pointer: f.Pointer, Start: f.Start, End: f.End})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return failed(FailureError, "malformed")
	}
	raw, o := g.post(ctx, now, body)
	if o != nil {
		return *o
	}
	var ans genericAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		g.br.record(false, now(), g.c)
		return failed(FailureError, "malformed")
	}
	out := Outcome{Sent: sent}
	switch ans.Action {
	case "NONE":
		out.Verdict = None
	case "BLOCKED":
		out.Verdict, out.Reason = Block, ans.BlockedReason
	case "GUARDRAIL_INTERVENED":
		if len(ans.Texts) != len(sent) {
			g.br.record(false, now(), g.c)
			return failed(FailureError, "malformed")
		}
		out.Verdict, out.Texts = Intervene, ans.Texts
	default:
		g.br.record(false, now(), g.c)
		return failed(FailureError, "malformed")
	}
	g.br.record(true, now(), g.c)
	for _, f := range ans.Findings {
		out.Findings = append(out.Findings, g.finding(f, c, sent))
	}
	return out
}

// maxRuleID bounds a finding's rule_id as it reaches ctx.findings.
const maxRuleID = 64

// finding maps an answer's finding onto ctx.findings: Source names the guardrail, the
// pointer is the text's, offsets are clamped into it, and an unknown severity reads
// as info.
func (g *guard) finding(f answerFinding, c *Content, sent []int) engine.Finding {
	id := f.RuleID
	if id == "" {
		id = f.Type
	}
	id = engine.Sanitize(id)
	if len(id) > maxRuleID {
		id = id[:maxRuleID]
	}
	if id == "" {
		id = "guardrail_finding"
	}
	sev, err := engine.ParseSeverity(f.Severity)
	if err != nil || sev == engine.SeverityNone {
		sev = engine.SeverityInfo
	}
	out := engine.Finding{RuleID: id, Severity: sev, Source: Source(g.name)}
	if len(f.Entity) <= maxRuleID {
		out.Entity = engine.Sanitize(f.Entity)
	}
	if f.Index != nil && *f.Index >= 0 && *f.Index < len(sent) {
		t := c.Texts[sent[*f.Index]]
		out.Pointer = t.Pointer
		out.Start = min(max(f.Start, 0), len(t.Value))
		out.End = min(max(f.End, out.Start), len(t.Value))
	}
	return out
}

// accessRequest is an AuthZEN 1.0 Access Evaluation request (§6.1); OPA gets it as
// its input.
type accessRequest struct {
	Subject  entity         `json:"subject"`
	Action   action         `json:"action"`
	Resource entity         `json:"resource"`
	Context  map[string]any `json:"context"`
}

type entity struct {
	Type       string         `json:"type"`
	ID         string         `json:"id"`
	Properties map[string]any `json:"properties,omitempty"`
}

type action struct {
	Name string `json:"name"`
}

func (g *guard) authorize(ctx context.Context, now func() time.Time, a *Access) Outcome {
	req := accessRequest{
		Subject: entity{Type: "user", ID: a.User.UserID, Properties: map[string]any{
			"client_id": a.User.CallerID, "caller_class": a.User.CallerClass,
			"roles": nonNil(a.User.Roles), "scopes": nonNil(a.User.Scopes)}},
		Action:   action{Name: a.Method},
		Resource: entity{Type: cmp.Or(a.Resource, ResourceTool), ID: a.Tool, Properties: map[string]any{"server": a.Server}},
		Context:  map[string]any{"event_id": a.EventID},
	}
	if a.ProtocolVersion != "" {
		req.Context["protocol_version"] = a.ProtocolVersion
	}
	var args any = map[string]any{}
	if len(a.Arguments) > 0 {
		dec := json.NewDecoder(bytes.NewReader(a.Arguments))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil || args == nil {
			args = map[string]any{}
		}
	}
	if g.c.values {
		req.Context["arguments"] = args
	} else {
		req.Context["arguments"] = Shape(args)
	}
	var body []byte
	var err error
	if g.c.kind == KindOPA {
		body, err = json.Marshal(map[string]any{"input": req})
	} else {
		body, err = json.Marshal(req)
	}
	if err != nil {
		return failed(FailureError, "malformed")
	}
	raw, o := g.post(ctx, now, body)
	if o != nil {
		return *o
	}
	allowed, ok := decision(g.c.kind, raw)
	g.br.record(ok, now(), g.c)
	if !ok {
		return failed(FailureError, "malformed")
	}
	if allowed {
		return Outcome{Verdict: Allow}
	}
	return Outcome{Verdict: Deny}
}

// decision reads an AuthZEN answer ({"decision": bool}) or an OPA one ({"result":
// bool} or {"result": {"allow": bool}}); ok is false for anything else, including
// OPA's undefined decision ({}).
func decision(kind string, raw []byte) (allowed, ok bool) {
	var ans struct {
		Decision *bool           `json:"decision"`
		Result   json.RawMessage `json:"result"`
	}
	if json.Unmarshal(raw, &ans) != nil {
		return false, false
	}
	if kind == KindAuthZEN {
		if ans.Decision == nil {
			return false, false
		}
		return *ans.Decision, true
	}
	var b bool
	if json.Unmarshal(ans.Result, &b) == nil && len(ans.Result) > 0 && string(ans.Result) != "null" {
		return b, true
	}
	var obj struct {
		Allow *bool `json:"allow"`
	}
	if json.Unmarshal(ans.Result, &obj) == nil && obj.Allow != nil {
		return *obj.Allow, true
	}
	return false, false
}

// Shape is the arguments' shape: objects keep their member names, every other value
// becomes its JSON type's name (string, number, boolean, null, array).
func Shape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Shape(e)
		}
		return m
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// post sends body and returns the answer's bytes, or the failure outcome. Only the
// configured headers go out: never the caller's.
func (g *guard) post(ctx context.Context, now func() time.Time, body []byte) ([]byte, *Outcome) {
	if !g.br.allow(now()) {
		o := failed(FailureError, "circuit_open")
		return nil, &o
	}
	fail := func(f Failure, detail string) ([]byte, *Outcome) {
		g.br.record(false, now(), g.c)
		o := failed(f, detail)
		return nil, &o
	}
	ctx, cancel := context.WithTimeout(ctx, g.c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.c.url, bytes.NewReader(body))
	if err != nil {
		return fail(FailureError, "transport")
	}
	for k, v := range g.c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "mcpgate-guardrail")
	if g.c.secret != nil {
		ts, sig := Sign(g.c.secret, now(), body)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, sig)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		if isTimeout(ctx, err) {
			return fail(FailureTimeout, "timeout")
		}
		return fail(FailureError, "transport")
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	switch {
	case err != nil && isTimeout(ctx, err):
		return fail(FailureTimeout, "timeout")
	case err != nil:
		return fail(FailureError, "transport")
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return fail(FailureError, "status_"+strconv.Itoa(resp.StatusCode))
	case len(raw) > MaxAnswerBytes:
		return fail(FailureError, "oversized")
	}
	return raw, nil
}

func isTimeout(ctx context.Context, err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// Headers of a signed request.
const (
	HeaderTimestamp = "X-Mcpgate-Timestamp"
	HeaderSignature = "X-Mcpgate-Signature"
)

// Sign returns the timestamp header (Unix seconds) and the signature header
// ("sha256=" and the hex of HMAC-SHA256(secret, timestamp "." body)).
func Sign(secret []byte, at time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return timestamp, "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// breaker stops calling a failing service: after failures consecutive failures it
// opens for cooldown; the first call after that is a trial, and one failure of the
// trial opens it again.
type breaker struct {
	mu        sync.Mutex
	fails     int
	openUntil time.Time
	halfOpen  bool
}

func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !now.Before(b.openUntil)
}

func (b *breaker) record(ok bool, now time.Time, c *compiled) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok {
		b.fails, b.halfOpen, b.openUntil = 0, false, time.Time{}
		return
	}
	if !b.openUntil.IsZero() && !now.Before(b.openUntil) {
		b.halfOpen = true // the cooldown is over: this was the trial
	}
	b.fails++
	if b.fails >= c.failures || b.halfOpen {
		b.openUntil, b.fails, b.halfOpen = now.Add(c.cooldown), 0, false
	}
}
