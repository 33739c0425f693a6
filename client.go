package rota

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/tracing"
)

// Client enqueues and inspects tasks, and creates workers that run them. It is safe for
// concurrent use. Create one with NewPostgresClient (production) or NewMemoryClient
// (tests, demos, single-process tools).
type Client struct {
	store store.Store
	// txCreator is the store's transactional create, nil when it has none.
	txCreator txCreator
}

// txCreator is what a store that can write inside a caller's transaction provides.
type txCreator interface {
	CreateTasksTx(ctx context.Context, tx pgx.Tx, params []store.CreateParams) ([]store.CreateResult, error)
}

// NewPostgresClient returns a client whose tasks live in PostgreSQL, in the schema that
// `rota migrate up` creates. The pool stays owned by the caller: Close does not close it,
// and the caller must keep it open while the client and its workers are in use.
func NewPostgresClient(pool *pgxpool.Pool) *Client {
	return newClient(postgres.New(pool))
}

// NewMemoryClient returns a client whose tasks live in this process's memory: nothing
// survives the process, and only workers created from this client see the tasks. It is
// meant for tests, examples and `rota dev`. EnqueueTx is not available.
func NewMemoryClient() *Client {
	return newClient(memory.New())
}

func newClient(s store.Store) *Client {
	c := &Client{store: s}
	if tc, ok := s.(txCreator); ok {
		c.txCreator = tc
	}
	return c
}

// Close releases what the client's store holds (a memory client's tasks are gone
// afterwards). It never closes a pool passed to NewPostgresClient. Stop the client's
// workers before calling it.
func (c *Client) Close() {
	c.store.Close()
}

// EnqueueParams describes one new task. Only Kind is required.
type EnqueueParams struct {
	// Kind names the handler that runs the task (see Mux.Handle). It must start with a
	// letter and contain only letters, digits, '_', '.', ':' or '-'.
	Kind string
	// Queue is the queue the task waits in; workers claim by queue. Default "default".
	Queue string
	// Payload is the task's argument, handed to the handler as JSON. A json.RawMessage
	// or []byte is used as-is and must be valid JSON; anything else is encoded with
	// json.Marshal. nil (or empty bytes) means {}. At most MaxPayloadBytes.
	Payload any
	// Delay makes the task due this long after the store writes it, by the store's clock
	// (PostgreSQL's now()), so a process whose clock is off still delays by exactly this
	// much. Must not be negative; set at most one of Delay and ScheduledFor.
	Delay time.Duration
	// ScheduledFor makes the task due at this time. Zero (and no Delay) means now; a
	// time in the past means now too.
	ScheduledFor time.Time
	// MaxAttempts is how many times the task may run before it is DEAD. 0 means
	// DefaultMaxAttempts (25); otherwise 1 to MaxMaxAttempts.
	MaxAttempts int
	// Priority orders due tasks of a queue: higher runs first. Default 0; from
	// -MaxPriority to MaxPriority.
	Priority int
	// IdempotencyKey, when set, makes the enqueue idempotent: while a task with this key
	// is pending, running or succeeded, enqueueing the key again returns that task
	// instead of creating one. A DEAD, FAILED or CANCELED task frees its key.
	IdempotencyKey string
	// GroupKey puts the task in a group of its queue ("" = none; at most
	// MaxGroupKeyLength characters): the queue's GroupConcurrency and GroupRate count per
	// key, and claims take the groups of a priority level in turn, so one group's backlog
	// does not starve another (see QueueSettings).
	GroupKey string
	// Timeout bounds each attempt of this task, overriding the worker's timeout for the
	// kind. 0 means the worker's; otherwise a positive whole number of seconds.
	Timeout time.Duration
}

// EnqueueResult is what EnqueueWithResult returns: the task, and whether it already
// existed (an idempotency-key hit) rather than being created by this call.
type EnqueueResult struct {
	Task     *Task
	Existing bool
}

// Enqueue creates one task, due at once unless p asks for a delay, and returns it. When
// p.IdempotencyKey names a live or succeeded task, that task is returned and nothing is
// created; use EnqueueWithResult to tell the two cases apart. Invalid params return an
// error wrapping ErrInvalid and write nothing.
func (c *Client) Enqueue(ctx context.Context, p EnqueueParams) (*Task, error) {
	res, err := c.EnqueueWithResult(ctx, p)
	if err != nil {
		return nil, err
	}
	return res.Task, nil
}

