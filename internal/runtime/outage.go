package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/loop"
)

// Outage resumption (issue #12 item 11). When a store call fails, the worker probes the
// store every few tens of milliseconds (Store.Ping: a connection refused by a server that
// is down costs microseconds) instead of waiting out its error backoff, and a resumed
// LISTEN connection triggers a probe at once. The first probe that succeeds after one failed
// ends the outage, in this order:
//
//  1. the committer's retry wakes and writes the outcomes it held through the outage,
//  2. the leases of the tasks still running here are extended,
//  3. every fetcher claims.
//
// So the outcomes of work done during the outage reach the database before new work is
// claimed, and before the lease of a task whose outcome waits here could be taken by a
// reaper (this worker's own reaper never takes them: it excludes the tasks it holds).
const (
	// probeInterval paces the probes of an outage's first probeFastFor; probeIntervalLong
	// the rest (jittered), so that a fleet of workers does not make a recovering server
	// fork thousands of backends a second just to refuse them. Claims resume within
	// about one interval of the database accepting connections: under 100 ms.
	probeInterval     = 20 * time.Millisecond
	probeIntervalLong = 50 * time.Millisecond
	probeFastFor      = time.Second
	// probeTimeout bounds one probe (a server that accepts connections but hangs).
	probeTimeout = time.Second
	// recoveryBound bounds steps 1 and 2: claims resume after it even if the writes are
	// still failing (their own retries go on).
	recoveryBound = 2 * time.Second
)

// outage tracks whether the store is reachable; see the comment above.
type outage struct {
	w   *Worker
	ctx context.Context // set by Run: the probe's context (the heartbeats' lifetime)

	mu      sync.Mutex
	probing bool
	stopped bool           // Run is returning: no new probes
	probes  sync.WaitGroup // the probe loop, waited for by stop
	back    chan struct{}  // closed when the store answers again after a failed probe
	poke    chan struct{}  // buffer 1: probe now (the LISTEN connection is back)
}

func newOutage(w *Worker) *outage {
	return &outage{w: w, back: make(chan struct{}), poke: make(chan struct{}, 1)}
}

// report says a store call failed, and returns a channel closed when the store is back
// after an outage. It starts probing unless a probe loop runs already. A failure that is
// not an outage (the first probe succeeds) never closes the channel: the caller's own
// backoff applies.
func (o *outage) report() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.probing && !o.stopped && o.ctx != nil {
		o.probing = true
		o.probes.Go(o.probe)
	}
	return o.back
}

// stop waits for a running probe loop (its ctx has ended) and prevents new ones.
func (o *outage) stop() {
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
	o.probes.Wait()
}

// resumed is the listener's news that its connection is back: probe now.
func (o *outage) resumed() {
	select {
	case o.poke <- struct{}{}:
	default:
	}
}

// wait sleeps for d, or until the store is back (back closed), or ctx ends; it reports
// whether the store came back and whether ctx is still alive.
func (o *outage) wait(ctx context.Context, back <-chan struct{}, d time.Duration) (isBack, alive bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, false
	case <-back:
		return true, ctx.Err() == nil
	case <-t.C:
		return false, ctx.Err() == nil
	}
}

// probe pings the store until it answers, then, if a ping had failed, recovers.
func (o *outage) probe() {
	ctx := o.ctx
	down := false
	var downSince time.Time
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := o.w.cfg.Store.Ping(pctx)
		cancel()
		if err == nil {
			break
		}
		if !down {
			down, downSince = true, time.Now()
			o.w.log.Warn("store unreachable; probing until it answers", "every", probeInterval, "error", err)
		}
		every := probeInterval
		if time.Since(downSince) > probeFastFor {
			every = loop.Jitter(probeIntervalLong)
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-o.poke:
		}
		t.Stop()
	}
	o.mu.Lock()
	o.probing = false
	back := o.back
	if down {
		o.back = make(chan struct{})
	}
	o.mu.Unlock()
	if down && ctx.Err() == nil {
		o.w.log.Info("store reachable again; writing held outcomes and heartbeats, then claiming",
			"down_for", time.Since(downSince).Round(time.Millisecond))
		o.recover(ctx, back)
	}
}

// recover runs the three steps of the comment at the top, in order.
func (o *outage) recover(ctx context.Context, back chan struct{}) {
	w := o.w
	close(back) // 1: wakes the committer's retry (and any other waiter)
	bctx, cancel := context.WithTimeout(ctx, recoveryBound)
	defer cancel()
	w.committer.waitHeld(bctx)
	w.heartbeat.beatAll(bctx) // 2
	for _, f := range w.fetchers {
		f.notify() // 3
	}
}
