package pipeline

import (
	"testing"

	"github.com/google/uuid"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// TestNoticesRecognised: every fixed notice the pipeline writes (the Warn notice and
// each block placeholder) is one engine.GatewayNotice recognises, so a gateway behind
// another is not judged for this one's notices (docs/decisions.md#gateway-chain);
// the texts that carry a policy's message are not.
func TestNoticesRecognised(t *testing.T) {
	id := uuid.NewString()
	texts := map[string]string{
		"warn":         warnText(id, 3),
		"block":        blockText(id),
		"request":      requestBlockedText(id),
		"instructions": instructionsBlockedText(id),
	}
	for _, b := range []methods.Block{methods.ToolOutput, methods.ResourceContents, methods.PromptMessages, methods.Refuse, methods.ReplaceText} {
		texts["row block "+string(rune('0'+b))] = blockTextOf(&methods.Method{Block: b}, id)
	}
	for name, text := range texts {
		if !engine.GatewayNotice(text) {
			t.Errorf("%s: %q is not recognised", name, text)
		}
	}
	for _, text := range []string{rejectText("a.js", "no", id), withheldText("a.js", "no", id)} {
		if engine.GatewayNotice(text) {
			t.Errorf("%q carries free text, yet is recognised", text)
		}
	}
}
