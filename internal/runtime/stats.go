package runtime

import "sync/atomic"

// Stats are a worker's counters since it was created, for tests and metrics. Outcome
// counters follow what the store recorded (a retry on the last attempt counts as Dead).
type Stats struct {
	Claimed   int64 // tasks claimed
	Succeeded int64 // recorded SUCCEEDED
	Retried   int64 // recorded back to PENDING/ENQUEUED for another attempt
	Dead      int64 // recorded DEAD (attempts exhausted)
	Failed    int64 // recorded FAILED (permanent error)
	Canceled  int64 // recorded CANCELED
	LeaseLost int64 // outcomes not recorded because another worker took the task over

	NoHandler       int64 // attempts of a kind with no registered handler
	Panics          int64 // handler panics recovered
	CommitErrors    int64 // failed RecordOutcomes calls or outcomes (retried or dropped)
	ClaimErrors     int64 // failed ClaimTasks calls
	HeartbeatErrors int64 // failed heartbeat calls (each a batch of leases), lease loss excluded
	Reaped          int64 // expired leases this worker's reaper handled
	Abandoned       int64 // handlers given up AbandonGrace after their context ended

	Running  int64 // handlers running now
	InFlight int64 // claimed tasks whose outcome is not recorded yet
	// AbandonedRunning counts abandoned handlers that have not returned yet: goroutines
	// the worker can neither stop nor account a slot to.
	AbandonedRunning int64
}

type counters struct {
	claimed, succeeded, retried, dead, failed, canceled, leaseLost atomic.Int64
	noHandler, panics, commitErrors, claimErrors, heartbeatErrors  atomic.Int64
	reaped, running, abandoned, abandonedRunning                   atomic.Int64
}

// Stats returns a snapshot of the worker's counters.
func (w *Worker) Stats() Stats {
	c := &w.counters
	return Stats{
		Claimed:          c.claimed.Load(),
		Succeeded:        c.succeeded.Load(),
		Retried:          c.retried.Load(),
		Dead:             c.dead.Load(),
		Failed:           c.failed.Load(),
		Canceled:         c.canceled.Load(),
		LeaseLost:        c.leaseLost.Load(),
		NoHandler:        c.noHandler.Load(),
		Panics:           c.panics.Load(),
		CommitErrors:     c.commitErrors.Load(),
		ClaimErrors:      c.claimErrors.Load(),
		HeartbeatErrors:  c.heartbeatErrors.Load(),
		Reaped:           c.reaped.Load(),
		Running:          c.running.Load(),
		InFlight:         int64(w.registry.len()),
		Abandoned:        c.abandoned.Load(),
		AbandonedRunning: c.abandonedRunning.Load(),
	}
}
