package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// Job is what a handler receives: a copy of the claimed task, and where the handler
// leaves its result (SetOutput).
type Job struct {
	// Task is the task as claimed: ID, Queue, Kind, Payload, AttemptCount (the current
	// attempt, 1-based), MaxAttempts, TimeoutSeconds and so on. It is a copy for reading;
	// changing it changes nothing in the store.
	Task store.Task

	output    json.RawMessage // what SetOutput accepted last; nil = none
	outputErr error           // why the last SetOutput was refused; nil once one is accepted
}

// SetOutput sets the task's output, its result: v as JSON (json.Marshal; a
// json.RawMessage is taken as it is, checked and compacted), at most MaxOutputBytes of
// JSON text. It is stored with the task only when the handler then returns nil
// (SUCCEEDED), and read back as Task.Output (nil JSON means none). A later call replaces
// an earlier one.
//
// An error (wrapping ErrInvalidOutput) means v was not accepted: the handler may set a
// smaller output, or return the error. A handler that ignores it and returns nil fails
// the task permanently with that error, so that a result is never lost silently.
// Call it from the handler's goroutine (a Job is not safe for concurrent use).
func (j *Job) SetOutput(v any) error {
	b, err := marshalOutput(v)
	if err == nil {
		b, err = store.CheckOutput(b)
	}
	if err != nil {
		j.output, j.outputErr = nil, fmt.Errorf("%w: %w", ErrInvalidOutput, err)
		return j.outputErr
	}
	j.output, j.outputErr = b, nil
	return nil
}

// marshalOutput is json.Marshal without HTML escaping: "<" stays one byte of the 1 MiB,
// and the stored text is the value's own (PostgreSQL's jsonb would unescape it anyway).
func marshalOutput(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Output returns the output SetOutput accepted last, nil when none.
func (j *Job) Output() json.RawMessage { return j.output }

// result is the attempt's output and error once the handler returned err: a success
// whose last SetOutput was refused fails permanently, with the refusal as its error.
func (j *Job) result(err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	if j.outputErr != nil {
		return nil, Permanent(j.outputErr)
	}
	return j.output, nil
}

// Handler runs one attempt of a task. It must return when ctx is done: ctx carries the
// attempt timeout, a cancel request and worker shutdown. The returned error decides the
// outcome: nil succeeds, Permanent fails for good, RetryAfter snoozes, anything else
// retries with backoff.
type Handler interface {
	Work(ctx context.Context, job *Job) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job *Job) error

// Work calls f(ctx, job).
func (f HandlerFunc) Work(ctx context.Context, job *Job) error { return f(ctx, job) }

// Middleware wraps a handler (logging, metrics, tracing...).
type Middleware func(Handler) Handler

// HandlerOption configures one kind's handler.
type HandlerOption func(*kindOptions)

type kindOptions struct {
	timeout     time.Duration // 0 = Config.DefaultTimeout; < 0 = none
	backoffBase time.Duration // 0 = Config.BackoffBase
	backoffMax  time.Duration // 0 = Config.BackoffMax
}

// WithTimeout sets the per-attempt timeout for the kind, replacing Config.DefaultTimeout.
// A negative d means no timeout. A task's own TimeoutSeconds overrides it.
func WithTimeout(d time.Duration) HandlerOption {
	return func(o *kindOptions) { o.timeout = d }
}

// WithBackoff sets the kind's retry backoff: full-jitter exponential from base, capped at
// max, replacing Config.BackoffBase and Config.BackoffMax.
func WithBackoff(base, max time.Duration) HandlerOption {
	return func(o *kindOptions) { o.backoffBase, o.backoffMax = base, max }
}

// Mux routes tasks to handlers by kind, like http.ServeMux routes requests by path. It is
// safe for concurrent use, so handlers and middleware may be added while a worker runs.
type Mux struct {
	mu          sync.Mutex // serializes changes
	middlewares []Middleware
	// kinds is replaced, never changed, so that every claimed task's lookup reads it
	// without a lock: a read lock shared by every handler goroutine was measured at a
	// twentieth of a draining worker's CPU (its reader count bouncing between cores).
	kinds atomic.Pointer[map[string]muxEntry]
}

type muxEntry struct {
	handler Handler // as registered
	wrapped Handler // handler inside the mux's middleware
	opts    kindOptions
}

// NewMux returns an empty Mux.
func NewMux() *Mux {
	m := &Mux{}
	m.kinds.Store(&map[string]muxEntry{})
	return m
}

// Handle registers h for kind. Like http.ServeMux it panics on a programming error: an
// invalid kind name, a nil handler, a kind registered twice or an invalid option.
func (m *Mux) Handle(kind string, h Handler, opts ...HandlerOption) {
	if err := store.ValidateName("kind", kind); err != nil {
		panic(fmt.Sprintf("rota: Handle: %v", err))
	}
	if h == nil {
		panic(fmt.Sprintf("rota: Handle(%q): nil handler", kind))
	}
	var o kindOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.backoffBase < 0 || o.backoffMax < 0 || (o.backoffMax > 0 && o.backoffMax < o.backoffBase) {
		panic(fmt.Sprintf("rota: Handle(%q): WithBackoff needs 0 <= base <= max", kind))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := (*m.kinds.Load())[kind]; dup {
		panic(fmt.Sprintf("rota: Handle(%q): kind registered twice", kind))
	}
	kinds := maps.Clone(*m.kinds.Load())
	kinds[kind] = muxEntry{handler: h, wrapped: chain(m.middlewares, h), opts: o}
	m.kinds.Store(&kinds)
}

// HandleFunc registers f for kind.
func (m *Mux) HandleFunc(kind string, f HandlerFunc, opts ...HandlerOption) {
	if f == nil {
		panic(fmt.Sprintf("rota: HandleFunc(%q): nil function", kind))
	}
	m.Handle(kind, f, opts...)
}

// Use appends middleware. The first one given is the outermost: after Use(a, b) a task
// runs a(b(handler)). It applies to every kind, registered before or after.
func (m *Mux) Use(mws ...Middleware) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.middlewares = append(m.middlewares, mws...)
	kinds := make(map[string]muxEntry, len(*m.kinds.Load()))
	for k, e := range *m.kinds.Load() {
		e.wrapped = chain(m.middlewares, e.handler)
		kinds[k] = e
	}
	m.kinds.Store(&kinds)
}

// Kinds returns the registered kinds, sorted.
func (m *Mux) Kinds() []string {
	return slices.Sorted(maps.Keys(*m.kinds.Load()))
}

// Work runs the handler for job.Task.Kind inside the middleware, so a Mux is itself a
// Handler. An unknown kind returns an error wrapping ErrNoHandler.
func (m *Mux) Work(ctx context.Context, job *Job) error {
	e, ok := m.lookup(job.Task.Kind)
	if !ok {
		return noHandlerError(job.Task.Kind)
	}
	return e.wrapped.Work(ctx, job)
}

// lookup returns kind's entry.
func (m *Mux) lookup(kind string) (muxEntry, bool) {
	e, ok := (*m.kinds.Load())[kind]
	return e, ok
}

func chain(mws []Middleware, h Handler) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}
