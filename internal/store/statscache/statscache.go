// Package statscache shares one Store.Stats query among everyone who asks at once: the
// API's /api/stats, the dashboard's overviews (every open tab polls every second) and
// the Prometheus queue gauges. Stats counts every task, so it is linear in the table
// (about a second at 10 million tasks, docs/performance.md); run once per caller it
// would keep the database busy in proportion to the open browser tabs.
//
// A Cache runs at most one query at a time (callers that arrive while it runs wait for
// it) and answers from the last result while it is young: younger than the caller's
// minimum, or than ReuseFactor times as long as the query took, so that callers polling
// in a loop keep the database busy at most 1/ReuseFactor of the time however large the
// table.
package statscache

import (
	"context"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// ReuseFactor: a result answers for this many times as long as its query took.
const ReuseFactor = 5

// Source is what a Cache reads: a store.
type Source interface {
	Stats(ctx context.Context) ([]store.QueueStats, error)
}

// Cache is one shared, single-flight Stats result. The zero value is not usable; use New.
type Cache struct {
	src Source
	now func() time.Time

	mu      sync.Mutex
	at      time.Time // when val was read; zero = never
	took    time.Duration
	val     []store.QueueStats
	running chan struct{} // closed when the running query ends; nil when none runs
}

// New returns a Cache reading src; now is the clock (nil = time.Now).
func New(src Source, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{src: src, now: now}
}

// Stats is Get with no minimum reuse: a result is reused only for ReuseFactor times as
// long as its query took (milliseconds on a small table, seconds on a large one). It
// makes a Cache a Source (the queue gauges read it).
func (c *Cache) Stats(ctx context.Context) ([]store.QueueStats, error) {
	return c.Get(ctx, 0)
}

// Get returns the last result if it is younger than max(reuse, ReuseFactor x its
// query's time), else waits for the running query or runs one. Callers must not modify
// the result.
func (c *Cache) Get(ctx context.Context, reuse time.Duration) ([]store.QueueStats, error) {
	for {
		c.mu.Lock()
		if !c.at.IsZero() && c.now().Sub(c.at) < max(reuse, ReuseFactor*c.took) {
			v := c.val
			c.mu.Unlock()
			return v, nil
		}
		if wait := c.running; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		c.running = done
		c.mu.Unlock()

		start := c.now()
		v, err := c.src.Stats(ctx)
		c.mu.Lock()
		if err == nil {
			c.val, c.at = v, c.now()
			c.took = c.at.Sub(start)
		}
		c.running = nil
		close(done)
		c.mu.Unlock()
		return v, err
	}
}
