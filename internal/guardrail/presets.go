package guardrail

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Presets are thin mappings of a content guardrail onto a vendor's own API; the
// fail modes, timeout, maxBytes, signature and breaker are the generic ones.
const (
	// PresetLakera: Lakera Guard v2, POST /v2/guard {"messages": [{role, content}],
	// "breakdown": true} → {"flagged": bool, "breakdown": [{detector_type, detected}]}.
	// flagged blocks; each detected detector is a finding.
	PresetLakera = "lakera"
	// PresetAzurePromptShields: Azure AI Content Safety Prompt Shields, POST
	// .../contentsafety/text:shieldPrompt?api-version=2024-09-01 {"userPrompt",
	// "documents"} → {"userPromptAnalysis": {"attackDetected"}, "documentsAnalysis":
	// [{"attackDetected"}]}. Arguments go as the userPrompt; a result's texts as
	// documents, the member built for third-party content. An attack blocks.
	PresetAzurePromptShields = "azure-prompt-shields"
	// PresetPresidio: Presidio Analyzer, POST /analyze {"text", "language": "en"} per
	// text → [{entity_type, start, end, score}] (offsets in code points). Each span
	// is replaced by [REDACTED:<entity_type>] (an intervention) and is a finding.
	PresetPresidio = "presidio"
	// PresetNeMo: NVIDIA NeMo Guardrails' server, POST /v1/checks {"model",
	// "messages": [{role, content}], "guardrails": {"config_id"}} per text, the role
	// user for arguments (input rails) and assistant for a result (output rails) →
	// {"status": "passed" | "modified" | "blocked", "content", "rail"}. blocked blocks
	// with the finding nemo_<rail>; modified replaces the text with content.
	PresetNeMo = "nemo"
)

// Presets lists the preset names.
var Presets = []string{PresetLakera, PresetAzurePromptShields, PresetPresidio, PresetNeMo}

func (g *guard) presetContent(ctx context.Context, now func() time.Time, c *Content, texts []string, sent []int) Outcome {
	if len(texts) == 0 {
		return Outcome{Verdict: None, Sent: sent}
	}
	switch g.c.preset {
	case PresetLakera:
		return g.lakera(ctx, now, c, texts, sent)
	case PresetAzurePromptShields:
		return g.promptShields(ctx, now, c, texts, sent)
	case PresetNeMo:
		return g.nemoChecks(ctx, now, c, texts, sent)
	default:
		return g.presidio(ctx, now, c, texts, sent)
	}
}

// call posts v and decodes the answer into out; a failure is the Outcome to return.
func (g *guard) call(ctx context.Context, now func() time.Time, v, out any) *Outcome {
	body, err := json.Marshal(v)
	if err != nil {
		o := failed(FailureError, "malformed")
		return &o
	}
	raw, o := g.post(ctx, now, body)
	if o != nil {
		return o
	}
	if json.Unmarshal(raw, out) != nil {
		g.br.record(false, now(), g.c)
		o := failed(FailureError, "malformed")
		return &o
	}
	return nil
}

func (g *guard) lakera(ctx context.Context, now func() time.Time, c *Content, texts []string, sent []int) Outcome {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	role := "user"
	if c.Phase == "post" {
		role = "assistant"
	}
	req := struct {
		Messages  []message `json:"messages"`
		Breakdown bool      `json:"breakdown"`
	}{Breakdown: true}
	for _, t := range texts {
		req.Messages = append(req.Messages, message{Role: role, Content: t})
	}
	var ans struct {
		Flagged   *bool `json:"flagged"`
		Breakdown []struct {
			DetectorType string `json:"detector_type"`
			Detected     bool   `json:"detected"`
		} `json:"breakdown"`
	}
	if o := g.call(ctx, now, req, &ans); o != nil {
		return *o
	}
	if ans.Flagged == nil {
		g.br.record(false, now(), g.c)
		return failed(FailureError, "malformed")
	}
	g.br.record(true, now(), g.c)
	out := Outcome{Verdict: None, Sent: sent}
	for _, d := range ans.Breakdown {
		if d.Detected {
			out.Findings = append(out.Findings, g.finding(answerFinding{RuleID: "lakera_" + d.DetectorType, Severity: "high"}, c, sent))
		}
	}
	if *ans.Flagged {
		out.Verdict, out.Reason = Block, "flagged by Lakera Guard"
	}
	return out
}

func (g *guard) promptShields(ctx context.Context, now func() time.Time, c *Content, texts []string, sent []int) Outcome {
	req := struct {
		UserPrompt string   `json:"userPrompt"`
		Documents  []string `json:"documents"`
	}{Documents: []string{}}
	if c.Phase == "post" {
		req.Documents = texts
	} else {
		req.UserPrompt = strings.Join(texts, "\n")
	}
	var ans struct {
		UserPromptAnalysis *struct {
			AttackDetected bool `json:"attackDetected"`
		} `json:"userPromptAnalysis"`
		DocumentsAnalysis []struct {
			AttackDetected bool `json:"attackDetected"`
		} `json:"documentsAnalysis"`
	}
	if o := g.call(ctx, now, req, &ans); o != nil {
		return *o
	}
	if (c.Phase != "post" && ans.UserPromptAnalysis == nil) || (c.Phase == "post" && len(ans.DocumentsAnalysis) != len(texts)) {
		g.br.record(false, now(), g.c)
		return failed(FailureError, "malformed")
	}
	g.br.record(true, now(), g.c)
	out := Outcome{Verdict: None, Sent: sent}
	if a := ans.UserPromptAnalysis; a != nil && a.AttackDetected {
		out.Findings = append(out.Findings, g.finding(answerFinding{RuleID: "prompt_shields_user_prompt_attack", Severity: "high"}, c, sent))
	}
	for i, d := range ans.DocumentsAnalysis {
		if d.AttackDetected {
			idx := i
			out.Findings = append(out.Findings, g.finding(answerFinding{RuleID: "prompt_shields_document_attack", Severity: "high", Index: &idx}, c, sent))
		}
	}
	if len(out.Findings) > 0 {
		out.Verdict, out.Reason = Block, "attack detected by Azure Prompt Shields"
	}
	return out
}

