package rota

import (
	"fmt"
	"time"

	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/runtime"
)

// Job is what a handler receives: a copy of the claimed task in Job.Task (kind, payload,
// AttemptCount — the current attempt, 1-based — and so on). A handler returns a result
// with Job.SetOutput(v): v as JSON becomes the task's Output when the handler then
// returns nil (at most MaxOutputBytes; a refused output fails the task rather than
// losing it silently, see SetOutput).
type Job = runtime.Job

// Handler runs one attempt of a task, in its Work method. Returning nil marks it SUCCEEDED; an error retries it with
// backoff until its attempts run out (then it is DEAD), unless the error is wrapped
// with Permanent (FAILED at once) or RetryAfter (retried after the given delay). The
// context is canceled when the attempt's timeout passes, the task is canceled, or the
// worker shuts down past its grace period.
type Handler = runtime.Handler

// HandlerFunc adapts a func(ctx context.Context, job *Job) error to a Handler.
type HandlerFunc = runtime.HandlerFunc

// Middleware wraps a Handler, e.g. for logging, metrics or tracing; add it with
// Mux.Use. Workers already recover panics (a retryable failure with the stack in the
// task's last error).
type Middleware = runtime.Middleware

// Mux routes tasks to handlers by kind, like http.ServeMux routes requests by path. A
// task whose kind has no handler fails with a retryable error wrapping ErrNoHandler (a
// rolling deploy may bring the handler).
type Mux = runtime.Mux

// HandlerOption configures how a Mux runs one kind (see WithTimeout, WithBackoff).
type HandlerOption = runtime.HandlerOption

// WorkerConfig configures a Worker: Mux (required), WorkerID, Queues (queue ->
// concurrency limit; default {"default": Concurrency}), Concurrency (default 1000),
// polling, lease, timeout, backoff and shutdown settings, each documented on its field
// with its default. Client.NewWorker sets its Store.
type WorkerConfig = runtime.Config

// Worker claims tasks of its queues and runs their handlers. Start it with Run; it
// stops, gracefully, when Run's context is canceled.
type Worker = runtime.Worker

// WorkerStats counts what a Worker has done so far.
type WorkerStats = runtime.Stats

// BuiltinsConfig configures the built-in handlers (see RegisterBuiltins).
type BuiltinsConfig = handlers.Config

// NewMux returns an empty Mux. Register handlers with Handle or HandleFunc (which panic
// on a programming error: an invalid kind, a nil handler, a kind registered twice) and
// middleware with Use.
func NewMux() *Mux { return runtime.NewMux() }

// WithTimeout sets the per-attempt timeout of a kind, replacing
// WorkerConfig.DefaultTimeout; a negative d means no timeout. A task's own Timeout
// (EnqueueParams.Timeout) overrides both.
func WithTimeout(d time.Duration) HandlerOption { return runtime.WithTimeout(d) }

// WithBackoff sets the retry backoff of a kind: full-jitter exponential from base,
// capped at max, replacing WorkerConfig.BackoffBase and BackoffMax.
func WithBackoff(base, max time.Duration) HandlerOption { return runtime.WithBackoff(base, max) }

// NewWorker returns a worker that runs the tasks of this client's store. cfg.Store is
// set to the client's store (any value there is replaced); cfg.Mux is required. The
// worker does nothing until its Run is called.
func (c *Client) NewWorker(cfg WorkerConfig) (*Worker, error) {
	cfg.Store = c.store
	w, err := runtime.NewWorker(cfg)
	if err != nil {
		return nil, fmt.Errorf("new worker: %w", err)
	}
	return w, nil
}

// RegisterBuiltins registers Rota's built-in handler kinds on mux: noop, sleep, fail,
// http and echo (see the README for their payloads).
func RegisterBuiltins(mux *Mux, cfg BuiltinsConfig) {
	handlers.Register(mux, cfg)
}
