package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// wakeClaimers is how many loops per poll-mode queue claim only when a wake-up comes
// (besides the FetchLoops loops).
//
// Under a steady load (tasks created one by one while the worker works them), a
// queue's loops take turns: a wake-up that comes while every loop is in a claim waits
// for one to end, then for its own claim, a commit's WAL flush each. Measured with the
// bench's steady workload (3,000 tasks/s asked, load 8-9): commit -> claim start p50
// 12.1 ms with the default two loops, 3.9 ms with four. A wake claimer answers such a
// wake-up at once. It hears the wake-ups of new tasks (the listener, the idle watcher,
// the reaper, an outage's end: fetcher.notify), never a loop's "backlog" nudge
// (notifyLoops), and leaves a wake-up to the loops whenever one of them waits for it,
// claims a backlog (it claims again at once anyway; a drain's claims would only get
// smaller and more numerous), or waits on a setting that holds the queue back. So a
// drain claims as before, and a worker whose FetchLoops is 1 (a claim of 500 or more)
// still answers a trickle at once.
const wakeClaimers = 2

// runWakeClaimer is one wake claimer of f's queue (wakeClaimers).
func (f *fetcher) runWakeClaimer(ctx context.Context) {
	cfg := &f.w.cfg
	var loop claimLoop
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wakeExtra:
		}
		if f.waiting.Load() > 0 || f.backlogLoops.Load() > 0 || f.held.Load() {
			// A loop takes this wake-up (it heard it too), or claims again at once
			// anyway, or waits on a setting that holds the queue back (heldback.go).
			continue
		}
		n := f.w.capacity.reserve(f.queue, wokenClaimSize(f.claimSize()))
		if k := f.roomForClaim(n); k < n {
			f.w.capacity.release(f.queue, n-k)
			n = k
		}
		if n == 0 {
			// Every slot is busy, or a concurrency limit holds claims back: the loops
			// wait for slots and commits (waitForSlots, waitCommitted).
			continue
		}
		start := time.Now()
		tasks, err := f.claim(ctx, n, &loop)
		cfg.Observer.ClaimDone(f.queue, len(tasks), time.Since(start), err)
		if err != nil {
			f.w.capacity.release(f.queue, n)
			f.w.counters.claimErrors.Add(1)
			if errors.Is(err, store.ErrInvalid) {
				f.w.fail(fmt.Errorf("claim tasks of queue %q: %w", f.queue, err))
				return
			}
			// The loops retry with backoff (they heard the wake-up too); an outage's
			// end wakes everyone.
			f.w.log.Warn("claim tasks failed", "queue", f.queue, "error", err)
			f.w.outage.report()
			continue
		}
		f.w.capacity.release(f.queue, n-len(tasks))
		for _, t := range tasks {
			f.w.executor.start(Delivery{Task: t, claimSpan: loop.claimSpan})
		}
		f.held.Store(loop.report.HeldBack != "")
		if len(tasks) == n || loop.report.HeldBack != "" {
			// A backlog, or a setting that holds claims back: the loops know how to
			// follow either (waitForSlots, waitHeld).
			f.notifyLoops()
		}
	}
}
