package engine_test

import (
	"fmt"

	"github.com/mcpgate/mcpgate/engine"
)

func Example() {
	a, err := engine.New(engine.Options{})
	if err != nil {
		panic(err)
	}
	result := []byte(`{"content":[{"type":"text","text":"Mail bob@example.com \u001b]52;c;aGk=\u0007"}]}`)
	r, err := a.AnalyzeResult(result)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Verdict, r.Highest)
	for _, f := range r.Findings {
		fmt.Println(f.RuleID, f.Severity, f.Entity, f.Pointer, f.Start, f.End)
	}
	clean, _ := engine.SanitizeResult(result)
	fmt.Println(string(clean))
	text, n := a.Redact("Mail bob@example.com", engine.StrategyRedact, []string{"email"})
	fmt.Println(text, n)
	// Output:
	// block HIGH
	// pii_email INFO email /content/0/text 5 20
	// output_osc52_clipboard_write HIGH osc52 /content/0/text 21 33
	// {"content":[{"type":"text","text":"Mail bob@example.com "}]}
	// Mail [REDACTED:EMAIL] 1
}
