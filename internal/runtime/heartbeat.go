package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// heartbeatParallelism bounds the Heartbeat calls in flight at once: one loop serves
// every in-flight task, and a few calls in parallel keep a slow database round trip from
// delaying the rest.
const heartbeatParallelism = 8

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
// ago (also called by an outage's recovery, alongside the loop: a double beat is harmless); a task claimed just before the tick waits for the next one. So a first beat may
// come 1.5 intervals after the claim, which is why Config.validate allows an interval of
// at most half the lease.
func (h *heartbeater) beatAll(ctx context.Context) {
	now := h.w.cfg.Now()
	due := h.w.cfg.HeartbeatInterval / 2
	sem := make(chan struct{}, heartbeatParallelism)
	var wg sync.WaitGroup
	for _, e := range h.w.registry.snapshot() {
		if now.Sub(time.Unix(0, e.lastBeat.Load())) < due || e.leaseLost.Load() {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			h.beat(ctx, e)
		}()
	}
	wg.Wait()
}

func (h *heartbeater) beat(ctx context.Context, e *inflight) {
	w := h.w
	cctx, cancel := context.WithTimeout(ctx, w.cfg.HeartbeatInterval)
	defer cancel()
	start := w.cfg.Now()
	task, err := w.cfg.Store.Heartbeat(cctx, store.HeartbeatParams{
		TaskID:        e.task.ID,
		LeaseToken:    e.task.LeaseToken,
		LeaseDuration: w.cfg.LeaseDuration,
	})
	switch {
	case (errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound)) && e.finished.Load():
		// The outcome is with the committer and may just have been written, which also
		// ends the lease; the committer's result says which, so only stop beating here.
		w.registry.remove(e)
	case errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound):
		w.leaseLost(e, err)
	case err != nil:
		if ctx.Err() == nil {
			w.counters.heartbeatErrors.Add(1)
			w.outage.report() // the store may be down: recovery beats again at once
			w.log.Warn("heartbeat failed", append(taskAttrs(e.task), "error", err)...)
		}
	default:
		e.lastBeat.Store(start.UnixNano())
		if w.cfg.Source != nil {
			w.cfg.Source.Extend(ctx, Delivery{Task: e.task, Receipt: e.receipt}, w.cfg.LeaseDuration)
		}
		if task.CancelRequestedAt != nil {
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
