package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// ErrNoHandler is wrapped by the error recorded for a task whose kind has no handler in
// the worker's Mux (no middleware runs for it). It is retryable: a rolling deploy may
// bring the handler.
var ErrNoHandler = errors.New("no handler registered")

// ErrInvalidOutput is wrapped by Job.SetOutput's error: the value is not JSON, is JSON
// the store cannot hold, or is larger than MaxOutputBytes.
var ErrInvalidOutput = errors.New("invalid task output")

// MaxOutputBytes bounds a task's output, as JSON text (1 MiB).
const MaxOutputBytes = store.MaxOutputBytes

func noHandlerError(kind string) error {
	return fmt.Errorf("%w for kind %q", ErrNoHandler, kind)
}

// Permanent marks err as not worth retrying: the task becomes FAILED at once, whatever
// attempts remain. Permanent(nil) is still a (message-less) permanent error.
func Permanent(err error) error {
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was made by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type permanentError struct{ err error }

func (e *permanentError) Error() string {
	if e.err == nil {
		return "permanent error"
	}
	return e.err.Error()
}

func (e *permanentError) Unwrap() error { return e.err }

// RetryAfter asks for the task to run again after exactly d instead of after the
// backoff (a snooze). The attempt still counts: a task that snoozes on its last attempt
// becomes DEAD. A negative d is treated as 0.
func RetryAfter(d time.Duration, err error) error {
	return &retryAfterError{delay: max(d, 0), err: err}
}

type retryAfterError struct {
	delay time.Duration
	err   error
}

func (e *retryAfterError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("retry after %s", e.delay)
	}
	return e.err.Error()
}

func (e *retryAfterError) Unwrap() error { return e.err }

// retryAfterDelay returns the delay RetryAfter asked for, if err carries one.
func retryAfterDelay(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.delay, true
	}
	return 0, false
}

// panicError is a handler panic turned into a retryable failure; its message keeps the
// stack so last_error shows where it happened.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.value, e.stack)
}

// Causes of a handler context's cancellation, so the recorded error says why.
var (
	errCancelRequested = errors.New("cancel requested")
	errLeaseLost       = errors.New("lease lost")
	errShutdown        = errors.New("worker shut down before the handler finished")
)

// timeoutError is the cause of an attempt context that hit its timeout.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string { return fmt.Sprintf("attempt timed out after %s", e.d) }