// EnqueueWithResult is Enqueue, reporting whether the task already existed because its
// idempotency key named a live or succeeded task (Existing = true).
func (c *Client) EnqueueWithResult(ctx context.Context, p EnqueueParams) (EnqueueResult, error) {
	cp, err := c.createParams(p)
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("enqueue: %w", err)
	}
	cp.TraceContext = tracing.Inject(ctx)
	res, err := c.store.CreateTasks(ctx, []store.CreateParams{cp})
	if err != nil {
		return EnqueueResult{}, fmt.Errorf("enqueue: %w", err)
	}
	if len(res) != 1 {
		return EnqueueResult{}, fmt.Errorf("enqueue: store returned %d results for 1 task", len(res))
	}
	return EnqueueResult{Task: res[0].Task, Existing: res[0].Existing}, nil
}

// EnqueueMany creates the tasks in one batch, all or nothing: if any params are invalid
// or the store fails, no task is created. The result has one task per params, in order;
// a params whose idempotency key names a live or succeeded task yields that task.
func (c *Client) EnqueueMany(ctx context.Context, params []EnqueueParams) ([]*Task, error) {
	cps, err := c.createParamsList(params)
	if err != nil {
		return nil, fmt.Errorf("enqueue many: %w", err)
	}
	if len(cps) == 0 {
		return []*Task{}, nil
	}
	res, err := c.store.CreateTasks(ctx, traced(ctx, cps))
	if err != nil {
		return nil, fmt.Errorf("enqueue many: %w", err)
	}
	return tasksOf(res, len(cps))
}

// EnqueueTx creates the tasks inside the caller's PostgreSQL transaction: they exist
// (and workers see them) only if tx commits, and vanish if it rolls back, so a task can
// be created atomically with the caller's own rows. Only a client from
// NewPostgresClient supports it (ErrTxNotSupported otherwise); tx may come from any
// pool or connection to the same database. The batch is all or nothing, like
// EnqueueMany. An error may leave tx aborted: roll it back.
func (c *Client) EnqueueTx(ctx context.Context, tx pgx.Tx, params ...EnqueueParams) ([]*Task, error) {
	if c.txCreator == nil {
		return nil, fmt.Errorf("enqueue tx: %w", ErrTxNotSupported)
	}
	if tx == nil {
		return nil, fmt.Errorf("enqueue tx: %w: tx is nil", ErrInvalid)
	}
	cps, err := c.createParamsList(params)
	if err != nil {
		return nil, fmt.Errorf("enqueue tx: %w", err)
	}
	if len(cps) == 0 {
		return []*Task{}, nil
	}
	res, err := c.txCreator.CreateTasksTx(ctx, tx, traced(ctx, cps))
	if err != nil {
		return nil, fmt.Errorf("enqueue tx: %w", err)
	}
	return tasksOf(res, len(cps))
}

// traced gives every task the trace context of ctx's span (none when ctx holds no
// span), which the attempt that runs the task continues.
func traced(ctx context.Context, cps []store.CreateParams) []store.CreateParams {
	if trace := tracing.Inject(ctx); trace != nil {
		for i := range cps {
			cps[i].TraceContext = trace
		}
	}
	return cps
}

func tasksOf(res []store.CreateResult, want int) ([]*Task, error) {
	if len(res) != want {
		return nil, fmt.Errorf("store returned %d results for %d tasks", len(res), want)
	}
	tasks := make([]*Task, len(res))
	for i, r := range res {
		tasks[i] = r.Task
	}
	return tasks, nil
}

