package runtime

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

func TestConfigDefaults(t *testing.T) {
	cfg := Config{}.withDefaults()
	if cfg.Concurrency != 100 || cfg.FetchBatch != 50 || cfg.PollInterval != time.Second ||
		cfg.LeaseDuration != 30*time.Second || cfg.HeartbeatInterval != 10*time.Second ||
		cfg.DefaultTimeout != 15*time.Minute || cfg.BackoffBase != time.Second || cfg.BackoffMax != time.Hour ||
		cfg.ReapInterval != 5*time.Second || cfg.ShutdownGrace != 10*time.Second ||
		cfg.CommitBatch != 100 || cfg.CommitInterval != 5*time.Millisecond ||
		cfg.ClaimFrom != store.StatusPending || cfg.Logger != slog.Default() {
		t.Fatalf("defaults = %+v", cfg)
	}
	if len(cfg.Queues) != 1 || cfg.Queues["default"] != 100 {
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
