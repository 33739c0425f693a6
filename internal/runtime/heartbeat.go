package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// heartbeatBatch is the most leases one HeartbeatMany call extends: a worker at the
// default concurrency (1,000) beats all its tasks in two statements.
const heartbeatBatch = 500

// heartbeatParallelism bounds the HeartbeatMany calls in flight at once, so that a slow
// database round trip for one batch does not delay the rest.
const heartbeatParallelism = 4

// heartbeater extends the lease of every in-flight task each HeartbeatInterval, from
// claim until its outcome is recorded. A heartbeat is also how a cancel request reaches
// the handler, and how the worker learns it lost a task.
type heartbeater struct {
	w *Worker
}

func (h *heartbeater) run(ctx context.Context) {
	t := time.NewTicker(h.w.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.beatAll(ctx)
		}
	}
}

// beatAll heartbeats the tasks whose lease was last extended at least half an interval
// ago (also called by an outage's recovery, alongside the loop: a double beat is
// harmless), heartbeatBatch per statement; a task claimed just before the tick waits for
// the next one. So a first beat may come 1.5 intervals after the claim, which is why
// Config.validate allows an interval of at most half the lease.
func (h *heartbeater) beatAll(ctx context.Context) {
	now := h.w.cfg.Now()
	due := h.w.cfg.HeartbeatInterval / 2
	var beating []*inflight
	for _, e := range h.w.registry.snapshot() {
		if now.Sub(time.Unix(0, e.lastBeat.Load())) >= due && !e.leaseLost.Load() {
			beating = append(beating, e)
		}
	}
	sem := make(chan struct{}, heartbeatParallelism)
	var wg sync.WaitGroup
	for batch := range slices.Chunk(beating, heartbeatBatch) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			h.beat(ctx, batch)
		})
	}
	wg.Wait()
}

// beat extends the leases of batch in one HeartbeatMany call and acts on each result.
func (h *heartbeater) beat(ctx context.Context, batch []*inflight) {
	w := h.w
	cctx, cancel := context.WithTimeout(ctx, w.cfg.HeartbeatInterval)
	defer cancel()
	start := w.cfg.Now()
	leases := make([]store.Lease, len(batch))
	for i, e := range batch {
		leases[i] = store.Lease{TaskID: e.task.ID, LeaseToken: e.task.LeaseToken}
	}
	results, err := w.cfg.Store.HeartbeatMany(cctx, store.HeartbeatManyParams{Leases: leases, LeaseDuration: w.cfg.LeaseDuration})
	if err != nil {
		if ctx.Err() == nil {
			w.counters.heartbeatErrors.Add(1)
			w.outage.report() // the store may be down: recovery beats again at once
			w.log.Warn("heartbeat failed", "tasks", len(batch), "error", err)
		}
		return
	}
	for i, e := range batch {
		h.settle(ctx, e, results[i], start)
	}
}

// settle acts on what a heartbeat did with e's lease.
func (h *heartbeater) settle(ctx context.Context, e *inflight, res store.HeartbeatResult, start time.Time) {
	w := h.w
	err := res.Err
	switch {
	case (errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound)) && e.finished.Load():
		// The outcome is with the committer and may just have been written, which also
		// ends the lease; the committer's result says which, so only stop beating here.
		w.registry.remove(e)
	case errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound):
		w.leaseLost(e, err)
	case err != nil:
		// Not a result HeartbeatMany gives for one lease; treated as a failed beat.
		w.counters.heartbeatErrors.Add(1)
		w.log.Warn("heartbeat failed", append(taskAttrs(e.task), "error", err)...)
	default:
		e.lastBeat.Store(start.UnixNano())
		if w.cfg.Source != nil {
			w.cfg.Source.Extend(ctx, Delivery{Task: e.task, Receipt: e.receipt}, w.cfg.LeaseDuration)
		}
		if res.CancelRequestedAt != nil {
			w.requestCancel(e, "heartbeat")
		}
	}
}

// leaseLost handles a task another worker now owns: stop its handler and forget it, so
// nothing is recorded for it.
func (w *Worker) leaseLost(e *inflight, err error) {
	if !e.leaseLost.CompareAndSwap(false, true) {
		return
	}
	w.counters.leaseLost.Add(1)
	w.cfg.Observer.LeaseLost(e.task)
	w.registry.remove(e)
	e.cancel(errLeaseLost)
	w.log.Warn("lease lost; stopping the handler", append(taskAttrs(e.task), "error", err)...)
}
