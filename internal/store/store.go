// Package store defines the seam between Rota's runtime and the place task state lives.
//
// Two adapters implement Store: postgres (the production store, PostgreSQL through pgx)
// and memory (the embedded default used by `rota dev` and unit tests). Both must pass the
// conformance suite in storetest, which is the executable form of the rules written here.
//
// Every write that follows a claim is fenced by the lease token the claim returned: a
// worker whose lease was taken over gets ErrLeaseLost and changes nothing.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Status is a task's lifecycle state. The legal transitions are listed in
// docs/architecture.md and enforced by the database itself.
type Status string

const (
	StatusPending    Status = "PENDING"
	StatusEnqueued   Status = "ENQUEUED"
	StatusProcessing Status = "PROCESSING"
	StatusSucceeded  Status = "SUCCEEDED"
	StatusFailed     Status = "FAILED"
	StatusDead       Status = "DEAD"
	StatusCanceled   Status = "CANCELED"
)

// AllStatuses lists every status in lifecycle order.
var AllStatuses = []Status{StatusPending, StatusEnqueued, StatusProcessing,
	StatusSucceeded, StatusFailed, StatusDead, StatusCanceled}

// Terminal reports whether no worker will ever touch a task in this status again
// (only an operator's replay moves it back to PENDING).
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusDead, StatusCanceled:
		return true
	}
	return false
}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	for _, v := range AllStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// Task is one row of rota.tasks.
type Task struct {
	ID             uuid.UUID
	Queue          string
	Kind           string
	Payload        json.RawMessage
	Status         Status
	Priority       int
	ScheduledFor   time.Time
	AttemptCount   int
	MaxAttempts    int
	IdempotencyKey string // "" when none
	TimeoutSeconds int    // per-attempt handler timeout; 0 = the worker's default for the kind
	GroupKey       string // "" when none; the queue's group limits and fairness apply per key
	// TraceContext is CreateParams.TraceContext, set by ClaimTasks (other reads may
	// leave it nil).
	TraceContext map[string]string

	// The flow step this task runs (flow.go); FlowID is uuid.Nil for a plain task. Set
	// by GetTask and ClaimTasks (other reads may leave them unset).
	FlowID uuid.UUID
	Step   string
	// Inputs maps each of the step's dependencies to its output ({} for a step without
	// dependencies); nil for a plain task. Read-only: the tasks of one step in a claim
	// share it.
	Inputs json.RawMessage
	// Item is the element of the for_each dependency's output this task runs for, and
	// Index its 0-based position; nil for a task of a step without for_each.
	Item  json.RawMessage
	Index *int

	WorkerID       string     // "" when never claimed
	LeaseToken     uuid.UUID  // uuid.Nil unless PROCESSING
	LeaseExpiresAt *time.Time // nil unless PROCESSING

	// CancelRequestedAt is set when a cancel arrives while the task is PROCESSING: the
	// owning worker cancels the handler's context and records CANCELED.
	CancelRequestedAt *time.Time

	EnqueuedAt          *time.Time
	ProcessingStartedAt *time.Time
	CompletedAt         *time.Time
	LastError           string
	// Output is what the attempt that succeeded returned (any JSON, at most
	// MaxOutputBytes); nil when none. Only a SUCCEEDED task has one.
	Output    json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time

	// ReadAt is the store's clock (PostgreSQL's now()) when the row was read, set by
	// GetTask (other calls may leave it zero). Whether the task is due yet is
	// ScheduledFor against ReadAt, never against a process clock (DESIGN.md section 9).
	ReadAt time.Time
}

// Attempt is one row of rota.task_attempts: a handler run, or an operator event such as
// a replay (Outcome OutcomeReplayed, no worker).
type Attempt struct {
	// ID is 0 while the attempt runs: its row is written when it ends (by the outcome or
	// the lease reaper), and a running attempt is read from its task.
	ID         int64
	TaskID     uuid.UUID
	Attempt    int // the task's attempt_count when the row was written
	WorkerID   string
	LeaseToken uuid.UUID
	StartedAt  time.Time
	FinishedAt *time.Time
	Outcome    AttemptOutcome // "" while running
	Error      string
}

// AttemptOutcome is how an attempt ended.
type AttemptOutcome string

