package rota

import "github.com/rotaqueue/rota/internal/store"

// Task is one task as the store records it: its kind, queue, payload, status, attempt
// counters, schedule, lease and timestamps, and, once it SUCCEEDED, its Output (what the
// handler set with Job.SetOutput, as JSON; nil when none). A Task is a snapshot; call
// Client.Get for a fresh one.
type Task = store.Task

// Status is a task's lifecycle state. The legal transitions are enforced by the store
// itself (in PostgreSQL by a trigger), so no code path can write an illegal one:
//
//	PENDING -> ENQUEUED (SQS mode) -> PROCESSING -> SUCCEEDED
//	                                             -> PENDING/ENQUEUED (retry)
//	                                             -> DEAD (attempts exhausted)
//	                                             -> FAILED (permanent error)
//	PENDING, ENQUEUED, PROCESSING -> CANCELED
//	DEAD, FAILED, CANCELED -> PENDING (replay)
type Status = store.Status

// The task statuses.
const (
	// StatusPending: accepted, waiting for its scheduled time and a worker.
	StatusPending = store.StatusPending
	// StatusEnqueued: in SQS mode, its id was sent to SQS and a worker will receive it.
	StatusEnqueued = store.StatusEnqueued
	// StatusProcessing: a worker holds its lease and runs the handler.
	StatusProcessing = store.StatusProcessing
	// StatusSucceeded: the handler returned nil. Terminal.
	StatusSucceeded = store.StatusSucceeded
	// StatusFailed: the handler returned a permanent error (see Permanent). Terminal.
	StatusFailed = store.StatusFailed
	// StatusDead: every attempt failed with a retryable error. Terminal.
	StatusDead = store.StatusDead
	// StatusCanceled: canceled before or while it ran. Terminal.
	StatusCanceled = store.StatusCanceled
)

// Attempt is one recorded handler run of a task (worker, start, finish, outcome,
// error), or an operator event such as a replay.
type Attempt = store.Attempt

// AttemptOutcome is how an Attempt ended; "" while it is still running.
type AttemptOutcome = store.AttemptOutcome

// The attempt outcomes.
const (
	OutcomeSucceeded    = store.OutcomeSucceeded
	OutcomeRetried      = store.OutcomeRetried
	OutcomeDead         = store.OutcomeDead
	OutcomeFailed       = store.OutcomeFailed
	OutcomeCanceled     = store.OutcomeCanceled
	OutcomeLeaseExpired = store.OutcomeLeaseExpired
	OutcomeReplayed     = store.OutcomeReplayed
)

// DeadLetter is the event recorded whenever a task becomes DEAD or FAILED: task id,
// kind, queue, worker, attempt counts, error, reason and time.
type DeadLetter = store.DeadLetter

// ListParams filters and pages Client.List. Results are newest first; pass the
// returned cursor as Cursor to get the next page. Limit 0 means 50 (at most 1000).
type ListParams = store.ListParams

// DeadLetterParams filters and pages Client.DeadLetters (newest first). Reason "" means
// both StatusDead and StatusFailed.
type DeadLetterParams = store.DeadLetterParams

// QueueStats counts one queue's tasks by status.
type QueueStats = store.QueueStats

// Defaults and limits applied to every new task.
const (
	DefaultQueue       = store.DefaultQueue       // the queue of a task that names none
	DefaultMaxAttempts = store.DefaultMaxAttempts // attempts of a task that names none
	MaxMaxAttempts     = store.MaxMaxAttempts
	MaxPriority        = store.MaxPriority // priorities range from -MaxPriority to MaxPriority
	MaxPayloadBytes    = store.MaxPayloadBytes
	MaxOutputBytes     = store.MaxOutputBytes // a task's output, as JSON text (Job.SetOutput)
)
