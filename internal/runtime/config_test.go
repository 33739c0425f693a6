package runtime

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

func TestConfigDefaults(t *testing.T) {
	cfg := Config{}.withDefaults()
	if cfg.Concurrency != 1000 || cfg.FetchBatch != 1000 || cfg.PollInterval != time.Second ||
		cfg.LeaseDuration != 30*time.Second || cfg.HeartbeatInterval != 10*time.Second ||
		cfg.DefaultTimeout != 15*time.Minute || cfg.BackoffBase != time.Second || cfg.BackoffMax != time.Hour ||
		cfg.ReapInterval != 5*time.Second || cfg.ShutdownGrace != 10*time.Second ||
		cfg.CommitBatch != 1000 || cfg.CommitInterval != time.Millisecond ||
		cfg.ClaimFrom != store.StatusPending || cfg.Logger != slog.Default() {
		t.Fatalf("defaults = %+v", cfg)
	}
	if len(cfg.Queues) != 1 || cfg.Queues["default"] != 1000 {
		t.Fatalf("Queues = %v", cfg.Queues)
	}
	if parts := strings.Split(cfg.WorkerID, "-"); len(parts) < 3 {
		t.Fatalf("WorkerID = %q, want host-pid-random", cfg.WorkerID)
	}
	if got := (Config{LeaseDuration: 9 * time.Second}).withDefaults().HeartbeatInterval; got != 3*time.Second {
		t.Fatalf("HeartbeatInterval follows LeaseDuration: got %s", got)
	}
	q := (Config{Concurrency: 4, Queues: map[string]int{"a": 0, "b": 2, "c": 9}}).withDefaults()
	if q.queueLimit("a") != 4 || q.queueLimit("b") != 2 || q.queueLimit("c") != 4 {
		t.Fatalf("queue limits: %d %d %d", q.queueLimit("a"), q.queueLimit("b"), q.queueLimit("c"))
	}
}

func TestCapacity(t *testing.T) {
	c := newCapacity(5, map[string]int{"a": 3, "b": 5})
	if n := c.reserve("a", 10); n != 3 {
		t.Fatalf("reserve a = %d, want 3 (queue limit)", n)
	}
	if n := c.reserve("b", 10); n != 2 {
		t.Fatalf("reserve b = %d, want 2 (total limit)", n)
	}
	if n := c.reserve("a", 1); n != 0 {
		t.Fatalf("reserve a when full = %d", n)
	}
	c.release("a", 1)
	select {
	case <-c.freed("b"): // a freed slot of the total wakes every queue
	default:
		t.Fatal("release did not signal queue b")
	}
	if n := c.reserve("b", 10); n != 1 {
		t.Fatalf("reserve b after release = %d, want 1", n)
	}
}

// A task's first heartbeat may come up to 1.5 intervals after its claim (one claimed
// just after a tick is skipped at the next), so an interval above half the lease lets the
// lease expire first and another worker run the task too.
func TestHeartbeatIntervalAtMostHalfTheLease(t *testing.T) {
	base := Config{Store: memory.New(), Mux: NewMux(), LeaseDuration: 30 * time.Second}
	for _, hb := range []time.Duration{10 * time.Second, 15 * time.Second} {
		cfg := base
		cfg.HeartbeatInterval = hb
		cfg = cfg.withDefaults()
		if err := cfg.validate(); err != nil {
			t.Errorf("heartbeat %s with lease 30s: %v", hb, err)
		}
	}
	for _, hb := range []time.Duration{15*time.Second + time.Millisecond, 25 * time.Second, 30 * time.Second} {
		cfg := base
		cfg.HeartbeatInterval = hb
		cfg = cfg.withDefaults()
		err := cfg.validate()
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "HeartbeatInterval ("+hb.String()+")") ||
			!strings.Contains(err.Error(), "LeaseDuration (30s)") {
			t.Errorf("heartbeat %s with lease 30s: err = %v, want ErrInvalid naming both", hb, err)
		}
	}
}

// The heartbeat loop measures a task's lease from when the store granted it, not from
// when its handler started, which may be later (a Source that claims before it returns).
func TestLastBeatIsTheLeaseStart(t *testing.T) {
	now := time.Now()
	lease := 30 * time.Second
	expires := now.Add(20 * time.Second) // claimed 10s ago
	if got := leaseStart(&store.Task{LeaseExpiresAt: &expires}, now, lease); !got.Equal(now.Add(-10 * time.Second)) {
		t.Errorf("leaseStart of a lease granted 10s ago = %s before now", now.Sub(got))
	}
	// A store clock ahead of this one must not push the first beat later.
	ahead := now.Add(40 * time.Second)
	if got := leaseStart(&store.Task{LeaseExpiresAt: &ahead}, now, lease); !got.Equal(now) {
		t.Errorf("leaseStart with the store's clock ahead = %s, want now", got)
	}
	if got := leaseStart(&store.Task{}, now, lease); !got.Equal(now) {
		t.Errorf("leaseStart without an expiry = %s, want now", got)
	}
}

// TestClaimSizeFollowsCapacity: a claim asks for the free capacity, up to FetchBatch;
// with several queues, for an equal share of the slots at most.
func TestClaimSizeFollowsCapacity(t *testing.T) {
	for _, tc := range []struct {
		concurrency, fetchBatch int
		queues                  []string
		want                    int
	}{
		{100, 0, []string{"default"}, 100},
		{2000, 0, []string{"default"}, DefaultFetchBatch},
		{2000, 300, []string{"default"}, 300},
		{100, 0, []string{"a", "b", "c", "d"}, 25},
		{3, 0, []string{"a", "b", "c", "d"}, 1},
	} {
		queues := map[string]int{}
		for _, q := range tc.queues {
			queues[q] = 0
		}
		w, err := NewWorker(Config{Store: memory.New(), Mux: NewMux(), Concurrency: tc.concurrency,
			FetchBatch: tc.fetchBatch, Queues: queues})
		if err != nil {
			t.Fatal(err)
		}
		if got := w.fetchers[tc.queues[0]].claimSize(); got != tc.want {
			t.Errorf("concurrency %d, fetch batch %d, %d queues: claim size %d, want %d",
				tc.concurrency, tc.fetchBatch, len(tc.queues), got, tc.want)
		}
	}
}

// TestFetchLoopsDefault: two claiming loops while claims are small, one when they are
// large; a Source has its own default.
func TestFetchLoopsDefault(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want int
	}{
		{Config{}, 1},
		{Config{Concurrency: 100}, 2},
		{Config{Concurrency: 2000}, 1},
		{Config{Concurrency: 2000, FetchBatch: 100}, 2},
		{Config{Concurrency: 100, FetchLoops: 3}, 3},
	} {
		if got := tc.cfg.withDefaults().FetchLoops; got != tc.want {
			t.Errorf("Concurrency %d, FetchBatch %d, FetchLoops %d: default FetchLoops %d, want %d",
				tc.cfg.Concurrency, tc.cfg.FetchBatch, tc.cfg.FetchLoops, got, tc.want)
		}
	}
}