const (
	OutcomeSucceeded    AttemptOutcome = "SUCCEEDED"
	OutcomeRetried      AttemptOutcome = "RETRIED"       // failed, will run again
	OutcomeDead         AttemptOutcome = "DEAD"          // failed, attempts exhausted
	OutcomeFailed       AttemptOutcome = "FAILED"        // permanent error
	OutcomeCanceled     AttemptOutcome = "CANCELED"      // canceled while running
	OutcomeLeaseExpired AttemptOutcome = "LEASE_EXPIRED" // the worker vanished; reaped
	OutcomeReplayed     AttemptOutcome = "REPLAYED"      // operator event, not a run
)

// DeadLetter is the DeadTaskEvent recorded whenever a task becomes DEAD or FAILED.
type DeadLetter struct {
	ID           int64
	TaskID       uuid.UUID
	Kind         string
	Queue        string
	WorkerID     string
	AttemptCount int
	MaxAttempts  int
	Error        string
	Reason       Status // StatusDead or StatusFailed
	CreatedAt    time.Time
	ReplayedAt   *time.Time // set when the task was replayed after this event
}

// CreateParams describes one new task. Validate it with (CreateParams).Validate; the
// adapters also reject invalid params with ErrInvalid and write nothing.
type CreateParams struct {
	ID       uuid.UUID // uuid.Nil: the adapter assigns a time-ordered v7 id
	Queue    string    // "" = "default"
	Kind     string
	Payload  json.RawMessage // nil = {}
	Priority int             // higher runs first among due tasks; default 0
	// ScheduledFor is when the task becomes due, as the caller means it (an absolute
	// time). Delay instead makes it due this long after the database's now() at the
	// insert (DESIGN.md section 9: no process clock decides when a task runs). Set at
	// most one; neither = now.
	ScheduledFor   time.Time
	Delay          time.Duration
	MaxAttempts    int // 0 = DefaultMaxAttempts
	IdempotencyKey string
	TimeoutSeconds int
	// GroupKey puts the task in a group of its queue ("" = none, at most
	// MaxGroupKeyLength characters): group_concurrency and group_rate count per key, and
	// claims take a queue's groups in turn (DESIGN.md section 11).
	GroupKey string
	// TraceContext is the W3C trace context of the creating call, as a propagation
	// carrier ("traceparent", optionally "tracestate"); nil when it was not traced.
	// Stored with the task and returned by ClaimTasks so that the attempt continues
	// the trace (internal/tracing).
	TraceContext map[string]string
}

// CreateResult is the task a create produced, or the existing task its idempotency key
// named (Existing = true).
type CreateResult struct {
	Task     *Task
	Existing bool
}

// ListParams filters and pages ListTasks. Results are ordered newest first (by id, which
// is time-ordered); Cursor is the NextCursor of the previous page.
type ListParams struct {
	Statuses []Status
	Queue    string
	Kind     string
	Limit    int // 0 = 50; at most 1000
	Cursor   string
	// MaxBytes ends a page early once its payloads and outputs (as JSON text) reach this many bytes,
	// so that a page of large payloads stays a bounded response; a page always holds at
	// least one task. 0 = DefaultListBytes.
	MaxBytes int
}

// ClaimParams asks for up to Limit due tasks of Queue in status From (PENDING for poll
// mode, ENQUEUED for SQS mode). TaskIDs, when set, restricts the claim to those ids (the
// SQS worker claims exactly the id a message named); from ENQUEUED it then takes due
// PENDING tasks too, which came back to PENDING after their message was sent.
type ClaimParams struct {
	Queue         string
	From          Status
	TaskIDs       []uuid.UUID
	WorkerID      string
	Limit         int
	LeaseDuration time.Duration
	// After, when set, is a hint: the last task of the caller's previous claim. The claim
	// may start its walk of After's priority level just past it instead of at the level's
	// start, where the index entries of the tasks claimed since the last vacuum pile up
	// (a long drain would otherwise step over all of them on every claim). Due tasks of
	// that level ordered before After may then be missed (one created with a past
	// scheduled_for, one another claimer had locked and let go), so a caller drops the
	// hint when a claim comes back short, and at least every second. Ignored with TaskIDs.
	After *ClaimKey
	// Report, when set, is filled in with why the claim came back short, if a queue
	// setting (pause, a limit) held it back: see ClaimReport (claimreport.go). nil: the
	// caller does not want to know; the limits apply all the same.
	Report *ClaimReport
}

