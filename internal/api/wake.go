package api

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// waker shares one Store.WaitForTasks subscription among all waiting claims and wakes
// those of the notified queue. One subscription per server rather than per request
// matters: the PostgreSQL store opens a dedicated LISTEN connection for each.
//
// The subscription starts with the first waiting claim and lives until the server
// closes. If it fails (or the store closes its channel) waiting claims fall back to
// their poll tick, and the next claim to wait tries again after resubscribeDelay.
type waker struct {
	ctx   context.Context // the server's lifetime
	store store.Store
	log   *slog.Logger

	mu      sync.Mutex
	running bool
	closed  bool // no new subscription may start
	retryAt time.Time
	waiters map[string]map[chan struct{}]struct{} // queue -> waiting claims
	wg      sync.WaitGroup
}

const resubscribeDelay = time.Second

func newWaker(ctx context.Context, st store.Store, log *slog.Logger) *waker {
	return &waker{ctx: ctx, store: st, log: log, waiters: map[string]map[chan struct{}]struct{}{}}
}

// subscribe returns a channel that receives a value after due tasks arrive in queue, and
// the function that ends the subscription.
func (k *waker) subscribe(queue string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1) // one pending wake-up is enough: the claim takes all
	k.mu.Lock()
	defer k.mu.Unlock()
	set := k.waiters[queue]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		k.waiters[queue] = set
	}
	set[ch] = struct{}{}
	if !k.running && !k.closed && !time.Now().Before(k.retryAt) {
		k.running = true
		k.wg.Add(1)
		go k.run()
	}
	return ch, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		delete(set, ch)
		if len(set) == 0 { // set is still k.waiters[queue]: it held ch until now
			delete(k.waiters, queue)
		}
	}
}

// run relays the store's wake-ups until the server closes or the subscription ends.
func (k *waker) run() {
	defer k.wg.Done()
	ch, err := k.store.WaitForTasks(k.ctx)
	if err != nil && k.ctx.Err() == nil {
		k.log.Warn("api: cannot subscribe to task wake-ups; waiting claims poll instead", "error", err)
	}
	if err == nil {
		for queue := range ch {
			k.wake(queue)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running = false
	k.retryAt = time.Now().Add(resubscribeDelay)
}

func (k *waker) wake(queue string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for ch := range k.waiters[queue] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// close waits for the subscription to end; call it after cancelling ctx. Marking the
// waker closed under mu first means no run can start while wg is waited on.
func (k *waker) close() {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	k.wg.Wait()
}
