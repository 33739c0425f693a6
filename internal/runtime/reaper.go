package runtime

import (
	"context"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// reapBatch is the most expired leases one ReapExpiredLeases call handles; the reaper
// calls again at once while batches come back full.
const reapBatch = 1000

// reaper returns tasks whose lease expired (their worker died or stalled) to the queue,
// or makes them DEAD or CANCELED, every ReapInterval. Every worker may run one: the store
// arbitrates, so no leader is needed.
type reaper struct {
	w *Worker
}

func (r *reaper) run(ctx context.Context) {
	if r.w.cfg.ReapInterval < 0 {
		return
	}
	// The first pass comes soon after start (a restart after a crash recovers quickly),
	// jittered so a fleet restarting together does not reap in lockstep.
	t := time.NewTimer(jitter(r.w.cfg.ReapInterval) / 10)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.reap(ctx)
			t.Reset(jitter(r.w.cfg.ReapInterval))
		}
	}
}

func (r *reaper) reap(ctx context.Context) {
	w := r.w
	total := 0
	for ctx.Err() == nil {
		n, err := w.cfg.Store.ReapExpiredLeases(ctx, store.ReapParams{
			Limit:       reapBatch,
			BackoffBase: w.cfg.BackoffBase,
			BackoffMax:  w.cfg.BackoffMax,
			RetryStatus: w.cfg.ClaimFrom,
		})
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("reap expired leases failed", "error", err)
			}
			break
		}
		total += n
		if n < reapBatch {
			break
		}
	}
	if total > 0 {
		w.counters.reaped.Add(int64(total))
		w.log.Info("reaped expired leases", "count", total)
		// Reaped tasks may be due now, and no insert announces them.
		for _, f := range w.fetchers {
			f.notify()
		}
	}
}