func (g *guard) presidio(ctx context.Context, now func() time.Time, c *Content, texts []string, sent []int) Outcome {
	type span struct {
		EntityType string  `json:"entity_type"`
		Start      int     `json:"start"`
		End        int     `json:"end"`
		Score      float64 `json:"score"`
	}
	out := Outcome{Verdict: None, Sent: sent, Texts: make([]string, len(texts))}
	changed := false
	for i, t := range texts {
		var spans []span
		req := struct {
			Text     string `json:"text"`
			Language string `json:"language"`
		}{t, "en"}
		if o := g.call(ctx, now, req, &spans); o != nil {
			return *o
		}
		// Presidio's offsets count code points; turn them into byte offsets, keep the
		// spans that lie inside the text, and replace from the end so earlier offsets
		// stay valid.
		bytesAt := runeOffsets(t)
		var keep []span
		for _, sp := range spans {
			if sp.Start < 0 || sp.End <= sp.Start || sp.End >= len(bytesAt) {
				continue
			}
			sp.Start, sp.End, sp.EntityType = bytesAt[sp.Start], bytesAt[sp.End], entityName(sp.EntityType)
			keep = append(keep, sp)
		}
		sort.Slice(keep, func(a, b int) bool { return keep[a].Start < keep[b].Start })
		out.Texts[i] = t
		last := len(t) + 1
		for j := len(keep) - 1; j >= 0; j-- {
			sp := keep[j]
			idx := i
			out.Findings = append(out.Findings, g.finding(answerFinding{RuleID: "presidio_" + strings.ToLower(sp.EntityType),
				Severity: "info", Entity: sp.EntityType, Index: &idx, Start: sp.Start, End: sp.End}, c, sent))
			if sp.End > last { // overlaps the span replaced before it
				continue
			}
			out.Texts[i] = out.Texts[i][:sp.Start] + "[REDACTED:" + sp.EntityType + "]" + out.Texts[i][sp.End:]
			last, changed = sp.Start, true
		}
	}
	return g.replaced(now, out, changed)
}

func (g *guard) nemoChecks(ctx context.Context, now func() time.Time, c *Content, texts []string, sent []int) Outcome {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type options struct {
		ConfigID string `json:"config_id,omitempty"`
	}
	role := "user"
	if c.Phase == "post" {
		role = "assistant"
	}
	out := Outcome{Verdict: None, Sent: sent, Texts: make([]string, len(texts))}
	changed := false
	for i, t := range texts {
		req := struct {
			Model      string    `json:"model"`
			Messages   []message `json:"messages"`
			Guardrails options   `json:"guardrails"`
		}{g.c.nemo.Model, []message{{role, t}}, options{g.c.nemo.ConfigID}}
		var ans struct {
			Status  string  `json:"status"`
			Content *string `json:"content"`
			Rail    string  `json:"rail"`
		}
		if o := g.call(ctx, now, req, &ans); o != nil {
			return *o
		}
		idx := i
		switch {
		case ans.Status == "passed":
			out.Texts[i] = t
		case ans.Status == "modified" && ans.Content != nil:
			out.Texts[i], changed = *ans.Content, true
			out.Findings = append(out.Findings, g.finding(answerFinding{RuleID: nemoRule(ans.Rail, "modified"), Severity: "medium", Index: &idx}, c, sent))
		case ans.Status == "blocked":
			g.br.record(true, now(), g.c)
			out.Findings = append(out.Findings, g.finding(answerFinding{RuleID: nemoRule(ans.Rail, "blocked"), Severity: "high", Index: &idx}, c, sent))
			out.Verdict, out.Reason, out.Texts = Block, "blocked by a NeMo Guardrails rail", nil
			return out
		default:
			g.br.record(false, now(), g.c)
			return failed(FailureError, "malformed")
		}
	}
	return g.replaced(now, out, changed)
}

// nemoRule is the finding of a NeMo rail: nemo_ and the rail's name in lower case
// with every run of other than letters and digits one '_' ("self check input" →
// nemo_self_check_input), or nemo_ and the status when the answer names none.
func nemoRule(rail, status string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(rail) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			sep = false
		} else {
			sep = true
		}
	}
	if b.Len() == 0 {
		return "nemo_" + status
	}
	return "nemo_" + b.String()
}

// replaced ends a preset's answer that judged each text and may have replaced some:
// an intervention carrying out.Texts when one changed, else no verdict and no texts.
func (g *guard) replaced(now func() time.Time, out Outcome, changed bool) Outcome {
	g.br.record(true, now(), g.c)
	if changed {
		out.Verdict = Intervene
	} else {
		out.Texts = nil
	}
	return out
}

// runeOffsets maps a code point index of s to its byte offset; the last entry is
// len(s).
func runeOffsets(s string) []int {
	at := make([]int, 0, utf8.RuneCountInString(s)+1)
	for i := range s {
		at = append(at, i)
	}
	return append(at, len(s))
}

// entityName keeps an entity type as a label: upper-case letters, digits and '_',
// at most 32, "PII" when nothing is left. It goes into the replacement text.
func entityName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
			if b.Len() == 32 {
				break
			}
		}
	}
	if b.Len() == 0 {
		return "PII"
	}
	return b.String()
}
