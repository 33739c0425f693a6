package dashboard

import (
	"context"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/statscache"
)

// sharedStats lets the overviews that many open browsers poll at once share one Stats
// query (statscache): a live-update fetch reuses a result younger than statsReuse (or
// than statscache.ReuseFactor times its query's time), and callers that arrive while a
// query runs wait for it. A full page load always queries afresh, so a page shown after
// an action reflects it. The cache may be shared with the API and the queue gauges
// (Config.Stats).
type sharedStats struct {
	st    store.Store
	cache *statscache.Cache
}

const statsReuse = 500 * time.Millisecond

// newSharedStats uses cache, or (nil) a cache of its own on st.
func newSharedStats(st store.Store, now func() time.Time, cache *statscache.Cache) *sharedStats {
	if cache == nil {
		cache = statscache.New(st, now)
	}
	return &sharedStats{st: st, cache: cache}
}

func (s *sharedStats) get(ctx context.Context, reuse bool) ([]store.QueueStats, error) {
	if !reuse {
		return s.st.Stats(ctx)
	}
	return s.cache.Get(ctx, statsReuse)
}
