package runtime

import (
	"context"

	"github.com/rotaqueue/rota/internal/maintenance"
)

// reaper runs the shared lease reaper (internal/maintenance) inside the worker, waking the
// fetchers after a pass that returned tasks to the queue: reaped tasks may be due now, and
// no insert announces them. It never reaps the tasks this worker holds.
type reaper struct {
	w *Worker
}

func (r *reaper) run(ctx context.Context) {
	w := r.w
	if w.cfg.ReapInterval < 0 {
		return
	}
	maintenance.NewReaper(maintenance.ReaperConfig{
		Store:       w.cfg.Store,
		Interval:    w.cfg.ReapInterval,
		BackoffBase: w.cfg.BackoffBase,
		BackoffMax:  w.cfg.BackoffMax,
		// Never this worker's own tasks: it extends their leases, and an outcome it holds
		// (a database outage) is written when the database is back. An abandoned
		// handler's task is no longer held, so it is reaped as usual.
		Held:   w.registry.ids,
		Logger: w.log,
		OnReap: func(n int) {
			w.counters.reaped.Add(int64(n))
			w.cfg.Observer.Reaped(n)
			for _, f := range w.fetchers {
				f.notify()
			}
		},
	}).Run(ctx)
}
