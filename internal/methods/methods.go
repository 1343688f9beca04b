// Package methods is mcpgate's one table of MCP methods: per method and revision, its
// direction, the policy phase it runs, which members carry text the rules read, how
// a blocked message is replaced, whether its result is cacheable or can be
// input_required, what record it gets, how several servers route it and which of its
// members carry names they namespace, the client capability a server request needs,
// and what the relay does with it beside relaying it (facts.go). The relay, the
// pipeline, the translation and the multiplexer read it; none of them keeps its own
// list of method names, and code outside this package names a method by its constant
// (names.go). Beside the table: the JSON-RPC and MCP error codes (codes.go) and the
// small JSON helpers every layer shares (json.go).
//
// Sources: the MCP specification, revisions 2025-11-25 and 2026-07-28 (schema.ts of
// each), and docs/channels.md, which says what each row means for the user.
package methods

import "github.com/mcpgate/mcpgate/ctxapi"

// Revision is a set of MCP protocol revisions.
type Revision uint8

// The revisions mcpgate speaks.
const (
	Rev20251125 Revision = 1 << iota // "2025-11-25": initialize and sessions
	Rev20260728                      // "2026-07-28": server/discover, per-request _meta, no sessions
	Both        = Rev20251125 | Rev20260728
)

// Version strings of the revisions, as protocolVersion carries them.
const (
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"
)

// RevisionOf maps a protocolVersion to its revision. Versions before 2025-11-25 read
// as it (the gateway relays them as it always did); an unknown later one reads as
// 2026-07-28 only when it sorts after it.
func RevisionOf(version string) Revision {
	if version >= Version20260728 {
		return Rev20260728
	}
	return Rev20251125
}

// Direction is who sends a method's message.
type Direction uint8

const (
	// ClientRequest is a client → server request; its response comes back server →
	// client and is what the rules read.
	ClientRequest Direction = iota + 1
	// ServerRequest is a server → client request (sampling, elicitation, roots).
	ServerRequest
	// ServerNotification is a server → client notification.
	ServerNotification
	// ClientNotification is a client → server notification.
	ClientNotification
)

// Shape is how the rules read a message.
type Shape uint8

const (
	// NoText: the message carries no text from the server for the agent or the user
	// (its JSON-RPC error still does, and is always read).
	NoText Shape = iota
	// ToolResult: a CallToolResult (content blocks, structuredContent), run through the
	// tools/call output stages.
	ToolResult
	// Listing: an array of entries (Method.List), every string of every entry read.
	Listing
	// Fields: the members Method.Text names.
	Fields
)

// FieldKind is how the rules read one member.
type FieldKind uint8

const (
	// Free: every string and member name of the value, whatever its JSON type.
	Free FieldKind = iota
	// Blocks: a content block or an array of them, read like a CallToolResult's content.
	Blocks
	// Messages: an array of {role, content} messages, content as blocks, the rest free.
	Messages
	// Resources: an array of resource contents, each read as an embedded resource.
	Resources
)

// Field is one text-bearing member. Path is its JSON Pointer tokens from the result
// (responses) or the params (requests, notifications); "*" stands for every item of
// an array.
type Field struct {
	Path []string
	Kind FieldKind
}

// Block is what replaces a blocked message (docs/channels.md#block), and where a
// warned response puts its notice.
type Block uint8

const (
	// ToolOutput: a CallToolResult with isError and the block text; a warned result
	// gets the notice as its first content item.
	ToolOutput Block = iota
	// ResourceContents: one contents item (the first item's uri, text/plain) with the
	// block text; a warned result gets the notice as its first contents item.
	ResourceContents
	// PromptMessages: one user message with the block text; a warned result gets the
	// notice as its first message.
	PromptMessages
	// EmptyCompletion: a completion with no values.
	EmptyCompletion
	// Refuse: a server request answered with a JSON-RPC error; the client never sees it.
	Refuse
	// Drop: a notification dropped.
	Drop
	// ReplaceText: each string the rules read is replaced by the block text, each
	// content block by a text block carrying it and each object or array by an empty
	// one, so the message keeps its shape (a task's statusMessage and inlined result, a
	// cancellation's reason).
	ReplaceText
)

