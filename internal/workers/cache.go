package workers

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// DefaultCacheTTL is how long a cached answer is reused. The registry changes every
// few seconds at most (a worker renews every 10 s, expires after 30 s), so a create
// burst costs one indexed lookup per queue per TTL.
const DefaultCacheTTL = 2 * time.Second

// Cache answers "which workers are live" from the store, reusing each answer for TTL.
// Safe for concurrent use; concurrent misses of one key share one query.
type Cache struct {
	store store.WorkerRegistry
	ttl   time.Duration
	live  time.Duration
	now   func() time.Time

	mu      sync.Mutex
	entries map[string]*entry // by queue; "" = every queue
}

type entry struct {
	ready   chan struct{} // closed once workers and err are set
	at      time.Time
	workers []store.Worker
	err     error
}

// CacheConfig configures a Cache. Zero fields take their defaults.
type CacheConfig struct {
	TTL        time.Duration // default DefaultCacheTTL
	LiveWithin time.Duration // default store.DefaultWorkerExpiry
	Now        func() time.Time
}

// NewCache returns a cache over st.
func NewCache(st store.WorkerRegistry, cfg CacheConfig) *Cache {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultCacheTTL
	}
	if cfg.LiveWithin <= 0 {
		cfg.LiveWithin = store.DefaultWorkerExpiry
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Cache{store: st, ttl: cfg.TTL, live: cfg.LiveWithin, now: cfg.Now, entries: map[string]*entry{}}
}

// All returns every live worker (shared, do not modify).
func (c *Cache) All(ctx context.Context) ([]store.Worker, error) { return c.get(ctx, "") }

// Queue returns the live workers of queue (shared, do not modify).
func (c *Cache) Queue(ctx context.Context, queue string) ([]store.Worker, error) {
	return c.get(ctx, queue)
}

// maxEntries bounds the cache: beyond it, expired entries are dropped.
const maxEntries = 1024

func (c *Cache) get(ctx context.Context, queue string) ([]store.Worker, error) {
	c.mu.Lock()
	e := c.entries[queue]
	if e == nil || c.expired(e) {
		if len(c.entries) >= maxEntries {
			c.dropExpired()
		}
		e = &entry{ready: make(chan struct{}), at: c.now()}
		c.entries[queue] = e
		c.mu.Unlock()
		e.workers, e.err = c.store.ListWorkers(ctx, store.WorkerListParams{Queue: queue, LiveWithin: c.live})
		if e.err != nil {
			c.mu.Lock()
			if c.entries[queue] == e {
				delete(c.entries, queue) // errors are not cached
			}
			c.mu.Unlock()
		}
		close(e.ready)
		return e.workers, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.workers, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Cache) expired(e *entry) bool {
	select {
	case <-e.ready:
		return c.now().Sub(e.at) >= c.ttl
	default:
		return false // in flight: share it
	}
}

func (c *Cache) dropExpired() {
	for q, e := range c.entries {
		if c.expired(e) {
			delete(c.entries, q)
		}
	}
}

// CountByQueue counts the live workers of each queue.
func CountByQueue(ws []store.Worker) map[string]int {
	n := map[string]int{}
	for _, w := range ws {
		for _, q := range w.Queues {
			n[q]++
		}
	}
	return n
}

// Unserved returns, sorted, the queues of stats that hold due tasks (a due PENDING
// task, or ENQUEUED tasks waiting for an SQS worker) and have no live worker in ws: their
// tasks wait for good unless a worker comes (DESIGN.md section 12).
func Unserved(stats []store.QueueStats, ws []store.Worker) []string {
	served := CountByQueue(ws)
	var out []string
	for _, q := range stats {
		due := q.OldestDueAt != nil || q.Counts[store.StatusEnqueued] > 0
		if due && served[q.Queue] == 0 {
			out = append(out, q.Queue)
		}
	}
	slices.Sort(out)
	return out
}
