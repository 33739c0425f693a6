package apiclient

import (
	"encoding/json"
	"time"
)

// Task is a task as the API shows it (docs/api.md, "Objects"). Fields that are null in
// the JSON are zero here ("" for idempotency_key, group_key, worker_id and last_error;
// nil times).
type Task struct {
	ID                  string          `json:"id"`
	Queue               string          `json:"queue"`
	Kind                string          `json:"kind"`
	Payload             json.RawMessage `json:"payload"`
	Status              string          `json:"status"`
	Priority            int             `json:"priority"`
	ScheduledFor        time.Time       `json:"scheduled_for"`
	AttemptCount        int             `json:"attempt_count"`
	MaxAttempts         int             `json:"max_attempts"`
	IdempotencyKey      string          `json:"idempotency_key"`
	GroupKey            string          `json:"group_key"`
	TimeoutSeconds      int             `json:"timeout_seconds"`
	WorkerID            string          `json:"worker_id"`
	LeaseExpiresAt      *time.Time      `json:"lease_expires_at"`
	CancelRequestedAt   *time.Time      `json:"cancel_requested_at"`
	EnqueuedAt          *time.Time      `json:"enqueued_at"`
	ProcessingStartedAt *time.Time      `json:"processing_started_at"`
	CompletedAt         *time.Time      `json:"completed_at"`
	LastError           string          `json:"last_error"`
	// Output is what the successful attempt returned; nil or null when none.
	Output    json.RawMessage `json:"output"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// A flow step's task: its flow, its step's name and its inputs (each dependency's
	// output by step name); a for_each task also has Item (the element) and Index.
	// Zero for a plain task.
	FlowID string          `json:"flow_id,omitempty"`
	Step   string          `json:"step,omitempty"`
	Inputs json.RawMessage `json:"inputs,omitempty"`
	Item   json.RawMessage `json:"item,omitempty"`
	Index  *int            `json:"index,omitempty"`
	// Warnings is set only in a create answer: the task was created, but no live
	// worker may run it yet (its queue has none, or none handles its kind).
	Warnings []string `json:"warnings,omitempty"`

	raw json.RawMessage
}

// UnmarshalJSON decodes a task and keeps the exact JSON it came from (see Raw).
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = Task(p)
	if string(t.Output) == "null" {
		t.Output = nil // JSON null: none
	}
	t.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Raw is the task's JSON exactly as the server sent it, including fields this client
// does not know yet; nil for a Task that was not decoded from a response.
func (t *Task) Raw() json.RawMessage { return t.raw }

// Terminal reports whether the task is SUCCEEDED, FAILED, DEAD or CANCELED.
func (t *Task) Terminal() bool {
	switch t.Status {
	case "SUCCEEDED", "FAILED", "DEAD", "CANCELED":
		return true
	}
	return false
}

// Attempt is one entry of a task's attempt history: a handler run or an operator event
// such as a replay (outcome REPLAYED, no worker).
type Attempt struct {
	ID         int64      `json:"id"`
	TaskID     string     `json:"task_id"`
	Attempt    int        `json:"attempt"`
	WorkerID   string     `json:"worker_id"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Outcome    string     `json:"outcome"`
	Error      string     `json:"error"`

	raw json.RawMessage
}

