package store

import (
	"context"
	"fmt"
	"time"
)

// The workers registry (DESIGN.md section 12): every worker process registers itself and
// renews its row while it runs; a worker unseen for DefaultWorkerExpiry is gone. Every
// instant is the store's clock (PostgreSQL's now()), never a process clock.

// Worker modes recorded in the registry.
const (
	WorkerModePoll = "poll"
	WorkerModeSQS  = "sqs"
	WorkerModeHTTP = "http" // a worker in any language over the HTTP worker protocol
)

// Registry timings. A worker renews its row every DefaultWorkerHeartbeat; one unseen for
// DefaultWorkerExpiry (three missed renewals) is no longer live; rows unseen for
// WorkerPruneAfter are deleted on the way by RegisterWorker.
const (
	DefaultWorkerHeartbeat = 10 * time.Second
	DefaultWorkerExpiry    = 30 * time.Second
	WorkerPruneAfter       = time.Hour
)

// Worker is one row of rota.workers.
type Worker struct {
	ID          string
	Host        string
	PID         int
	Version     string
	Mode        string   // WorkerModePoll, WorkerModeSQS or WorkerModeHTTP
	Queues      []string // sorted
	Kinds       []string // sorted; nil = unknown (an HTTP-protocol worker)
	Concurrency int
	Running     int
	StartedAt   time.Time
	LastSeenAt  time.Time
}

// Handles reports whether w may run tasks of kind: true when its kinds are unknown.
func (w *Worker) Handles(kind string) bool {
	if w.Kinds == nil {
		return true
	}
	for _, k := range w.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// KindsUnknown reports whether w's kinds are unknown (an HTTP-protocol worker).
func (w Worker) KindsUnknown() bool { return w.Kinds == nil }

// RegisterParams is one registration or renewal of a worker.
type RegisterParams struct {
	Worker Worker // StartedAt and LastSeenAt are ignored: the store sets them
	// MergeQueues adds Worker.Queues to the queues already recorded instead of replacing
	// them (an HTTP-protocol worker is registered by each claim, one queue at a time).
	MergeQueues bool
}

// Normalize validates the params; adapters call it before touching anything.
func (p *RegisterParams) Normalize() error {
	w := &p.Worker
	switch {
	case w.ID == "":
		return fmt.Errorf("%w: a worker id is required", ErrInvalid)
	case len(w.ID) > 256:
		return fmt.Errorf("%w: a worker id is at most 256 bytes", ErrInvalid)
	case w.Concurrency < 0 || w.Running < 0 || w.PID < 0:
		return fmt.Errorf("%w: concurrency, running and pid must not be negative", ErrInvalid)
	}
	for _, q := range w.Queues {
		if err := ValidateName("queue", q); err != nil {
			return err
		}
	}
	return nil
}

// WorkerListParams filters ListWorkers.
type WorkerListParams struct {
	Queue string // "" = every queue
	// LiveWithin is how recently a worker must have been seen to be listed.
	// 0 = DefaultWorkerExpiry.
	LiveWithin time.Duration
}

// WorkerRegistry is the registry half of the Store; both adapters implement it.
type WorkerRegistry interface {
	// RegisterWorker inserts or renews a worker's row with last_seen_at = now (the
	// store's clock); started_at is kept from its first registration. Rows unseen for
	// WorkerPruneAfter are deleted on the way. Invalid params: ErrInvalid.
	RegisterWorker(ctx context.Context, params RegisterParams) error
	// DeregisterWorker deletes a worker's row (a graceful stop). No row: no error.
	DeregisterWorker(ctx context.Context, id string) error
	// ListWorkers returns the live workers (seen within params.LiveWithin), of
	// params.Queue when set, ordered by id.
	ListWorkers(ctx context.Context, params WorkerListParams) ([]Worker, error)
}
