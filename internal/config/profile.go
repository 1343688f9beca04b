package config

import (
	"fmt"

	"github.com/mcpgate/mcpgate/engine"
)

// Profile names. Profiles (docs/policies.md#profiles, docs/decisions.md#profiles).
//
// A profile is a set of defaults, chosen once at start-up by `gateway run --profile`
// or "mcpgate": {"profile": ...} (the flag wins), and resolved into one bool that
// reaches every part that acts on it: gateway.Config.Strict, pipeline.Pipeline.Strict.
//
//   - "default" keeps the seeds' contract: Warn relays with a notice, PII and
//     secrets are Info, --filter-output is opt-in, argument checks only record.
//   - "strict" is what a security team deploys: it enforces (withholds, blocks,
//     refuses) where the default records or warns. StrictChanges lists each
//     difference; `mcpgate rules --profile strict` prints it.
//
// Every explicit flag overrides the profile: `--profile strict --filter-output=false`
// filters nothing, `--profile strict --pins-mode warn` only warns on a changed tool.
// A feature that enforces only in strict reads Strict where it decides, and adds its
// line to StrictChanges, so the docs and `mcpgate rules --profile strict` stay true.
const (
	ProfileDefault = "default"
	ProfileStrict  = "strict"
)

// Change is one setting strict changes: what the default does and what strict does.
// Flag names the flag that overrides it, "" when none does.
type Change struct {
	Setting string `json:"setting"`
	Default string `json:"default"`
	Strict  string `json:"strict"`
	Flag    string `json:"flag,omitempty"`
}

// StrictChanges is every difference between the two profiles, in the order
// `mcpgate rules --profile strict` prints them.
var StrictChanges = []Change{
	{Setting: "output filter", Default: "off: findings only recorded", Strict: "on: High blocks, Medium warns", Flag: "--filter-output"},
	{Setting: "injection finding in a result", Default: "recorded", Strict: "High blocks, Medium warns", Flag: "--filter-output"},
	{Setting: "order to the model in a tool description (output_directive_to_model, output_secrecy_order, output_system_prompt_request, tool_split_orders, ...; docs/engine.md)", Default: "recorded", Strict: "tool withheld from the listing, calls to it refused", Flag: "--filter-output"},
	{Setting: "changed tool definition", Default: "warn", Strict: "block until mcpgate pins approve", Flag: "--pins-mode"},
	{Setting: "server vetted at start-up with a block-level finding (docs/vet.md)", Default: "logged, started", Strict: "not started (the others are); plaintext transport and look-alike names are block-level", Flag: "--vet-mode"},
	{Setting: "shipped redaction policies", Default: "only --policies' files", Strict: "built in, before --policies' files"},
	{Setting: "arguments against the listed schema", Default: "recorded (argument_schema)", Strict: "refused: -32602 argument_schema"},
	{Setting: "command, host and URL arguments", Default: "recorded (argument_shell)", Strict: "chaining refused: -32602 argument_shell"},
	{Setting: "path arguments", Default: "recorded (argument_path_*)", Strict: "outside the roots refused: -32602 argument_path"},
	{Setting: "URL arguments aimed at cloud metadata or link-local addresses", Default: "recorded (argument_url_internal)", Strict: "refused: -32602 argument_url; loopback and private ones only recorded"},
	{Setting: "secret in motion (a value a result showed, sent on in a later call's arguments)", Default: "recorded (reason secret_in_motion)", Strict: "refused", Flag: "--refuse-secrets-in-motion"},
	{Setting: "order in a result to act through another server's named tool (output_tool_transfer)", Default: "Medium: warns where the filter is on", Strict: "High: blocks", Flag: `"rules": {"output_tool_transfer": "medium"} in --config`},
}

// StrictSeverities are the engine rules whose severity the strict profile raises
// (StrictChanges says each); the configuration's "rules" overrides still win.
var StrictSeverities = map[string]engine.Severity{engine.RuleToolTransfer: engine.SeverityHigh}

// ParseProfile checks a profile name; "" is the default.
func ParseProfile(name string) (string, error) {
	switch name {
	case "", ProfileDefault:
		return ProfileDefault, nil
	case ProfileStrict:
		return ProfileStrict, nil
	}
	return "", fmt.Errorf("profile %q: want default or strict", name)
}

// ProfileName resolves the profile: flag when it is not "", else the file's
// "profile", else default. The error names the flag or the key at fault.
func (c *Config) ProfileName(flag string) (string, error) {
	if flag != "" {
		p, err := ParseProfile(flag)
		if err != nil {
			return "", fmt.Errorf("--%w", err)
		}
		return p, nil
	}
	p, err := ParseProfile(c.Gate.Profile)
	if err != nil {
		return "", fmt.Errorf(`"mcpgate.profile": %w`, err)
	}
	return p, nil
}