// ClaimKey is a task's place in claim order: priority (highest first), then
// scheduled_for, then id.
type ClaimKey struct {
	Priority     int
	ScheduledFor time.Time
	ID           uuid.UUID
}

// ClaimKeyOf returns t's place in claim order.
func ClaimKeyOf(t *Task) ClaimKey {
	return ClaimKey{Priority: t.Priority, ScheduledFor: t.ScheduledFor, ID: t.ID}
}

// HeartbeatParams extends the lease of a PROCESSING task.
type HeartbeatParams struct {
	TaskID        uuid.UUID
	LeaseToken    uuid.UUID
	LeaseDuration time.Duration
}

// HeartbeatManyParams extends many leases by the same duration (Store.HeartbeatMany).
type HeartbeatManyParams struct {
	Leases        []Lease
	LeaseDuration time.Duration
}

// Lease names a task and the lease token its holder was given.
type Lease struct {
	TaskID     uuid.UUID
	LeaseToken uuid.UUID
}

// HeartbeatResult is what Store.HeartbeatMany did with one lease: LeaseExpiresAt (and
// CancelRequestedAt, when a cancel was requested) when it was extended, or Err =
// ErrLeaseLost (the token is not current) or ErrNotFound (no such task).
type HeartbeatResult struct {
	TaskID            uuid.UUID
	LeaseExpiresAt    time.Time
	CancelRequestedAt *time.Time
	Err               error
}

// OutcomeKind is what a worker reports for a claimed task.
type OutcomeKind string

const (
	// Succeed: PROCESSING -> SUCCEEDED.
	Succeed OutcomeKind = "succeed"
	// Retry: PROCESSING -> PENDING, due RetryIn after the database's now(), or DEAD
	// when no attempts remain.
	Retry OutcomeKind = "retry"
	// Fail: a permanent error, PROCESSING -> FAILED.
	Fail OutcomeKind = "fail"
	// Cancel: the handler stopped because a cancel was requested, PROCESSING -> CANCELED.
	Cancel OutcomeKind = "cancel"
	// Release: the worker gave the attempt up, not the task failing (it was shutting
	// down). Like Retry, but the attempt does not use up the budget: max_attempts is
	// raised by one, so the task runs again even after its last attempt, and attempt
	// numbers stay unique. The attempt is recorded as RETRIED.
	Release OutcomeKind = "release"
)

// Outcome is one finished attempt to record. A Retry, Release or Fail outcome for a task
// whose cancel was requested records CANCELED instead.
type Outcome struct {
	TaskID     uuid.UUID
	LeaseToken uuid.UUID
	Kind       OutcomeKind
	Error      string
	// RetryIn is, for Retry and Release, how long after the database's now() at the
	// write the task is due again (0 = at once; never negative). A duration, not an
	// instant: a worker's clock that is off must not move the due time (DESIGN.md 9).
	RetryIn time.Duration
	// Output is, for Succeed, the task's result (any JSON, at most MaxOutputBytes; nil or
	// JSON null = none). Other kinds store no output (a task that did not succeed has
	// none) and ignore it. A Succeed outcome whose Output is not storable JSON or is too
	// large is rejected on its own (its OutcomeResult.Err wraps ErrInvalid, see
	// CheckOutput) and writes nothing: the task stays PROCESSING under its lease; the
	// rest of the batch is written.
	Output json.RawMessage
}

// OutcomeResult reports what an Outcome did: the task's new status, or Err =
// ErrLeaseLost when the lease token was no longer current (nothing was written).
type OutcomeResult struct {
	TaskID uuid.UUID
	Status Status
	Err    error
}