// Route is how several servers route a client request (internal/multi).
type Route uint8

const (
	// Unrouted: not supported with several servers (-32601).
	Unrouted Route = iota
	// Answered: the multiplexer answers it itself, after asking every server (or, for
	// subscriptions/listen, holds it open over one listen per server).
	Answered
	// ByName: params.name is "<server>_<name>".
	ByName
	// ByURI: params.uri is "<server>+<uri>".
	ByURI
	// ByRef: params.ref names a prompt (by name) or a resource (by uri).
	ByRef
	// ByTask: params.taskId is "<server>+<taskId>", as the multiplexer namespaces
	// the task ids its servers give.
	ByTask
)

// Record is what record a filtered message gets.
type Record uint8

const (
	// EachMessage: one record per message.
	EachMessage Record = iota
	// WhenText: one record when the message holds something to read; none otherwise
	// (a progress notification without a message).
	WhenText
)

// List describes a listing result.
type List struct {
	Key        string // the array's member: "tools"
	Entry      string // what an entry is asked for by: "name", "uri", "uriTemplate"
	Capability string // the server capability that offers it: "tools"
	Sep        string // with several servers, "<server>" Sep "<entry>": "_" or "+"
}

// Method is one row of the table.
type Method struct {
	Name      string
	Revisions Revision
	Direction Direction
	Shape     Shape
	// Text lists the members the rules read when Shape is Fields.
	Text []Field
	// List describes the result when Shape is Listing.
	List *List
	// Phase is the policy phase the message runs, "" for none; PhaseKey is the result
	// member the phase sees as ctx.response.<PhaseKey> (responses). For a server
	// request the phase sees its params.
	Phase    ctxapi.Phase
	PhaseKey string
	// Block is what replaces the message when the rules block it.
	Block Block
	// Cacheable: in 2026-07-28 its result carries ttlMs and cacheScope.
	Cacheable bool
	// Record says which messages get a record.
	Record Record
	// Route is how several servers route it.
	Route Route
	// WaitsForRestart: while its server restarts the request waits briefly
	// (docs/servers.md#what-a-client-sees-during-a-restart).
	WaitsForRestart bool
	// Withholds names the listing whose withheld entries this request may not ask for
	// (prompts/get of a prompt prompts/list withheld); Asks is the params member it
	// asks by.
	Withholds, Asks string
	// Invalidates names the listing a list_changed notification makes stale.
	Invalidates string
	// NameParam is the params member the 2026-07-28 Mcp-Name header mirrors ("name",
	// "uri", "taskId"); "" when the request has no Mcp-Name.
	NameParam string
	// InputRequired: in 2026-07-28 its result may be input_required (schema.ts
	// "InputRequiredResult", Multi Round-Trip Requests).
	InputRequired bool
	// Need is the client capability a server request needs; nil for none.
	Need *Need
	// Names lists the members of its result (a client request) or params (a server
	// notification) that carry a server's names of things, namespaced with several
	// servers.
	Names []Name
	// Effects is what the relay does with its messages beside relaying them.
	Effects Effect
	// InlinesTaskResult: its result (a client request) or params (a server
	// notification) may carry a finished task's CallToolResult under "result", which
	// the post phase of the task's tool judges (docs/decisions.md#task-results).
	InlinesTaskResult bool
}

// Filtered reports whether the rules read the message (its result, params).
func (m *Method) Filtered() bool { return m != nil && m.Shape != NoText }

// RequestPhase is the phase a client request's own params run on their way to the
// server (tasks/update: pre), or "" when they run none.
func (m *Method) RequestPhase() ctxapi.Phase {
	if m == nil || m.Direction != ClientRequest || m.Shape != NoText {
		return ""
	}
	return m.Phase
}

