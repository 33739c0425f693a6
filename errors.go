package rota

import (
	"errors"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// Sentinel errors. Every error the Client returns wraps at most one of them; test with
// errors.Is. They are the very values the store layer uses, so errors.Is works whichever
// layer produced the error.
var (
	// ErrNotFound: no task has the given id.
	ErrNotFound = store.ErrNotFound
	// ErrInvalid: the input was rejected and nothing was written. The message says which
	// rule was broken.
	ErrInvalid = store.ErrInvalid
	// ErrLeaseLost: a worker's lease on a task was taken over (the lease expired and the
	// task was reaped or claimed again); the worker's write changed nothing.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrIllegalTransition: the task's status does not allow the operation, e.g.
	// canceling a task that already succeeded or replaying one that is pending.
	ErrIllegalTransition = store.ErrIllegalTransition
	// ErrConflict: the operation would break a uniqueness rule, e.g. replaying a task
	// whose idempotency key a newer live task now holds.
	ErrConflict = store.ErrConflict
	// ErrTxNotSupported: EnqueueTx or StartFlowTx was called on a memory client, which
	// cannot join a PostgreSQL transaction.
	ErrTxNotSupported = errors.New("rota: EnqueueTx needs a PostgreSQL client (NewPostgresClient)")
	// ErrNoHandler is wrapped by the error recorded for a task whose kind has no handler
	// in the worker's Mux. It is retryable.
	ErrNoHandler = runtime.ErrNoHandler
	// ErrInvalidOutput is wrapped by Job.SetOutput's error: the value does not encode as
	// JSON, is JSON the store cannot hold, or is larger than MaxOutputBytes.
	ErrInvalidOutput = runtime.ErrInvalidOutput
	// ErrNotInFlow is returned by Job.Inputs, Job.Input and Job.Item for a task that is
	// no flow step (Item: no for_each element).
	ErrNotInFlow = runtime.ErrNotInFlow
)

// Permanent marks a handler's error as not worth retrying: the task becomes FAILED at
// once, whatever attempts remain, and leaves a dead letter. Permanent(nil) is still a
// permanent error.
//
//	if errors.Is(err, ErrUnknownCustomer) {
//		return rota.Permanent(err)
//	}
func Permanent(err error) error { return runtime.Permanent(err) }

// IsPermanent reports whether err, or an error it wraps, was made by Permanent.
func IsPermanent(err error) bool { return runtime.IsPermanent(err) }

// RetryAfter makes a handler's task run again after exactly d instead of after the
// backoff (a snooze, e.g. for a rate limit). The attempt still counts: a task that
// snoozes on its last attempt becomes DEAD. A negative d is treated as 0.
func RetryAfter(d time.Duration, err error) error { return runtime.RetryAfter(d, err) }
