package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// countingStats is a store whose Stats query blocks until released and is counted.
type countingStats struct {
	store.Store
	calls   atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func (c *countingStats) Stats(ctx context.Context) ([]store.QueueStats, error) {
	c.calls.Add(1)
	c.entered <- struct{}{}
	<-c.release
	return c.Store.Stats(ctx)
}

// TestStatsRequestsShareOneQuery: Stats is linear in the table (a second at 10 million
// tasks); clients polling /api/stats at once (dashboards, scripts) share one query
// instead of running one each.
func TestStatsRequestsShareOneQuery(t *testing.T) {
	st := &countingStats{Store: memory.New(), entered: make(chan struct{}, 10), release: make(chan struct{})}
	srv, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var inFlight atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := http.Get(ts.URL + "/api/stats")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET /api/stats: %d", resp.StatusCode)
			}
		})
	}
	<-st.entered // one query runs; the other requests wait for it
	poll.Until(t, "all 8 requests in the server", 10*time.Second, time.Millisecond, func() bool { return inFlight.Load() == 8 })
	close(st.release)
	wg.Wait()
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("%d Stats queries for 8 concurrent requests, want 1", n)
	}
}
