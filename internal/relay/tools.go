package relay

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/argcheck"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/mcpparam"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/pipeline"
)

// toolIndex resolves ctx.toolAccess: a configured tag first, otherwise the upstream's
// tool annotations (docs/decisions.md#tool-access): readOnlyHint true → read, an explicit
// destructiveHint true → dangerous, an explicit readOnlyHint false → write, else "".
type toolIndex struct {
	s       *Session
	mu      sync.Mutex
	access_ map[string]string
	// props holds, per tool, every property name its inputSchema mentions anywhere, by
	// folded form, for the arguments a Go server would bind to them
	// (docs/decisions.md#one-reading).
	props map[string]schemaNames
	// params holds, per tool, its inputSchema's x-mcp-header declarations (SEP-2243).
	params map[string][]mcpparam.Declaration
	// schemas holds, per tool, the argument checks of its listed inputSchema, compiled
	// once per listing on the first call (internal/argcheck); prompts the same for
	// each prompt's declared arguments.
	schemas map[string]*argcheck.Tool
	prompts map[string]*argcheck.Tool
	known   bool // a full tools/list has been seen since the last list_changed
}

func newToolIndex(s *Session) *toolIndex {
	return &toolIndex{s: s, access_: map[string]string{}, props: map[string]schemaNames{},
		params: map[string][]mcpparam.Declaration{}, schemas: map[string]*argcheck.Tool{}, prompts: map[string]*argcheck.Tool{}}
}

type toolAnnotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint"`
	DestructiveHint *bool `json:"destructiveHint"`
}

