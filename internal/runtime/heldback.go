package runtime

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// A claim held back by a queue's settings (store.ClaimReport, DESIGN.md section 11)
// leaves due tasks in the queue, so the fetcher is not idle: the idle watcher would wake
// it at once, and a wake-up or a freed slot would have it claim again in a loop that
// the limit turns away every time. It waits on what the report says instead:
//
//   - rate, group_rate: until the window admits another claim (ClaimReport.RetryIn, at
//     most heldMaxWait, so that a removed limit is noticed);
//   - concurrency, group_concurrency: until an outcome of the queue committed in this
//     process (a running task of the queue ended: a slot may be free), or heldRetry
//     (another process's task may have ended);
//   - paused: until a wake-up for the queue (new tasks; a resume that notifies), or a
//     poll interval.

const (
	// heldRetry is how soon a claim held back by a concurrency limit is tried again
	// when no task of the queue ends in this process.
	heldRetry = 250 * time.Millisecond
	// heldMaxWait bounds a wait for a rate window.
	heldMaxWait = 5 * time.Second
)

// concurrencyHeldFor is how long after a claim held back by a concurrency limit the
// committer writes the queue's outcomes without waiting to batch them (committer.go).
const concurrencyHeldFor = time.Second

// markConcurrencyHeld notes that a claim of the queue was held back by a concurrency
// limit: its tasks count against the limit until their outcomes are written, so the
// committer writes them at once for a while (concurrencyHeldRecently).
func (f *fetcher) markConcurrencyHeld() {
	f.concurrencyHeldAt.Store(time.Now().UnixNano())
}

// concurrencyHeldRecently reports whether a claim of the queue was held back by a
// concurrency limit within concurrencyHeldFor.
func (f *fetcher) concurrencyHeldRecently() bool {
	at := f.concurrencyHeldAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < concurrencyHeldFor
}

// roomForClaim is how many of n reserved slots a claim should ask for. While a
// concurrency limit holds the queue's claims back, a task counts against the limit until
// its outcome is written, not until its handler returned (its slot is free by then): a
// claim for the slots of outcomes not yet written would find the limit reached and come
// back held, a round trip (and, under the queue's lock, a wait for every other claimer)
// for nothing. So it asks only for the slots whose tasks' outcomes are written; with a
// limit equal to the worker's concurrency, exactly the room the limit has left.
// Without a recent hold it asks for all n: the limit, if any, is higher.
//
// A worker with one claiming loop (FetchLoops 1: large claims) asks for at most half
// the queue's slots while the limit bites: a claim of every free slot would leave
// nothing to claim until all of its tasks' outcomes were written, so claims and commits
// would take turns; by halves, one half is claimed while the other's outcomes are
// written (measured at Concurrency 1,000: docs/performance.md "Flow control (session
// 10)"). Two loops (smaller claims) overlap already: one claims while the other waits.
func (f *fetcher) roomForClaim(n int) int {
	if !f.concurrencyHeldRecently() {
		return n
	}
	room := max(0, n-int(f.uncommitted.Load()))
	if f.w.cfg.FetchLoops == 1 {
		room = min(room, max(1, (f.w.capacity.limit(f.queue)+1)/2))
	}
	return room
}

// waitCommitted waits, after a claim held back by a concurrency limit or when
// roomForClaim left nothing to claim, until an outcome of the queue is written, or
// heldRetry (another process's task may have ended); it reports whether ctx is alive.
func (f *fetcher) waitCommitted(ctx context.Context) bool {
	// A commit signalled while the claim ran is not dropped: the claim may have counted
	// before that commit (one needless claim at worst, never a lost wake-up). Finished
	// tasks count against the limit until their outcomes are written: have the committer
	// write what it holds now rather than after its interval.
	f.w.committer.expedite()
	t := time.NewTimer(loop.Jitter(heldRetry))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-f.committed:
	case <-t.C:
	}
	return true
}

// notifyCommitted tells the fetcher that an outcome of its queue was committed (a task
// of the queue stopped running), without blocking.
func (f *fetcher) notifyCommitted() {
	select {
	case f.committed <- struct{}{}:
	default:
	}
}

// waitHeld waits after a claim held back by r.HeldBack, as the comment above says; it
// reports whether ctx is alive.
func (f *fetcher) waitHeld(ctx context.Context, r store.ClaimReport) bool {
	var d time.Duration
	var woken <-chan struct{}
	switch r.HeldBack {
	case store.HeldByRate, store.HeldByGroupRate:
		d = min(max(r.RetryIn, time.Millisecond), heldMaxWait)
		d += time.Duration(rand.Int64N(int64(d/20) + int64(time.Millisecond))) // spread the workers a little
	case store.HeldByPause:
		d, woken = loop.Jitter(f.w.cfg.PollInterval), f.wake
	default: // concurrency, group_concurrency
		f.markConcurrencyHeld()
		return f.waitCommitted(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-woken:
	case <-t.C:
	}
	return true
}