// ReapParams returns PROCESSING tasks whose lease expired before now to PENDING (with
// full-jitter exponential backoff between BackoffBase and BackoffMax), or DEAD when their
// attempts are exhausted, or CANCELED when a cancel was requested. At most Limit per call.
type ReapParams struct {
	Limit       int
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// HeldTaskIDs are tasks the caller holds (a worker: still running, or with an outcome
	// waiting to be written, as after a database outage): never reaped by this call, even
	// with their lease expired, since the caller's own outcome is on its way.
	HeldTaskIDs []uuid.UUID
	// ExpiredWithin, when positive, limits the call to leases that expired at most this
	// long ago by the database's clock (zero: every expired lease). A reaper that passes
	// every few seconds needs to look back only a little, and a short look back is what
	// keeps it cheap while a long transaction holds vacuum back: then every index entry
	// of a version that was ever PROCESSING stays, expired leases first in the walk.
	ExpiredWithin time.Duration
}

// ReplayParams selects DEAD and FAILED tasks for a bulk replay. Empty filters match all.
type ReplayParams struct {
	TaskIDs []uuid.UUID
	Queue   string
	Kind    string
	Reason  Status // "" = DEAD and FAILED
	Limit   int    // 1 to MaxListLimit
}

// RetentionParams says which finished tasks DeleteFinishedTasks removes: SUCCEEDED and
// CANCELED tasks completed before SucceededBefore, DEAD and FAILED tasks (with their dead
// letters and attempts) completed before FailedBefore. A zero time keeps that class.
type RetentionParams struct {
	SucceededBefore time.Time
	FailedBefore    time.Time
	Limit           int // at most this many per call; >= 1
}

// DeadLetterParams filters and pages ListDeadLetters (newest first).
type DeadLetterParams struct {
	Queue  string
	Kind   string
	Reason Status // "" = both DEAD and FAILED
	Limit  int    // 0 = 50; at most 1000
	Cursor string
}

// QueueStats counts one queue's tasks by status.
type QueueStats struct {
	Queue         string
	Counts        map[Status]int64
	OldestDueAt   *time.Time // scheduled_for of the oldest due PENDING task
	ExpiredLeases int64      // PROCESSING tasks whose lease has expired (stuck)
}

