package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestRunawaysUnderAddressSpaceLimit runs the string-doubling bomb and its array,
// concat and join variants as pre policies of the real binary under an 8 GB
// address-space limit (ulimit -v 8000000) with default settings: each call is rejected
// with policy_memory_limit within the 5 s deadline plus a margin, the gateway stays
// up, and the next call works.
func TestRunawaysUnderAddressSpaceLimit(t *testing.T) {
	pol := t.TempDir()
	src := `if (ctx.phase !== "pre") return;
switch (ctx.params.bomb) {
case "string": var s = "x"; for (;;) s = s + s;
case "append": var t = "x"; for (;;) t += t;
case "template": var u = "x"; for (;;) u = ` + "`${u}${u}`" + `;
case "array": var a = [1]; for (;;) a = [...a, ...a];
case "concat": var c = "x"; for (;;) c = c.concat(c);
case "array-concat": var d = [1]; for (;;) d = d.concat(d);
case "join": var j = "x"; for (;;) j = [j, j].join("");
}
`
	if err := os.WriteFile(filepath.Join(pol, "bomb.js"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	// the soft limit binds the gateway; the upstream (node) lifts its own soft limit
	upstream := append([]string{"sh", "-c", `ulimit -S -v unlimited; exec "$0" "$@"`}, upstreamMJS(t)...)
	args := append([]string{"-c", `ulimit -S -v 8000000 && exec "$0" "$@"`, binary},
		gatewayArgs([]string{"--policies", pol}, upstream)...)
	c, log := mcpClient(t, nil, "sh", args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway stderr:\n%s", log.String())
		}
	})
	for _, bomb := range []string{"string", "append", "template", "array", "concat", "array-concat", "join"} {
		start := time.Now()
		res := callTool(t, c, "echo_args", map[string]any{"bomb": bomb})
		took := time.Since(start)
		text := resultText(res)
		if !res.IsError || !strings.Contains(text, "bomb.js") {
			t.Fatalf("%s: not rejected: %s", bomb, text)
		}
		if took > 5*time.Second+3*time.Second {
			t.Errorf("%s: rejected after %v, past the 5 s deadline and margin", bomb, took)
		}
		ok := callTool(t, c, "echo_args", map[string]any{"bomb": "none", "n": 1})
		if ok.IsError || !strings.Contains(resultText(ok), `"n":1`) {
			t.Fatalf("after %s the next call failed: %s", bomb, resultText(ok))
		}
	}
	if strings.Contains(log.String(), "fatal error") {
		t.Fatalf("the gateway died:\n%s", log.String())
	}
}

// resultText joins the text items of a result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
