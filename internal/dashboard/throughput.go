package dashboard

import (
	"context"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// The overview's chart shows the last hour per minute. Counting an hour of completions
// costs what the hour holds (tens of thousands of rows on a busy system) and every open
// overview asks once a second, so minutes that have ended are kept: each refresh asks the
// store only for the minutes since the last kept one, usually just the current minute.
// A kept minute can still change (a replay takes a task out of it, retention deletes old
// ones), so everything is recounted every fullRefresh.

const (
	chartBucket  = time.Minute
	chartBuckets = 60
	// settleDelay: a minute is kept only once it ended this long ago, so that completions
	// stamped by the database's clock inside it (and committed a little later) are in.
	settleDelay = 10 * time.Second
	fullRefresh = 10 * time.Minute
)

type throughputCache struct {
	insights store.Insights

	mu       sync.Mutex
	kept     map[time.Time]store.ThroughputBucket // ended minutes, by start
	keptTill time.Time                            // every minute before this is in kept
	resetAt  time.Time                            // when kept is next thrown away
}

func newThroughputCache(in store.Insights) *throughputCache {
	return &throughputCache{insights: in, kept: map[time.Time]store.ThroughputBucket{}}
}

// lastHour returns chartBuckets per-minute buckets ending with the one holding now,
// oldest first, zero counts included.
func (c *throughputCache) lastHour(ctx context.Context, now time.Time) ([]store.ThroughputBucket, error) {
	now = now.UTC()
	first := now.Truncate(chartBucket).Add(-(chartBuckets - 1) * chartBucket)

	c.mu.Lock()
	defer c.mu.Unlock()
	if now.After(c.resetAt) || c.keptTill.After(now) {
		c.kept = map[time.Time]store.ThroughputBucket{}
		c.keptTill = time.Time{}
		c.resetAt = now.Add(fullRefresh)
	}
	from := first
	if c.keptTill.After(from) {
		from = c.keptTill
	}
	fresh, err := c.insights.Throughput(ctx, from, chartBucket)
	if err != nil {
		return nil, err
	}
	got := make(map[time.Time]store.ThroughputBucket, len(fresh))
	for _, b := range fresh {
		got[b.Start] = b
	}
	// Keep the minutes that ended settleDelay ago or earlier, empty ones too.
	settled := now.Add(-settleDelay).Truncate(chartBucket)
	for m := from; m.Before(settled); m = m.Add(chartBucket) {
		c.kept[m] = got[m]
	}
	if settled.After(c.keptTill) {
		c.keptTill = settled
	}
	for m := range c.kept {
		if m.Before(first) {
			delete(c.kept, m)
		}
	}

	out := make([]store.ThroughputBucket, chartBuckets)
	for i := range out {
		m := first.Add(time.Duration(i) * chartBucket)
		b, ok := c.kept[m]
		if !ok {
			b = got[m]
		}
		b.Start = m
		out[i] = b
	}
	return out, nil
}
