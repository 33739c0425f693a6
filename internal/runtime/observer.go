package runtime

import (
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// Observer receives a worker's events, for metrics (internal/metrics implements it).
// Its methods are called from the worker's loops and handler goroutines: they must be
// quick and safe for concurrent use. Embed NopObserver to implement only some.
type Observer interface {
	// ClaimDone: one claim (poll mode) or fetch (a Source) returned claimed tasks.
	ClaimDone(queue string, claimed int, took time.Duration, err error)
	// ClaimHeldBack: a claim of queue came back short because of a queue setting
	// (store.ClaimReport.HeldBack: paused, concurrency, rate, group_concurrency,
	// group_rate); the metric rota_claims_held_back_total{queue,limit}.
	ClaimHeldBack(queue string, limit store.HoldBack)
	// TaskClaimed: t was claimed (or delivered by a Source) and is about to run; called
	// once per attempt, before HandlerDone.
	TaskClaimed(t *store.Task)
	// HandlerDone: a handler returned (err nil on success) after took.
	HandlerDone(t *store.Task, took time.Duration, err error)
	// CommitDone: one RecordOutcomes call for n outcomes.
	CommitDone(n int, took time.Duration, err error)
	// OutcomeRecorded: the store recorded t's outcome; status is the task's new status
	// (SUCCEEDED, PENDING/ENQUEUED for a retry, DEAD, FAILED or CANCELED).
	OutcomeRecorded(t *store.Task, status store.Status)
	// LeaseLost: another worker took t over; nothing was recorded for this attempt.
	LeaseLost(t *store.Task)
	// Reaped: this worker's reaper returned n tasks with expired leases.
	Reaped(n int)
	// HandlerAbandoned: t's handler kept running AbandonGrace past the end of its
	// context; the worker gave the attempt up (its lease will expire) and freed its slot.
	HandlerAbandoned(t *store.Task)
	// AbandonedHandlerReturned: an abandoned handler finally returned, took after its
	// start; its outcome was dropped.
	AbandonedHandlerReturned(t *store.Task, took time.Duration)
}

// NopObserver ignores every event.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) ClaimDone(string, int, time.Duration, error)         {}
func (NopObserver) ClaimHeldBack(string, store.HoldBack)                {}
func (NopObserver) TaskClaimed(*store.Task)                             {}
func (NopObserver) HandlerDone(*store.Task, time.Duration, error)       {}
func (NopObserver) CommitDone(int, time.Duration, error)                {}
func (NopObserver) OutcomeRecorded(*store.Task, store.Status)           {}
func (NopObserver) LeaseLost(*store.Task)                               {}
func (NopObserver) Reaped(int)                                          {}
func (NopObserver) HandlerAbandoned(*store.Task)                        {}
func (NopObserver) AbandonedHandlerReturned(*store.Task, time.Duration) {}
