package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// listener turns Store.Listen notifications into action, on the process's one
// listening connection: due-task inserts wake the queue's fetcher, a cancel request stops
// the handler of a task running here at once (the heartbeat is the fallback, up to 1.5
// intervals later), and a resumed subscription tells the worker the database is back.
// Notifications are an optimisation: when the subscription fails the fetchers still
// poll, and the listener subscribes again after a pause.
type listener struct {
	w *Worker
}

// run subscribes, closes subscribed after its first attempt (Run waits for it before the
// first claim, so that no cancel request of a task this worker claims comes before the
// worker listens), handles notifications, and subscribes again whenever they end.
func (l *listener) run(ctx context.Context, subscribed chan<- struct{}) {
	failures := 0
	for {
		ch, err := l.w.cfg.Store.Listen(ctx)
		if subscribed != nil {
			close(subscribed)
			subscribed = nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			l.w.log.Warn("subscribe to notifications failed; polling meanwhile", "failures", failures, "error", err)
			if !sleepCtx(ctx, errorBackoff(failures)) {
				return
			}
			continue
		}
		for n := range ch {
			failures = 0 // the subscription works
			l.handle(ctx, n)
		}
		if ctx.Err() != nil {
			return
		}
		// The store closed the channel early (a lost connection): subscribe again.
		failures++
		l.w.log.Warn("notifications ended; subscribing again", "failures", failures)
		if !sleepCtx(ctx, errorBackoff(failures)) {
			return
		}
	}
}

func (l *listener) handle(ctx context.Context, n store.Notification) {
	w := l.w
	switch n.Kind {
	case store.TasksDue:
		if f, ok := w.fetchers[n.Queue]; ok && w.cfg.Source == nil {
			f.notify()
		}
	case store.CancelRequested:
		w.cancels.add(n.TaskID)
		if e := w.registry.get(n.TaskID); e != nil {
			w.requestCancel(e, "notification")
		}
	case store.ListenResumed:
		// The database may be back from an outage; and what was announced while the
		// connection was down was missed: every queue looks, and every running task's
		// cancel request is read (a reconnect is rare; the heartbeat would take longer).
		w.outage.resumed()
		if w.cfg.Source == nil {
			for _, f := range w.fetchers {
				f.notify()
			}
		}
		go w.checkCancels(ctx)
	}
}

// requestCancel cancels e's handler because a cancel was requested for its task (seen
// by the listener or a heartbeat, whichever is first); the outcome is then CANCELED.
func (w *Worker) requestCancel(e *inflight, seenBy string) {
	if e.finished.Load() || e.abandoned.Load() || !e.cancelRequested.CompareAndSwap(false, true) {
		return
	}
	w.log.Info("cancel requested; stopping the handler", append(taskAttrs(e.task), "seen_by", seenBy)...)
	e.cancel(errCancelRequested)
}

// checkCancel reads e's task and stops the handler if a cancel was requested for this
// attempt (the lease token still e's).
func (w *Worker) checkCancel(ctx context.Context, e *inflight) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.HeartbeatInterval)
	defer cancel()
	t, err := w.cfg.Store.GetTask(ctx, e.task.ID)
	if err == nil && t.LeaseToken == e.task.LeaseToken && t.CancelRequestedAt != nil {
		w.requestCancel(e, "notification")
	}
}

// checkCancels runs checkCancel for every task running here, one at a time.
func (w *Worker) checkCancels(ctx context.Context) {
	for _, e := range w.registry.snapshot() {
		if ctx.Err() != nil {
			return
		}
		if !e.finished.Load() {
			w.checkCancel(ctx, e)
		}
	}
}

// recentCancels remembers the task ids of recent cancel notifications for a lease's
// length: a notification can overtake the claim it concerns (the task was claimed, then
// canceled, before this worker registered it), and executor.start looks here.
type recentCancels struct {
	mu  sync.Mutex
	ttl time.Duration
	ids map[uuid.UUID]time.Time
}

func newRecentCancels(ttl time.Duration) *recentCancels {
	return &recentCancels{ttl: ttl, ids: make(map[uuid.UUID]time.Time)}
}

func (r *recentCancels) add(id uuid.UUID) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, at := range r.ids { // few entries: cancels of running tasks are rare
		if now.Sub(at) > r.ttl {
			delete(r.ids, k)
		}
	}
	r.ids[id] = now
}

// has reports whether a cancel of id was notified within the last ttl.
func (r *recentCancels) has(id uuid.UUID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.ids[id]
	return ok && time.Since(at) <= r.ttl
}
