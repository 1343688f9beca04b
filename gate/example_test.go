package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/gate"
)

func Example() {
	dir, _ := os.MkdirTemp("", "policies")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "block-force-delete.js"), []byte(`
if (ctx.phase === "pre" && ctx.params.force_delete === true) {
  throw "force_delete is blocked by policy";
}`), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "tag.js"), []byte(`
if (ctx.phase === "pre") ctx.params.reason = "audited";`), 0o644)

	g, err := gate.Load(context.Background(), gate.Options{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()

	set := g.Current() // keep one set for both phases of a call
	r := set.Run(context.Background(), &ctxapi.Call{Phase: ctxapi.PhasePre, Tool: "delete_repo",
		Params: json.RawMessage(`{"name":"x","force_delete":true}`)})
	fmt.Println(r.Reject.Policy, r.Reject.Code, r.Reject.Message)

	r = set.Run(context.Background(), &ctxapi.Call{Phase: ctxapi.PhasePre, Tool: "delete_repo",
		Params: json.RawMessage(`{"name":"x"}`)})
	fmt.Println(string(r.Params), r.Changed, r.Acted)
	// Output:
	// block-force-delete.js policy_throw force_delete is blocked by policy
	// {"name":"x","reason":"audited"} true [tag.js]
}