// UnmarshalJSON decodes an attempt and keeps its exact JSON (see Raw).
func (a *Attempt) UnmarshalJSON(b []byte) error {
	type plain Attempt
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*a = Attempt(p)
	a.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Raw is the attempt's JSON exactly as the server sent it.
func (a *Attempt) Raw() json.RawMessage { return a.raw }

// DeadLetter is a dead-letter event: a task became DEAD (retries exhausted) or FAILED
// (permanent error).
type DeadLetter struct {
	ID           int64      `json:"id"`
	TaskID       string     `json:"task_id"`
	Kind         string     `json:"kind"`
	Queue        string     `json:"queue"`
	WorkerID     string     `json:"worker_id"`
	AttemptCount int        `json:"attempt_count"`
	MaxAttempts  int        `json:"max_attempts"`
	Error        string     `json:"error"`
	Reason       string     `json:"reason"`
	CreatedAt    time.Time  `json:"created_at"`
	ReplayedAt   *time.Time `json:"replayed_at"`

	raw json.RawMessage
}

// UnmarshalJSON decodes a dead letter and keeps its exact JSON (see Raw).
func (d *DeadLetter) UnmarshalJSON(b []byte) error {
	type plain DeadLetter
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*d = DeadLetter(p)
	d.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Raw is the dead letter's JSON exactly as the server sent it.
func (d *DeadLetter) Raw() json.RawMessage { return d.raw }

// CreateTask is the body of POST /api/tasks and one element of a batch. Zero values are
// left out, so the server applies its defaults (queue "default", payload {}, due now,
// max attempts 25, priority 0). Set at most one of ScheduledFor and DelaySeconds.
type CreateTask struct {
	Kind           string          `json:"kind"`
	Queue          string          `json:"queue,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	ScheduledFor   *time.Time      `json:"scheduled_for,omitempty"`
	DelaySeconds   int             `json:"delay_seconds,omitempty"`
	MaxAttempts    int             `json:"max_attempts,omitempty"`
	Priority       int             `json:"priority,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	TimeoutSeconds int             `json:"timeout_seconds,omitempty"`
	GroupKey       string          `json:"group_key,omitempty"`
}

// ListTasksParams filters and pages GET /api/tasks. Zero values mean "no filter" and the
// server's default limit (50).
type ListTasksParams struct {
	Statuses []string
	Queue    string
	Kind     string
	Limit    int
	Cursor   string
}

// TaskPage is one page of tasks, newest first. NextCursor is "" on the last page.
type TaskPage struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"next_cursor"`
}

// ListDeadLettersParams filters and pages GET /api/dead-letters. Reason is "", "DEAD" or
// "FAILED".
type ListDeadLettersParams struct {
	Queue  string
	Kind   string
	Reason string
	Limit  int
	Cursor string
}

// DeadLetterPage is one page of dead letters, newest first. NextCursor is "" on the last
// page.
type DeadLetterPage struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
	NextCursor  string       `json:"next_cursor"`
}

// ReplayDeadLetters is the body of POST /api/dead-letters/replay. With TaskIDs, only those
// tasks are replayed; the other fields filter. Limit 0 = the server's default (100).
type ReplayDeadLetters struct {
	TaskIDs []string `json:"task_ids,omitempty"`
	Queue   string   `json:"queue,omitempty"`
	Kind    string   `json:"kind,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Limit   int      `json:"limit,omitempty"`
}

// ReplayResult is what one bulk replay call did. Call again until Replayed < the limit.
type ReplayResult struct {
	Replayed int    `json:"replayed"`
	Tasks    []Task `json:"tasks"`
}

// Stats is GET /api/stats: task counts by status, per queue and in total.
type Stats struct {
	Queues []QueueStats     `json:"queues"`
	Totals map[string]int64 `json:"totals"`

	raw json.RawMessage
}

// UnmarshalJSON decodes the stats and keeps the exact JSON they came from (see Raw).
func (s *Stats) UnmarshalJSON(b []byte) error {
	type plain Stats
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Stats(p)
	s.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Raw is the stats' JSON exactly as the server sent it, including fields this client
// does not know yet (the `rota stats --json` output).
func (s *Stats) Raw() json.RawMessage { return s.raw }

// QueueStats counts one queue's tasks by status.
type QueueStats struct {
	Queue         string           `json:"queue"`
	Counts        map[string]int64 `json:"counts"`
	OldestDueAt   *time.Time       `json:"oldest_due_at"`
	ExpiredLeases int64            `json:"expired_leases"`
}

// Worker is one live worker of GET /api/workers. Kinds is nil when unknown (an
// HTTP-protocol worker).
type Worker struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Version     string    `json:"version"`
	Mode        string    `json:"mode"`
	Queues      []string  `json:"queues"`
	Kinds       []string  `json:"kinds"`
	Concurrency int       `json:"concurrency"`
	Running     int       `json:"running"`
	StartedAt   time.Time `json:"started_at"`
	LastSeenAt  time.Time `json:"last_seen_at"`
}