// Store is the task store. All methods are safe for concurrent use; ctx comes first and
// errors are the sentinel errors below, wrapped with context.
type Store interface {
	// ScheduleStore is the schedule half (schedule.go): both adapters implement it.
	ScheduleStore
	// Insights are the overview's summaries (insights.go).
	Insights
	// GroupInsights count running tasks by group (insights.go).
	GroupInsights
	// WorkerRegistry records the live workers (workers.go).
	WorkerRegistry
	// QueueSettingsStore keeps the queues' settings (queues.go).
	QueueSettingsStore
	// FlowStore holds flows, DAGs of steps that run as tasks (flow.go).
	FlowStore

	// CreateTasks inserts tasks, all or nothing. A task whose idempotency key names a
	// task that is not DEAD, FAILED or CANCELED is not inserted: its result is that task
	// with Existing = true. Invalid params fail the whole call with ErrInvalid.
	CreateTasks(ctx context.Context, params []CreateParams) ([]CreateResult, error)
	GetTask(ctx context.Context, id uuid.UUID) (*Task, error)
	ListTasks(ctx context.Context, params ListParams) (tasks []*Task, nextCursor string, err error)

	// ClaimTasks moves up to Limit due tasks (scheduled_for <= now, attempts left) from
	// params.From to PROCESSING, highest priority then oldest first, each with a fresh
	// lease token, worker id, lease expiry and attempt_count + 1, and records an attempt.
	// Concurrent callers never receive the same task. The queue's settings
	// (QueueSettings: pause, concurrency and rate limits, per queue and per group) are
	// obeyed, never exceeded however many claim at once, and among due tasks of one
	// priority level the queue's groups (GroupKey) are taken in turn (DESIGN.md section
	// 11); a claim held back says so in params.Report.
	ClaimTasks(ctx context.Context, params ClaimParams) ([]*Task, error)
	// Heartbeat extends a lease. ErrLeaseLost when the token is not current.
	Heartbeat(ctx context.Context, params HeartbeatParams) (*Task, error)
	// HeartbeatMany extends many leases at once (a worker's every running task), each
	// as Heartbeat would; its results are in the order of params.Leases. An error of
	// the call itself (ErrInvalid, the store unreachable) leaves open which were
	// extended: the caller beats them again.
	HeartbeatMany(ctx context.Context, params HeartbeatManyParams) ([]HeartbeatResult, error)
	// RecordOutcomes writes finished attempts, each fenced by its lease token. Recording
	// the same outcome twice is harmless: the second reports ErrLeaseLost.
	RecordOutcomes(ctx context.Context, outcomes []Outcome) ([]OutcomeResult, error)

	// CancelTask cancels a PENDING or ENQUEUED task at once; for a PROCESSING task it
	// sets CancelRequestedAt and the owning worker finishes the cancel. An already CANCELED
	// task is returned unchanged; ErrIllegalTransition for other terminal tasks.
	CancelTask(ctx context.Context, id uuid.UUID) (*Task, error)
	// ReplayTask moves a DEAD, FAILED or CANCELED task back to PENDING with a fresh
	// attempt budget (attempt_count = 0), due now, and records a REPLAYED event.
	// ErrIllegalTransition for any other status.
	ReplayTask(ctx context.Context, id uuid.UUID) (*Task, error)
	// ReapExpiredLeases handles PROCESSING tasks whose lease expired; returns how many.
	ReapExpiredLeases(ctx context.Context, params ReapParams) (int, error)

	// EnqueueDue hands tasks of params.Queue that need an SQS message to send, and marks
	// the ones send reports as sent ENQUEUED with enqueued_at = now, in one transaction.
	// A task needs a message when it is PENDING and due, or ENQUEUED and due and either
	// never sent since it became due (a retry whose backoff has passed, a reaped task) or
	// last sent more than params.RedeliverAfter ago (its message looks lost). Tasks other
	// callers hold are skipped (SKIP LOCKED), so enqueuers run side by side and never send
	// the same task in the same round. Tasks send does not report stay as they were
	// (eligible next round). send's error is returned (wrapped) after the reported ids
	// are marked and committed. Invalid params: ErrInvalid, send not called; nothing to
	// send: send not called. Returns how many tasks were marked. More in enqueue.go.
	EnqueueDue(ctx context.Context, params EnqueueParams, send func(ctx context.Context, ids []uuid.UUID) (sent []uuid.UUID, err error)) (int, error)
	// ServeQueues records that an SQS enqueuer serves params.Queues for params.For (see
	// queuemode.go); For = 0 removes its record of them.
	ServeQueues(ctx context.Context, params ServeParams) error
	// RequeueUnserved returns up to limit ENQUEUED tasks of queues that no SQS enqueuer
	// serves (none has a live ServeQueues record) to PENDING, where poll workers claim
	// them: the queue moved to poll mode, or its last SQS server is gone. Their messages,
	// if any survive, are duplicates the claim by id turns away. Returns how many.
	RequeueUnserved(ctx context.Context, limit int) (int, error)
	// CountSent counts, for each queue of params.Queues, the ENQUEUED tasks whose message
	// was sent longer than params.OlderThan ago (enqueued_at set and older), at most
	// params.Limit per queue: what SQS should still hold a message for. SQS mode compares
	// it with the SQS queue's own message count to notice a queue that lost its messages
	// (sqsmode's loss watch). Every queue asked for is in the answer, 0 when none.
	// Invalid params: ErrInvalid.
	CountSent(ctx context.Context, params CountSentParams) (map[string]int, error)
	// PublishDeadLetters is the dead-letter outbox of SQS mode. A dead letter awaits
	// publication when its task went through SQS mode (it had been sent, enqueued_at set),
	// whichever path ended it. This hands up to params.Limit such dead letters of
	// params.Queues to publish, oldest first, and marks the ones publish reports (by id)
	// as published, in one transaction. Dead letters other callers hold are skipped (SKIP
	// LOCKED); unreported ones stay awaiting. publish's error is returned (wrapped) after
	// the reported ones are marked. Invalid params: ErrInvalid, publish not called;
	// nothing awaiting: publish not called. Returns how many were marked.
	PublishDeadLetters(ctx context.Context, params PublishParams, publish func(ctx context.Context, events []DeadLetter) (published []int64, err error)) (int, error)

	// ReplayTasks replays up to Limit matching DEAD or FAILED tasks at once, oldest first,
	// exactly as ReplayTask does for one, and returns them. A task whose idempotency key a
	// live task now holds is skipped (it cannot be replayed without breaking the key).
	ReplayTasks(ctx context.Context, params ReplayParams) ([]*Task, error)
	// CountReplayable counts the DEAD and FAILED tasks matching params' Queue, Kind and
	// Reason (its TaskIDs and Limit are ignored), stopping at atMost: an answer of atMost
	// means "atMost or more". It reads an index, never the rows past atMost, so a bulk
	// replay can say how many tasks it would move before it does. Tasks ReplayTasks
	// skips for their idempotency key are counted. ErrInvalid unless atMost >= 1.
	CountReplayable(ctx context.Context, params ReplayParams, atMost int) (int, error)
	// DeleteFinishedTasks removes finished tasks past their retention; returns how many.
	// A flow's tasks go only with their flow, all in one transaction: a SUCCEEDED or
	// CANCELED flow completed before SucceededBefore, a FAILED one before FailedBefore,
	// once none of its tasks runs any more. One call removes at most Limit plain tasks
	// and at most Limit flows (with all of their tasks, so it may return more than
	// Limit).
	DeleteFinishedTasks(ctx context.Context, params RetentionParams) (int, error)

	ListAttempts(ctx context.Context, taskID uuid.UUID) ([]Attempt, error)
	ListDeadLetters(ctx context.Context, params DeadLetterParams) (events []DeadLetter, nextCursor string, err error)
	Stats(ctx context.Context) ([]QueueStats, error)

	// WaitForTasks returns a channel that receives a queue name whenever due tasks are
	// inserted into it (best-effort wake-ups; workers poll as a fallback). The channel is
	// closed when ctx ends.
	WaitForTasks(ctx context.Context) (<-chan string, error)

	// NextDue reports, for each of queues holding PENDING tasks, how long until the
	// earliest of them is due by the store's clock (zero or negative: one is due now);
	// queues without PENDING tasks are absent. One call covers every queue, so a worker
	// polls its idle queues with one cheap statement instead of one claim each.
	NextDue(ctx context.Context, queues []string) (map[string]time.Duration, error)

	// Listen is WaitForTasks with more to hear, on the same kind of subscription (one
	// dedicated connection in PostgreSQL): TasksDue with the queue, as WaitForTasks
	// sends; CancelRequested with the id of a PROCESSING task whose cancel was requested,
	// so its worker can stop the handler at once; ListenResumed after the subscription
	// was lost and is back (the database may have restarted, and whatever was notified
	// meanwhile is lost: look for work now). Best effort, never blocking the store: a
	// slow reader misses notifications. Closed when ctx ends or the store is closed.
	Listen(ctx context.Context) (<-chan Notification, error)

	// Ping reports whether the store can serve requests (readiness).
	Ping(ctx context.Context) error

	Close()
}

