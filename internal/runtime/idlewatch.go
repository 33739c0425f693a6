package runtime

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// idleWatcher polls the worker's idle queues for due tasks with one statement per poll
// interval, Store.NextDue, instead of a claim per queue (issue #12 item 9: a worker
// serving 50 mostly idle queues made 50 empty claims a second, and every worker as
// many). A fetcher whose last claim came back short is idle: it waits for a wake-up
// only, from an insert notification, the reaper, an outage's recovery, or this loop,
// which wakes the queues with a task due now and sets a timer for those with one due
// before its next look. Delayed tasks and retries are found as soon as before: within a
// poll interval of their due time.
type idleWatcher struct {
	w *Worker
}

// idleWatched reports whether the idle watcher serves this worker's queues: poll mode,
// claiming PENDING tasks (a Source waits for work itself).
func (w *Worker) idleWatched() bool {
	return w.cfg.Source == nil && w.cfg.ClaimFrom == store.StatusPending
}

func (iw *idleWatcher) run(ctx context.Context) {
	loop.Repeat(ctx, iw.w.cfg.PollInterval, iw.look)
}

// look asks when each idle queue has a task due and wakes its fetcher then.
func (iw *idleWatcher) look(ctx context.Context) {
	w := iw.w
	var idle []string
	for _, q := range slices.Sorted(maps.Keys(w.fetchers)) {
		if w.fetchers[q].idle.Load() > 0 {
			idle = append(idle, q)
		}
	}
	if len(idle) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, w.cfg.LeaseDuration)
	due, err := w.cfg.Store.NextDue(cctx, idle)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		// Fall back to a claim per idle queue this once: their errors start the outage
		// handling as any failed claim does.
		w.log.Warn("looking for due tasks in idle queues failed; claiming instead", "queues", len(idle), "error", err)
		for _, q := range idle {
			w.fetchers[q].notify()
		}
		return
	}
	for q, in := range due {
		f := w.fetchers[q]
		switch {
		case f == nil:
		case in <= 0:
			f.notify()
		case in < w.cfg.PollInterval:
			time.AfterFunc(in, f.notify) // before the next look: on time, not a poll late
		}
	}
}