// AnswerPhase is the phase the client's answer to a server request runs (roots), or
// "" when it runs none.
func (m *Method) AnswerPhase() ctxapi.Phase {
	if m == nil || m.Direction != ServerRequest || m.Shape != NoText {
		return ""
	}
	return m.Phase
}

var (
	statusMessage = []Field{{Path: []string{"statusMessage"}}}
	instructions  = []Field{{Path: []string{"instructions"}}}
	taskID        = []Name{{Path: []string{"taskId"}}}
	// taskNames are the names a task message that may inline its result carries: the
	// task's id, and the resources its result's content links or embeds.
	taskNames = []Name{taskID[0], {Path: []string{"result", "content", "*"}, Kind: NameContent}}
	// taskStatus is what a task message that may inline its result carries: its
	// statusMessage, the result's content and structuredContent, and an error.
	taskStatus = []Field{statusMessage[0],
		f(Blocks, "result", "content"), f(Free, "result", "structuredContent"), f(Free, "error", "message"), f(Free, "error", "data")}
	byName = map[string]*Method{}
)

func f(kind FieldKind, path ...string) Field { return Field{Path: path, Kind: kind} }

// table is every method the gateway knows. A method not in it is relayed untouched,
// except that a JSON-RPC error answering it is always read.
var table = []Method{
	// Lifecycle.
	// The instructions of initialize and server/discover go into the model's system
	// prompt; their own flow (docs/channels.md#instructions) replaces a blocked text.
	{Name: Initialize, Revisions: Rev20251125, Direction: ClientRequest, Shape: Fields, Text: instructions,
		Phase: ctxapi.PhaseInstructions, Block: ReplaceText, Record: WhenText, Route: Answered, Effects: NotesClientInfo | NotesVersion},
	{Name: ServerDiscover, Revisions: Rev20260728, Direction: ClientRequest, Shape: Fields, Text: instructions,
		Phase: ctxapi.PhaseInstructions, Block: ReplaceText, Record: WhenText, Cacheable: true, Route: Answered},
	{Name: Ping, Revisions: Rev20251125, Direction: ClientRequest, Route: Answered},
	{Name: LoggingSetLevel, Revisions: Rev20251125, Direction: ClientRequest, Route: Answered},

	// Tools.
	{Name: ToolsList, Revisions: Both, Direction: ClientRequest, Shape: Listing, Phase: ctxapi.PhaseList,
		List: &List{Key: "tools", Entry: "name", Capability: "tools", Sep: "_"}, Cacheable: true, Route: Answered, WaitsForRestart: true,
		Effects: ObservesTools},
	// A task-augmented call's CreateTaskResult carries the task's id.
	{Name: ToolsCall, Revisions: Both, Direction: ClientRequest, Shape: ToolResult, Phase: ctxapi.PhasePost, Route: ByName, NameParam: "name",
		InputRequired: true, Names: []Name{{Path: []string{"content", "*"}, Kind: NameContent}, {Path: []string{"task", "taskId"}}}, Effects: Calls},

	// Prompts.
	{Name: PromptsList, Revisions: Both, Direction: ClientRequest, Shape: Listing,
		List: &List{Key: "prompts", Entry: "name", Capability: "prompts", Sep: "_"}, Cacheable: true, Route: Answered, WaitsForRestart: true,
		Effects: ObservesPrompts},
	{Name: PromptsGet, Revisions: Both, Direction: ClientRequest, Shape: Fields,
		Text: []Field{f(Free, "description"), f(Messages, "messages")}, Phase: ctxapi.PhasePrompt, PhaseKey: "messages",
		Block: PromptMessages, Route: ByName, Withholds: PromptsList, Asks: "name", NameParam: "name",
		InputRequired: true, Names: []Name{{Path: []string{"messages", "*", "content"}, Kind: NameContent}}},

	// Resources.
	{Name: ResourcesList, Revisions: Both, Direction: ClientRequest, Shape: Listing,
		List: &List{Key: "resources", Entry: "uri", Capability: "resources", Sep: "+"}, Cacheable: true, Route: Answered, WaitsForRestart: true},
	{Name: ResourcesTemplatesList, Revisions: Both, Direction: ClientRequest, Shape: Listing,
		List: &List{Key: "resourceTemplates", Entry: "uriTemplate", Capability: "resources", Sep: "+"}, Cacheable: true, Route: Answered, WaitsForRestart: true},
	{Name: ResourcesRead, Revisions: Both, Direction: ClientRequest, Shape: Fields,
		Text: []Field{f(Resources, "contents")}, Phase: ctxapi.PhaseResource, PhaseKey: "contents",
		Block: ResourceContents, Cacheable: true, Route: ByURI, Withholds: ResourcesList, Asks: "uri", NameParam: "uri",
		InputRequired: true, Names: []Name{{Path: []string{"contents", "*", "uri"}}}},
	{Name: ResourcesSubscribe, Revisions: Rev20251125, Direction: ClientRequest, Route: ByURI},
	{Name: ResourcesUnsubscribe, Revisions: Rev20251125, Direction: ClientRequest, Route: ByURI},
	// With several servers the multiplexer holds it, one listen per server under it.
	{Name: SubscriptionsListen, Revisions: Rev20260728, Direction: ClientRequest, Route: Answered},

	// Completion.
	{Name: CompletionComplete, Revisions: Both, Direction: ClientRequest, Shape: Fields,
		Text: []Field{f(Free, "completion")}, Block: EmptyCompletion, Route: ByRef},

	// Tasks: the 2025-11-25 methods and the 2026-07-28 extension
	// (io.modelcontextprotocol/tasks). A task's statusMessage is shown to the user.
	{Name: TasksResult, Revisions: Rev20251125, Direction: ClientRequest, Shape: ToolResult, Phase: ctxapi.PhasePost, Route: ByTask,
		Names: []Name{{Path: []string{"content", "*"}, Kind: NameContent}}},
	// A 2026-07-28 tasks/get of a finished task inlines the tool's result (a
	// CallToolResult) or its error: read like tasks/result, a blocked content block
	// becomes a text block carrying the block text.
	{Name: TasksGet, Revisions: Both, Direction: ClientRequest, Shape: Fields, Text: taskStatus,
		Block: ReplaceText, NameParam: "taskId", Route: ByTask, Names: taskNames, InlinesTaskResult: true},
	{Name: TasksCancel, Revisions: Both, Direction: ClientRequest, Shape: Fields, Text: statusMessage, Block: ReplaceText, NameParam: "taskId", Route: ByTask,
		Names: taskID},
	// tasks/list is read as named members (each task's statusMessage); List says how
	// several servers' lists merge.
	{Name: TasksList, Revisions: Rev20251125, Direction: ClientRequest, Shape: Fields,
		Text: []Field{f(Free, "tasks", "*", "statusMessage")}, Block: ReplaceText, Route: Answered,
		List: &List{Key: "tasks", Entry: "taskId", Capability: "tasks", Sep: "+"}},
	// tasks/update carries the client's inputResponses for a task: they go through the
	// input rules and the pre phase of the task's tool (RequestPhase).
	{Name: TasksUpdate, Revisions: Rev20260728, Direction: ClientRequest, Phase: ctxapi.PhasePre, NameParam: "taskId", Route: ByTask},
	// A status may carry the finished task's result as tasks/get does: read alike, and
	// judged by the post phase of the task's tool (docs/decisions.md#task-results).
	{Name: NotificationTasksStatus, Revisions: Both, Direction: ServerNotification, Shape: Fields, Text: taskStatus,
		Block: ReplaceText, Names: taskNames, InlinesTaskResult: true},
	// The 2026-07-28 extension's status notification: the same members as
	// notifications/tasks/status, read and namespaced alike.
	{Name: NotificationTasks, Revisions: Rev20260728, Direction: ServerNotification, Shape: Fields, Text: taskStatus,
		Block: ReplaceText, Names: taskNames, InlinesTaskResult: true},

	// Server → client requests.
	// In 2026-07-28 these are not wire requests: a result of resultType
	// input_required carries them as inputRequests.
	{Name: SamplingCreateMessage, Revisions: Rev20251125, Direction: ServerRequest, Shape: Fields,
		Text: []Field{f(Free, "systemPrompt"), f(Messages, "messages"), f(Free, "tools")}, Phase: ctxapi.PhaseServerRequest, Block: Refuse,
		Need: &Need{Capability: "sampling", When: []When{{Param: "tools", Member: "tools"}, {Param: "toolChoice", Member: "tools"}}}},
	{Name: ElicitationCreate, Revisions: Rev20251125, Direction: ServerRequest, Shape: Fields,
		Text: []Field{f(Free, "message"), f(Free, "requestedSchema"), f(Free, "url")}, Phase: ctxapi.PhaseServerRequest, Block: Refuse,
		Need: &Need{Capability: "elicitation", Member: "form", When: []When{{Param: "mode", Value: "url", Member: "url"}}}},
	// roots/list: the request carries nothing; the client's answer (its result, or a
	// 2026-07-28 inputResponses entry) runs the roots phase on its way to the server:
	// pinned roots, input rules, policies (docs/channels.md#roots).
	{Name: RootsList, Revisions: Rev20251125, Direction: ServerRequest, Phase: ctxapi.PhaseRoots, Need: &Need{Capability: "roots"}},

	// Server notifications.
	{Name: NotificationMessage, Revisions: Both, Direction: ServerNotification, Shape: Fields,
		Text: []Field{f(Free, "logger"), f(Free, "data")}, Block: Drop},
	{Name: NotificationProgress, Revisions: Both, Direction: ServerNotification, Shape: Fields,
		Text: []Field{f(Free, "message")}, Block: Drop, Record: WhenText},
	{Name: NotificationCancelled, Revisions: Both, Direction: ServerNotification, Shape: Fields,
		Text: []Field{f(Free, "reason")}, Block: ReplaceText, Record: WhenText, Effects: Cancels},
	{Name: NotificationSubscriptionsAcknowledged, Revisions: Rev20260728, Direction: ServerNotification},
	{Name: NotificationToolsListChanged, Revisions: Both, Direction: ServerNotification, Invalidates: ToolsList},
	{Name: NotificationPromptsListChanged, Revisions: Both, Direction: ServerNotification, Invalidates: PromptsList},
	{Name: NotificationResourcesListChanged, Revisions: Both, Direction: ServerNotification, Invalidates: ResourcesList},
	{Name: NotificationResourcesUpdated, Revisions: Both, Direction: ServerNotification, Names: []Name{{Path: []string{"uri"}}}},
	{Name: NotificationElicitationComplete, Revisions: Rev20251125, Direction: ServerNotification},

	// Client notifications.
	{Name: NotificationInitialized, Revisions: Rev20251125, Direction: ClientNotification},
	{Name: NotificationRootsListChanged, Revisions: Both, Direction: ClientNotification, Effects: ForgetsRoots},
}

func init() {
	for i := range table {
		byName[table[i].Name] = &table[i]
	}
}

// Of returns the row of a method, or nil for a method the gateway does not know.
func Of(name string) *Method { return byName[name] }

// Known returns name when it is a method of the table, else "": a name the sender
// made up may carry values, and stays out of records and log lines.
func Known(name string) string {
	if byName[name] == nil {
		return ""
	}
	return name
}

// In returns the row of a method as revision rev has it, or nil when rev has no such
// method.
func In(name string, rev Revision) *Method {
	m := byName[name]
	if m == nil || m.Revisions&rev == 0 {
		return nil
	}
	return m
}

// Listings returns the rows of the listing methods.
func Listings() []*Method {
	var out []*Method
	for i := range table {
		if table[i].Shape == Listing {
			out = append(out, &table[i])
		}
	}
	return out
}
