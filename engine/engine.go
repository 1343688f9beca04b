package engine

import (
	"fmt"
	"strings"
)

// MaxScanBytes is the default verdict scan cap: 1 MiB (docs/decisions.md#scan-cap).
const MaxScanBytes = 1 << 20

// Severity orders findings: None < Info < Low < Medium < High (docs/decisions.md#severities).
type Severity uint8

// Severities, weakest first.
const (
	SeverityNone Severity = iota
	SeverityInfo
	SeverityLow
	SeverityMedium
	SeverityHigh
)

var severityNames = [...]string{"NONE", "INFO", "LOW", "MEDIUM", "HIGH"}

// String returns the upper-case name used in audit records ("HIGH").
func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return fmt.Sprintf("Severity(%d)", s)
}

// MarshalText encodes the severity as its upper-case name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText accepts a severity name in any case ("high", "Info").
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSeverity reads a severity name in any case; it errors on anything else.
func ParseSeverity(name string) (Severity, error) {
	for i, n := range severityNames {
		if strings.EqualFold(n, name) {
			return Severity(i), nil
		}
	}
	return SeverityNone, fmt.Errorf("engine: unknown severity %q (want none, info, low, medium or high)", name)
}

// Verdict is the filter's decision: High blocks, Medium warns, Info and Low allow (docs/decisions.md#severities).
type Verdict uint8

// Verdicts, weakest first.
const (
	Allow Verdict = iota
	Warn
	Block
)

// String returns "allow", "warn" or "block", the audit record's decision values.
func (v Verdict) String() string {
	switch v {
	case Warn:
		return "warn"
	case Block:
		return "block"
	default:
		return "allow"
	}
}

// VerdictFor maps the highest severity to a verdict: High → Block, Medium → Warn, else Allow.
func VerdictFor(s Severity) Verdict {
	switch {
	case s >= SeverityHigh:
		return Block
	case s >= SeverityMedium:
		return Warn
	default:
		return Allow
	}
}

// Finding is one rule match. Pointer is an RFC 6901 JSON Pointer into the analysed
// document ("/content/0/text", "/structuredContent/user/email", "/path" for arguments;
// "" for plain text), and Start/End are byte offsets in that string. A finding never
// carries the matched value.
type Finding struct {
	RuleID   string   `json:"rule_id"`
	Severity Severity `json:"severity"`
	Entity   string   `json:"entity,omitempty"`
	Pointer  string   `json:"pointer"`
	Start    int      `json:"start"`
	End      int      `json:"end"`
	// InKey is true when the match lies in an object member's name rather than its
	// value; Pointer then names that member.
	InKey bool `json:"in_key,omitempty"`
	// Decoded names the encoding ("base64", "hex", "url") when the match lies in the
	// decoded form of an argument's encoded run; Start and End are then offsets in that
	// decoded text (docs/engine.md#decoded-arguments). Results are never decoded so.
	Decoded string `json:"decoded,omitempty"`
	// Source is "" for the built-in rules, "guardrail:<name>" for a finding an
	// outside content guardrail reported (docs/guardrails.md#findings).
	Source string `json:"source,omitempty"`
}

// Report is the result of one analysis. Verdict follows the highest severity.
// Truncated is true when part of the input lay past the scan cap.
type Report struct {
	Findings  []Finding
	Highest   Severity
	Verdict   Verdict
	Truncated bool
}

// RuleIDs returns the distinct rule ids of the findings, sorted.
func (r Report) RuleIDs() []string {
	ids := make([]string, 0, len(r.Findings))
	seen := make(map[string]bool, len(r.Findings))
	for _, f := range r.Findings {
		if !seen[f.RuleID] {
			seen[f.RuleID] = true
			ids = append(ids, f.RuleID)
		}
	}
	sortStrings(ids)
	return ids
}

// AddressesAsInfo lowers to Info each output_directive_to_model finding whose entity
// is EntityAddress (text addressed to the model that orders nothing harmful) and
// recomputes Highest and Verdict. It is for tool, prompt and resource definitions,
// which address the model by nature (docs/decisions.md#definitions-address-the-model).
func (r *Report) AddressesAsInfo() {
	lowered := false
	for i, f := range r.Findings {
		if f.RuleID == RuleDirectiveToModel && f.Entity == EntityAddress && f.Severity > SeverityInfo {
			r.Findings[i].Severity, lowered = SeverityInfo, true
		}
	}
	if !lowered {
		return
	}
	r.Highest = SeverityNone
	for _, f := range r.Findings {
		r.Highest = max(r.Highest, f.Severity)
	}
	r.Verdict = VerdictFor(r.Highest)
}

// Options configure an Analyzer. The zero value uses the defaults.
type Options struct {
	// MaxScanBytes caps how many bytes of text the verdict looks at (default 1 MiB).
	MaxScanBytes int
	// Severities overrides the default severity of a rule, by rule id.
	Severities map[string]Severity
}

// ErrUndecodable is returned (wrapped) when a result or arguments value is not valid JSON
// of the expected shape.
var ErrUndecodable = fmt.Errorf("engine: undecodable input")

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