type toolsPage struct {
	Tools []struct {
		Name        string          `json:"name"`
		Annotations toolAnnotations `json:"annotations"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
	NextCursor string `json:"nextCursor"`
}

// accessFromAnnotations maps MCP tool annotations to a DADL access tag.
func accessFromAnnotations(readOnly, destructive *bool) string {
	switch {
	case readOnly != nil && *readOnly:
		return "read"
	case destructive != nil && *destructive:
		return "dangerous"
	case readOnly != nil && !*readOnly:
		return "write"
	}
	return ""
}

// observe records the annotations of a tools/list page that passes through.
func (x *toolIndex) observe(result json.RawMessage) {
	var page toolsPage
	if json.Unmarshal(result, &page) != nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range page.Tools {
		x.access_[t.Name] = accessFromAnnotations(t.Annotations.ReadOnlyHint, t.Annotations.DestructiveHint)
		x.schemas[t.Name] = argcheck.NewTool(t.Name, t.InputSchema)
		if d := mcpparam.Declarations(t.InputSchema); d != nil {
			x.params[t.Name] = d
		} else {
			delete(x.params, t.Name)
		}
		if names := namesOf(t.InputSchema); names != nil {
			x.props[t.Name] = names
		} else {
			delete(x.props, t.Name)
		}
	}
	if page.NextCursor == "" {
		x.known = true
	}
}

// schema is pipeline.Call.Schema: the argument checks of the tool's inputSchema in
// the listing last seen, nil when none was.
func (x *toolIndex) schema(tool string) *argcheck.Tool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.schemas[tool]
}

// observePrompts records the declared arguments of a prompts/list page that passes
// through.
func (x *toolIndex) observePrompts(result json.RawMessage) {
	var page struct {
		Prompts []struct {
			Name      string                    `json:"name"`
			Arguments []argcheck.PromptArgument `json:"arguments"`
		} `json:"prompts"`
	}
	if json.Unmarshal(result, &page) != nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, p := range page.Prompts {
		x.prompts[p.Name] = argcheck.NewPrompt(p.Name, p.Arguments)
	}
}

// prompt is the argument checks of a listed prompt, nil when none was listed.
func (x *toolIndex) prompt(name string) *argcheck.Tool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.prompts[name]
}

func (x *toolIndex) invalidate() {
	x.mu.Lock()
	x.known = false
	x.mu.Unlock()
}

// access returns the tag for tool, listing the upstream's tools itself when the
// client has not (bounded by a short timeout; on failure the tag is "").
func (x *toolIndex) access(ctx context.Context, tool string) string {
	if tag, ok := x.s.opts.Access[tool]; ok {
		return tag
	}
	x.mu.Lock()
	tag, ok := x.access_[tool]
	known := x.known
	x.mu.Unlock()
	if ok || known {
		return tag
	}
	x.fetch(ctx)
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.access_[tool]
}

// cached returns the tag for tool from configuration or a listing already seen,
// never listing the tools itself.
func (x *toolIndex) cached(tool string) string {
	if tag, ok := x.s.opts.Access[tool]; ok {
		return tag
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.access_[tool]
}

// listed reports whether the upstream listed tool (or the configuration tags it).
func (x *toolIndex) listed(tool string) bool {
	if _, ok := x.s.opts.Access[tool]; ok {
		return true
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.access_[tool]
	return ok
}

// fetch lists every page of the upstream's tools with the gateway's own request ids,
// which live in their own jsonrpc.OwnIDPrefix namespace and never reach the client.
func (x *toolIndex) fetch(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cursor := ""
	for page := 0; page < 100; page++ {
		var params map[string]any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		resp, err := x.s.ownRoundTrip(ctx, methods.ToolsList, params)
		if err != nil || resp.Result == nil {
			x.s.log.Debug("could not list upstream tools for access tags", slog.Any("err", err))
			return
		}
		x.observe(resp.Result)
		if x.s.listingHides() { // the caller's view of the tools, for calls to hidden ones
			raw, _ := jsonrpc.Marshal(params)
			reply := x.s.opts.Pipeline.Response(ctx, pipeline.Channel{Method: methods.ToolsList, Params: raw,
				User: x.s.opts.User, ClientInfo: x.s.clientInfo(), Server: x.s.opts.Server, Internal: true}, resp)
			x.s.vis.listed(cursor == "", lastPage(resp.Result), reply.Hidden, reply.HiddenAll)
		}
		var p toolsPage
		_ = json.Unmarshal(resp.Result, &p)
		if p.NextCursor == "" {
			return
		}
		cursor = p.NextCursor
	}
}

// caseVariantArgument reports whether a tools/call passes an argument named like a
// property of the tool's inputSchema only under case folding ("Force" for "force"):
// a Go server binds it to that property while a policy reading ctx.params.force sees
// nothing (docs/decisions.md#one-reading). It reads the listing the access tag
// already needed (the pipeline resolves the tag before the call goes upstream); for a
// tool whose tag is configured, and so was never listed for it, it lists the tools.
func (x *toolIndex) caseVariantArgument(ctx context.Context, tool string, args []byte) bool {
	x.mu.Lock()
	props, seen := x.props[tool]
	_, listed := x.access_[tool]
	known := x.known
	x.mu.Unlock()
	if !seen && !listed && !known {
		if _, configured := x.s.opts.Access[tool]; configured {
			x.fetch(ctx)
			x.mu.Lock()
			props = x.props[tool]
			x.mu.Unlock()
		}
	}
	return props.caseVariant(args)
}

// schemaNames are the property names a tool's inputSchema mentions anywhere, by
// their folded form, each with its exact spellings.
type schemaNames map[string][]string

// namesOf collects every property name the schema mentions, wherever it stands: the
// keys of every "properties" object, the entries of every "required" array, the keys
// and entries of "dependentRequired", the keys of "dependentSchemas". It walks the
// whole schema document and resolves no $ref, so names under anyOf/oneOf/allOf,
// $defs/definitions, array-form items, prefixItems or additionalProperties count as
// much as top-level ones (docs/decisions.md#one-reading); nil when there are none.
func namesOf(schema json.RawMessage) schemaNames {
	var v any
	if len(schema) == 0 || json.Unmarshal(schema, &v) != nil {
		return nil
	}
	names := schemaNames{}
	names.collect(v)
	if len(names) == 0 {
		return nil
	}
	return names
}

func (n schemaNames) add(name string) {
	f := jsonrpc.FoldName(name)
	for _, e := range n[f] {
		if e == name {
			return
		}
	}
	n[f] = append(n[f], name)
}

// collect walks a schema value (an object, an array of schemas, or anything else).
func (n schemaNames) collect(v any) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			n.collect(e)
		}
	case map[string]any:
		for k, sub := range v {
			switch k {
			case "properties", "dependentSchemas":
				if m, ok := sub.(map[string]any); ok {
					for p, s := range m {
						n.add(p)
						n.collect(s)
					}
					continue
				}
			case "required":
				if a, ok := sub.([]any); ok {
					n.addStrings(a)
					continue
				}
			case "dependentRequired":
				if m, ok := sub.(map[string]any); ok {
					for p, s := range m {
						n.add(p)
						if a, ok := s.([]any); ok {
							n.addStrings(a)
						}
					}
					continue
				}
			}
			n.collect(sub)
		}
	}
}

func (n schemaNames) addStrings(a []any) {
	for _, e := range a {
		if s, ok := e.(string); ok {
			n.add(s)
		}
	}
}

// caseVariant reports whether args, a tool call's arguments, holds at any depth a
// member whose name folds to a collected name without being spelled exactly as one.
func (n schemaNames) caseVariant(args []byte) bool {
	if len(n) == 0 || len(args) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return false // Parse has already refused what does not decode
	}
	return n.variantIn(v)
}

func (n schemaNames) variantIn(v any) bool {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if n.variantIn(e) {
				return true
			}
		}
	case map[string]any:
		for k, sub := range v {
			if exact, ok := n[jsonrpc.FoldName(k)]; ok && !contains(exact, k) {
				return true
			}
			if n.variantIn(sub) {
				return true
			}
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// listedDeclarations returns a tool's x-mcp-header declarations (SEP-2243) from the
// listings seen so far (the call's access tag has listed the tools when the client
// had not); nil when it declares none or was never listed.
func (x *toolIndex) listedDeclarations(tool string) []mcpparam.Declaration {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.params[tool]
}

// paramDeclarations returns a tool's x-mcp-header declarations (SEP-2243) from the
// listing, listing the tools first when the tool has not been seen in one.
func (x *toolIndex) paramDeclarations(ctx context.Context, tool string) []mcpparam.Declaration {
	x.mu.Lock()
	d := x.params[tool]
	_, listed := x.access_[tool]
	known := x.known
	x.mu.Unlock()
	if d == nil && !listed && !known {
		x.fetch(ctx)
		x.mu.Lock()
		d = x.params[tool]
		x.mu.Unlock()
	}
	return d
}

// promptArguments runs a prompts/get's arguments through Pipeline.PromptArguments
// against the prompt's listed arguments, and reports whether it answered the request
// itself (the strict profile refused it); the server is then never asked.
func (s *Session) promptArguments(ctx context.Context, msg *jsonrpc.Message) bool {
	if msg.Method != methods.PromptsGet || s.opts.Pipeline == nil {
		return false
	}
	var q struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(msg.Params, &q)
	server := s.opts.Server
	if routed, err := s.route(msg); err == nil && routed.Upstream != "" {
		server = routed.Upstream
	}
	roots := s.declaredRoots(server)
	if len(roots) == 0 {
		roots = s.opts.Roots[server]
	}
	info, version := s.clientOf(msg.Params)
	reply := s.opts.Pipeline.PromptArguments(ctx, pipeline.Channel{Method: msg.Method, Params: msg.Params, User: s.opts.User,
		ClientInfo: info, ProtocolVersion: version, Server: server, Roots: roots}, s.tools.prompt(q.Name))
	if reply.Error == nil {
		return false
	}
	s.write(&jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(msg.ID, reply.Error), Kind: jsonrpc.KindResponse, ID: msg.ID, Error: reply.Error})
	return true
}
