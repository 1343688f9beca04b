package engine

// STUB: the full analyzer lands with issue 3. Signatures here are the contract the
// pipeline and the gate build on; keep them.

// Analyzer runs the built-in rules. It is safe for concurrent use.
type Analyzer struct {
	opts Options
}

// New returns an Analyzer. It errors when Options.Severities names an unknown rule id.
func New(opts Options) (*Analyzer, error) {
	if opts.MaxScanBytes <= 0 {
		opts.MaxScanBytes = MaxScanBytes
	}
	return &Analyzer{opts: opts}, nil
}

// AnalyzeResult scans every text-bearing part of an MCP CallToolResult (JSON object).
// Pointers are relative to the result object. It errors (wrapping ErrUndecodable) when
// result is not a JSON object.
func (a *Analyzer) AnalyzeResult(result []byte) (Report, error) {
	if _, err := decodeObject(result); err != nil {
		return Report{}, err
	}
	return Report{}, nil
}

// AnalyzeArguments scans the string leaves (and keys) of tools/call arguments (a JSON
// object, or null). Pointers are relative to the arguments object.
func (a *Analyzer) AnalyzeArguments(args []byte) (Report, error) {
	return Report{}, nil
}

// AnalyzeText scans one plain text; finding pointers are "".
func (a *Analyzer) AnalyzeText(text string) Report {
	return Report{}
}

// Sanitize removes what the Warn path strips (seed 000, "Warn behavior"): escape
// sequences, bare CR, C0 controls but tab and LF, DEL, and zero-width characters.
// It is idempotent and always returns valid UTF-8.
func Sanitize(s string) string { return s }

// SanitizeResult applies Sanitize to every text-bearing string of a CallToolResult and
// returns the rewritten JSON; image and audio data are never altered.
func SanitizeResult(result []byte) ([]byte, error) {
	if _, err := decodeObject(result); err != nil {
		return nil, err
	}
	return result, nil
}

// Strategy says how Redact replaces a detected value.
type Strategy string

// Redaction strategies (issue 4): a typed placeholder, keep-last-4, or a short hash.
const (
	StrategyRedact Strategy = "redact" // "[REDACTED:EMAIL]"
	StrategyMask   Strategy = "mask"   // "************1234"
	StrategyHash   Strategy = "hash"   // "[HASH:EMAIL:1a2b3c4d]"
)

// Redact replaces every PII or secret value in s whose entity kind or rule id is in
// kinds (all PII and secret kinds when kinds is empty), and returns the new text and
// the number of replacements.
func (a *Analyzer) Redact(s string, strategy Strategy, kinds []string) (string, int) {
	return s, 0
}

// Rule describes one built-in rule: a stable snake_case id, its family, its default
// severity and a one-line explanation.
type Rule struct {
	ID       string   `json:"id"`
	Family   string   `json:"family"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
}

// Rules lists every built-in rule, sorted by id.
func Rules() []Rule { return nil }
