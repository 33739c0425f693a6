package runtime

import "context"

// listener turns Store.WaitForTasks wake-ups into fetcher wake-ups. Wake-ups are an
// optimisation: when the subscription fails the fetchers still poll, and the listener
// subscribes again after a pause.
type listener struct {
	w *Worker
}

func (l *listener) run(ctx context.Context) {
	failures := 0
	for {
		ch, err := l.w.cfg.Store.WaitForTasks(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			l.w.log.Warn("subscribe to task wake-ups failed; polling meanwhile", "failures", failures, "error", err)
			if !sleepCtx(ctx, errorBackoff(failures)) {
				return
			}
			continue
		}
		for queue := range ch {
			failures = 0 // the subscription works
			if f, ok := l.w.fetchers[queue]; ok {
				f.notify()
			}
		}
		if ctx.Err() != nil {
			return
		}
		// The store closed the channel early (a lost connection): subscribe again.
		failures++
		l.w.log.Warn("task wake-ups ended; subscribing again", "failures", failures)
		if !sleepCtx(ctx, errorBackoff(failures)) {
			return
		}
	}
}