// NotificationKind says what a Notification from Store.Listen reports.
type NotificationKind int

const (
	// TasksDue: due tasks were inserted into Notification.Queue.
	TasksDue NotificationKind = iota + 1
	// CancelRequested: a cancel was requested for the PROCESSING task
	// Notification.TaskID.
	CancelRequested
	// ListenResumed: the subscription was lost and is back; notifications sent meanwhile
	// were missed.
	ListenResumed
)

// Notification is one event from Store.Listen.
type Notification struct {
	Kind   NotificationKind
	Queue  string    // TasksDue
	TaskID uuid.UUID // CancelRequested
}

// Defaults shared by the adapters and the API.
const (
	DefaultQueue       = "default"
	DefaultMaxAttempts = 25
	DefaultListLimit   = 50
	MaxListLimit       = 1000
	// DefaultListBytes bounds a task list page's payloads: 1,000 tasks of 1 MiB would
	// otherwise make a 1 GiB response, built in the server's memory.
	DefaultListBytes = 8 << 20
)

// Sentinel errors. Adapters wrap them; callers test with errors.Is.
var (
	ErrNotFound          = errors.New("task not found")
	ErrInvalid           = errors.New("invalid input")
	ErrLeaseLost         = errors.New("lease lost: the lease token is not current")
	ErrIllegalTransition = errors.New("illegal state transition")
	// ErrConflict: the operation would break a uniqueness rule (e.g. replaying a task
	// whose idempotency key a newer live task now holds).
	ErrConflict = errors.New("conflict")
)
