package gate

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReloadLogsRecovery: a reload that restores a good set after a failed one says
// that the gateway recovered, and Status clears the error.
func TestReloadLogsRecovery(t *testing.T) {
	dir := t.TempDir()
	write := func(src string) {
		if err := os.WriteFile(filepath.Join(dir, "p.js"), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`if (ctx.phase === "pre") { ctx.warn("x") }`)
	var logs bytes.Buffer
	g, err := Load(context.Background(), Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	write(`if (ctx.phase === "pre" {`)
	if err := g.Reload(); err == nil || g.Status().LastError == "" {
		t.Fatalf("a broken file reloaded: %v", err)
	}
	if strings.Contains(logs.String(), "recovered") {
		t.Fatalf("recovery logged before it happened:\n%s", logs.String())
	}
	write(`if (ctx.phase === "pre") { ctx.warn("y") }`)
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "policy reload recovered") || g.Status().LastError != "" {
		t.Errorf("no recovery line or error kept:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "recovered"); n != 1 {
		t.Errorf("recovery logged %d times", n)
	}
	_ = g.Reload() // a reload with nothing to recover from says nothing
	if n := strings.Count(logs.String(), "recovered"); n != 1 {
		t.Errorf("recovery logged %d times after a plain reload", n)
	}
}
