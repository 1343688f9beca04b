package engine

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestZZScratch(t *testing.T) {
	b, err := os.ReadFile("/tmp/eng/in.txt")
	if err != nil {
		t.Skip()
	}
	a, _ := New(Options{})
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		line = strings.ReplaceAll(line, `\e`, "\x1b")
		line = strings.ReplaceAll(line, `\a`, "\a")
		r := a.AnalyzeText(line)
		fmt.Printf("%-70.70q ->", line)
		for _, f := range r.Findings {
			fmt.Printf(" %s/%s[%s]", f.RuleID, f.Entity, line[f.Start:f.End])
		}
		red, _ := a.Redact(line, StrategyRedact, nil)
		if red != line {
			fmt.Printf("  R: %q", red)
		}
		fmt.Println()
	}
}