func (c *Client) createParamsList(params []EnqueueParams) ([]store.CreateParams, error) {
	cps := make([]store.CreateParams, len(params))
	for i, p := range params {
		cp, err := c.createParams(p)
		if err != nil {
			if len(params) == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
		cps[i] = cp
	}
	return cps, nil
}

// createParams checks the rules that belong to EnqueueParams and then every rule of the
// store (Normalize), so that a bad batch fails before anything reaches the store.
func (c *Client) createParams(p EnqueueParams) (store.CreateParams, error) {
	cp := store.CreateParams{
		Queue:          p.Queue,
		Kind:           p.Kind,
		Priority:       p.Priority,
		ScheduledFor:   p.ScheduledFor,
		Delay:          p.Delay,
		MaxAttempts:    p.MaxAttempts,
		IdempotencyKey: p.IdempotencyKey,
		GroupKey:       p.GroupKey,
	}
	switch {
	case p.Delay < 0:
		return cp, fmt.Errorf("%w: delay must not be negative, got %s", ErrInvalid, p.Delay)
	case p.Delay > 0 && !p.ScheduledFor.IsZero():
		return cp, fmt.Errorf("%w: set delay or scheduled_for, not both", ErrInvalid)
	}
	if p.Timeout < 0 || p.Timeout%time.Second != 0 {
		return cp, fmt.Errorf("%w: timeout must be a whole number of seconds, not negative, got %s", ErrInvalid, p.Timeout)
	}
	if p.Timeout > time.Duration(store.MaxTimeoutSeconds)*time.Second {
		return cp, fmt.Errorf("%w: timeout must be at most %s, got %s", ErrInvalid, time.Duration(store.MaxTimeoutSeconds)*time.Second, p.Timeout)
	}
	cp.TimeoutSeconds = int(p.Timeout / time.Second)
	if p.MaxAttempts < 0 {
		return cp, fmt.Errorf("%w: max_attempts must be between 1 and %d (0 for the default %d), got %d",
			ErrInvalid, store.MaxMaxAttempts, store.DefaultMaxAttempts, p.MaxAttempts)
	}
	payload, err := encodePayload(p.Payload)
	if err != nil {
		return cp, err
	}
	cp.Payload = payload
	if err := cp.Normalize(); err != nil {
		return cp, err
	}
	return cp, nil
}

// encodePayload turns EnqueueParams.Payload into JSON.
func encodePayload(v any) (json.RawMessage, error) {
	var b []byte
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: payload cannot be encoded as JSON: %v", ErrInvalid, err)
		}
		return enc, nil
	}
	if len(b) == 0 {
		return nil, nil
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%w: payload is not valid JSON", ErrInvalid)
	}
	// Copy: the caller may reuse its buffer after Enqueue returns.
	return append(json.RawMessage(nil), b...), nil
}

// Get returns the task with the given id, or an error wrapping ErrNotFound.
func (c *Client) Get(ctx context.Context, id uuid.UUID) (*Task, error) {
	t, err := c.store.GetTask(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get task %s: %w", id, err)
	}
	return t, nil
}

// List returns one page of tasks matching p, newest first, and the cursor of the next
// page ("" after the last page).
func (c *Client) List(ctx context.Context, p ListParams) (tasks []*Task, nextCursor string, err error) {
	tasks, nextCursor, err = c.store.ListTasks(ctx, p)
	if err != nil {
		return nil, "", fmt.Errorf("list tasks: %w", err)
	}
	return tasks, nextCursor, nil
}

// Cancel cancels a task. A PENDING or ENQUEUED task is CANCELED at once. For a
// PROCESSING task the cancel is requested (Task.CancelRequestedAt): the worker running
// it cancels the handler's context and records CANCELED, unless the handler finishes
// first. Canceling a CANCELED task returns it unchanged; a task that SUCCEEDED, FAILED
// or is DEAD returns an error wrapping ErrIllegalTransition.
func (c *Client) Cancel(ctx context.Context, id uuid.UUID) (*Task, error) {
	t, err := c.store.CancelTask(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("cancel task %s: %w", id, err)
	}
	return t, nil
}

// Replay moves a DEAD, FAILED or CANCELED task back to PENDING, due now, with a fresh
// attempt budget; the replay is recorded in its attempt history. Any other status
// returns an error wrapping ErrIllegalTransition; ErrConflict when a newer live task
// holds its idempotency key.
func (c *Client) Replay(ctx context.Context, id uuid.UUID) (*Task, error) {
	t, err := c.store.ReplayTask(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("replay task %s: %w", id, err)
	}
	return t, nil
}

// Attempts returns the task's attempt history, oldest first: every handler run and
// every replay.
func (c *Client) Attempts(ctx context.Context, id uuid.UUID) ([]Attempt, error) {
	as, err := c.store.ListAttempts(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list attempts of task %s: %w", id, err)
	}
	return as, nil
}

// DeadLetters returns one page of dead-letter events (tasks that became DEAD or FAILED),
// newest first, and the cursor of the next page ("" after the last page).
func (c *Client) DeadLetters(ctx context.Context, p DeadLetterParams) (events []DeadLetter, nextCursor string, err error) {
	events, nextCursor, err = c.store.ListDeadLetters(ctx, p)
	if err != nil {
		return nil, "", fmt.Errorf("list dead letters: %w", err)
	}
	return events, nextCursor, nil
}

// Stats counts tasks by queue and status.
func (c *Client) Stats(ctx context.Context) ([]QueueStats, error) {
	st, err := c.store.Stats(ctx)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}
