package dashboard

import (
	"context"
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// sharedStats lets the overviews that many open browsers poll at once share one Stats
// query: a live-update fetch reuses a result younger than statsReuse, and callers that
// arrive while a query runs wait for it. A full page load always queries afresh, so a
// page shown after an action reflects it.
//
// Stats is linear in finished tasks (about 1-1.5 s at 10M), and open pages poll every
// second: a result is also reused for statsReuseFactor times as long as its query took,
// so that polling pages keep the database busy at most a sixth of the time, however
// large the table.
type sharedStats struct {
	st  store.Store
	now func() time.Time

	mu      sync.Mutex
	at      time.Time // when val was read; zero = never
	took    time.Duration
	val     []store.QueueStats
	running chan struct{} // closed when the running query ends; nil when none runs
}

const (
	statsReuse       = 500 * time.Millisecond
	statsReuseFactor = 5
)

// reuseFor is how long the last result answers live fetches.
func (s *sharedStats) reuseFor() time.Duration {
	return max(statsReuse, statsReuseFactor*s.took)
}

func newSharedStats(st store.Store, now func() time.Time) *sharedStats {
	return &sharedStats{st: st, now: now}
}

func (s *sharedStats) get(ctx context.Context, reuse bool) ([]store.QueueStats, error) {
	if !reuse {
		return s.st.Stats(ctx)
	}
	for {
		s.mu.Lock()
		if !s.at.IsZero() && s.now().Sub(s.at) < s.reuseFor() {
			v := s.val
			s.mu.Unlock()
			return v, nil
		}
		if wait := s.running; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		s.running = done
		s.mu.Unlock()

		start := s.now()
		v, err := s.st.Stats(ctx)
		s.mu.Lock()
		if err == nil {
			s.val, s.at = v, s.now()
			s.took = s.at.Sub(start)
		}
		s.running = nil
		close(done)
		s.mu.Unlock()
		return v, err
	}
}
