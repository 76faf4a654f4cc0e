package mcp

// The experimental tasks of revision 2025-11-25 ("legacy" tasks in
// chaosrun's experiment files, beside the 2026-07-28 extension): a
// task-augmented tools/call (params.task) is answered with a
// CreateTaskResult, its task polled by tasks/get and its result fetched by
// tasks/result, on the session the client initialized.
const (
	MethodTasksResult = "tasks/result"
	MethodTasksList   = "tasks/list"
	// MethodTaskStatus is the optional notification of a task's new
	// status.
	MethodTaskStatus = "notifications/tasks/status"
	// MetaRelatedTask ties a message to the task it concerns; a
	// tasks/result result carries it.
	MetaRelatedTask = "io.modelcontextprotocol/related-task"
)

// Task statuses of both task shapes.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskSupport values of a tool's execution.taskSupport (2025-11-25).
const (
	TaskSupportForbidden = "forbidden"
	TaskSupportOptional  = "optional"
	TaskSupportRequired  = "required"
)

// TaskTerminal reports whether a task status is final.
func TaskTerminal(status string) bool {
	return status == TaskCompleted || status == TaskFailed || status == TaskCancelled
}

// Task is a task as 2025-11-25 puts it on the wire: in a CreateTaskResult
// (under "task"), as the result of tasks/get and tasks/cancel, in
// tasks/list and in notifications/tasks/status. TTL is null for a task
// kept without limit.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// CreateTaskResult answers a task-augmented request.
type CreateTaskResult struct {
	Task Task `json:"task"`
}

// TaskParams is the task member of a task-augmented request's params: the
// lifetime asked for, in milliseconds from creation.
type TaskParams struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// ListTasksResult is the result of tasks/list.
type ListTasksResult struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// RelatedTask is the value of the MetaRelatedTask _meta entry.
type RelatedTask struct {
	TaskID string `json:"taskId"`
}

// ServerTasksCapability is the tasks capability of a server that lists and
// cancels tasks and runs task-augmented tools/call.
const ServerTasksCapability = `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`
