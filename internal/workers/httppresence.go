package workers

import (
	"context"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// HTTPPresence registers HTTP-protocol workers by their claims (DESIGN.md section 12:
// mode "http", kinds unknown). A worker long-polls claims in a loop, so each worker id
// and queue is written at most once per Interval: the row then stays live as long as
// the worker keeps claiming.
type HTTPPresence struct {
	store    store.WorkerRegistry
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	last map[QueueKind]time.Time // {worker id, queue} -> last registration
}

// NewHTTPPresence returns a registrar; interval 0 = store.DefaultWorkerHeartbeat.
func NewHTTPPresence(st store.WorkerRegistry, interval time.Duration) *HTTPPresence {
	if interval <= 0 {
		interval = store.DefaultWorkerHeartbeat
	}
	return &HTTPPresence{store: st, interval: interval, now: time.Now, last: map[QueueKind]time.Time{}}
}

// Claimed records that workerID claimed from queue (from host), unless it did so
// within the interval. It is cheap when it has nothing to write.
func (p *HTTPPresence) Claimed(ctx context.Context, workerID, queue, host string) error {
	key := QueueKind{Queue: queue, Kind: workerID}
	now := p.now()
	p.mu.Lock()
	if at, ok := p.last[key]; ok && now.Sub(at) < p.interval {
		p.mu.Unlock()
		return nil
	}
	p.last[key] = now
	if len(p.last) > 4*maxEntries { // forget the ids of workers long gone
		for k, at := range p.last {
			if now.Sub(at) >= p.interval {
				delete(p.last, k)
			}
		}
	}
	p.mu.Unlock()
	err := p.store.RegisterWorker(ctx, store.RegisterParams{MergeQueues: true, Worker: store.Worker{
		ID: workerID, Host: host, Mode: store.WorkerModeHTTP, Queues: []string{queue}}})
	if err != nil {
		p.mu.Lock()
		delete(p.last, key) // try again on the next claim
		p.mu.Unlock()
	}
	return err
}
