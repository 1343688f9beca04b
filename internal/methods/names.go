package methods

// The names of the methods of the table, one constant each: code outside this
// package names a method by its constant, never by a string of its own
// (docs/decisions.md#method-table).
const (
	// Lifecycle.
	Initialize      = "initialize"
	ServerDiscover  = "server/discover"
	Ping            = "ping"
	LoggingSetLevel = "logging/setLevel"

	// Tools, prompts, resources, completion.
	ToolsList              = "tools/list"
	ToolsCall              = "tools/call"
	PromptsList            = "prompts/list"
	PromptsGet             = "prompts/get"
	ResourcesList          = "resources/list"
	ResourcesTemplatesList = "resources/templates/list"
	ResourcesRead          = "resources/read"
	ResourcesSubscribe     = "resources/subscribe"
	ResourcesUnsubscribe   = "resources/unsubscribe"
	SubscriptionsListen    = "subscriptions/listen"
	CompletionComplete     = "completion/complete"

	// Tasks.
	TasksResult = "tasks/result"
	TasksGet    = "tasks/get"
	TasksCancel = "tasks/cancel"
	TasksList   = "tasks/list"
	TasksUpdate = "tasks/update"

	// Server → client requests.
	SamplingCreateMessage = "sampling/createMessage"
	ElicitationCreate     = "elicitation/create"
	RootsList             = "roots/list"

	// Notifications.
	NotificationTasksStatus               = "notifications/tasks/status"
	NotificationMessage                   = "notifications/message"
	NotificationProgress                  = "notifications/progress"
	NotificationCancelled                 = "notifications/cancelled"
	NotificationSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	NotificationToolsListChanged          = "notifications/tools/list_changed"
	NotificationPromptsListChanged        = "notifications/prompts/list_changed"
	NotificationResourcesListChanged      = "notifications/resources/list_changed"
	NotificationResourcesUpdated          = "notifications/resources/updated"
	NotificationElicitationComplete       = "notifications/elicitation/complete"
	NotificationInitialized               = "notifications/initialized"
	NotificationRootsListChanged          = "notifications/roots/list_changed"

	// NotificationTasks is the 2026-07-28 tasks extension's status notification.
	NotificationTasks = "notifications/tasks"

	// ExtensionTasks is the 2026-07-28 tasks extension's key in a capabilities'
	// extensions map.
	ExtensionTasks = "io.modelcontextprotocol/tasks"
)
