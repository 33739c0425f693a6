package metrics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// countingStats serves fixed stats (or an error) and counts the queries.
type countingStats struct {
	stats []store.QueueStats
	err   error
	calls atomic.Int64
}

func (c *countingStats) Stats(context.Context) ([]store.QueueStats, error) {
	c.calls.Add(1)
	return c.stats, c.err
}

// The gauges say what Stats says: every status of every queue (0 included), the age of
// the oldest due task and the expired leases.
func TestQueueCollectorGauges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	oldest := now.Add(-90 * time.Second)
	src := &countingStats{stats: []store.QueueStats{
		{Queue: "default", Counts: map[store.Status]int64{store.StatusPending: 4, store.StatusProcessing: 2, store.StatusDead: 1},
			OldestDueAt: &oldest, ExpiredLeases: 1},
		{Queue: "emails", Counts: map[store.Status]int64{store.StatusSucceeded: 7}},
	}}
	c := metrics.NewQueueCollector(metrics.QueueCollectorConfig{Store: src, Now: func() time.Time { return now }, Logger: quietLog})

	want := `
# HELP rota_queue_expired_leases PROCESSING tasks of the queue whose lease has expired (their worker is gone or stuck).
# TYPE rota_queue_expired_leases gauge
rota_queue_expired_leases{queue="default"} 1
rota_queue_expired_leases{queue="emails"} 0
# HELP rota_queue_oldest_due_age_seconds Age of the oldest due PENDING task of the queue (0 when none is due).
# TYPE rota_queue_oldest_due_age_seconds gauge
rota_queue_oldest_due_age_seconds{queue="default"} 90
rota_queue_oldest_due_age_seconds{queue="emails"} 0
# HELP rota_queue_stats_up 1 when the last store query for the rota_queue_* gauges succeeded, 0 when it failed.
# TYPE rota_queue_stats_up gauge
rota_queue_stats_up 1
# HELP rota_queue_tasks Tasks in the store by queue and status.
# TYPE rota_queue_tasks gauge
rota_queue_tasks{queue="default",status="CANCELED"} 0
rota_queue_tasks{queue="default",status="DEAD"} 1
rota_queue_tasks{queue="default",status="ENQUEUED"} 0
rota_queue_tasks{queue="default",status="FAILED"} 0
rota_queue_tasks{queue="default",status="PENDING"} 4
rota_queue_tasks{queue="default",status="PROCESSING"} 2
rota_queue_tasks{queue="default",status="SUCCEEDED"} 0
rota_queue_tasks{queue="emails",status="CANCELED"} 0
rota_queue_tasks{queue="emails",status="DEAD"} 0
rota_queue_tasks{queue="emails",status="ENQUEUED"} 0
rota_queue_tasks{queue="emails",status="FAILED"} 0
rota_queue_tasks{queue="emails",status="PENDING"} 0
rota_queue_tasks{queue="emails",status="PROCESSING"} 0
rota_queue_tasks{queue="emails",status="SUCCEEDED"} 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// Scrapes within the TTL share one query; the next scrape after it queries again. A
// failure is cached too, so a struggling database is not queried on every scrape.
func TestQueueCollectorCachesForTTL(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	src := &countingStats{stats: []store.QueueStats{{Queue: "default", Counts: map[store.Status]int64{store.StatusPending: 1}}}}
	c := metrics.NewQueueCollector(metrics.QueueCollectorConfig{Store: src, TTL: 5 * time.Second, Now: clock, Logger: quietLog})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	for range 10 {
		gather(t, reg)
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("10 scrapes within the TTL made %d queries, want 1", n)
	}
	now.Add(int64(5 * time.Second))
	src.err = errors.New("database is down")
	gather(t, reg)
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("a scrape after the TTL made %d queries in all, want 2", n)
	}
	if got := gaugeValue(t, reg, "rota_queue_stats_up"); got != 0 {
		t.Errorf("rota_queue_stats_up = %v after a failed query, want 0", got)
	}
	if n := testutil.CollectAndCount(c, "rota_queue_tasks"); n != 0 {
		t.Errorf("%d rota_queue_tasks series after a failed query, want none", n)
	}
	if n := src.calls.Load(); n != 2 {
		t.Errorf("scrapes within the TTL of a failure made %d queries in all, want 2", n)
	}
}

// A query that does not answer is cut off at Timeout: the scrape still answers, with
// rota_queue_stats_up 0.
func TestQueueCollectorTimeout(t *testing.T) {
	t.Parallel()
	blocked := statsFunc(func(ctx context.Context) ([]store.QueueStats, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	c := metrics.NewQueueCollector(metrics.QueueCollectorConfig{Store: blocked, Timeout: 20 * time.Millisecond, Logger: quietLog})
	want := `
# HELP rota_queue_stats_up 1 when the last store query for the rota_queue_* gauges succeeded, 0 when it failed.
# TYPE rota_queue_stats_up gauge
rota_queue_stats_up 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// Against a real (memory) store: the gauges count the tasks it holds.
func TestQueueCollectorOnMemoryStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(st.Close)
	if _, err := st.CreateTasks(ctx, []store.CreateParams{{Kind: "a"}, {Kind: "a"}, {Kind: "b", Queue: "emails"}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w",
		Limit: 1, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %d tasks", err, len(claimed))
	}
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken,
		Kind: store.Fail, Error: "no"}}); err != nil {
		t.Fatal(err)
	}
	c := metrics.NewQueueCollector(metrics.QueueCollectorConfig{Store: st, Logger: quietLog})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	for _, tc := range []struct {
		queue, status string
		want          float64
	}{{"default", "PENDING", 1}, {"default", "FAILED", 1}, {"emails", "PENDING", 1}, {"emails", "FAILED", 0}} {
		if got := gaugeValue(t, reg, "rota_queue_tasks", "queue", tc.queue, "status", tc.status); got != tc.want {
			t.Errorf("rota_queue_tasks{%s,%s} = %v, want %v", tc.queue, tc.status, got, tc.want)
		}
	}
}

type statsFunc func(ctx context.Context) ([]store.QueueStats, error)

func (f statsFunc) Stats(ctx context.Context) ([]store.QueueStats, error) { return f(ctx) }

func gather(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	if _, err := g.Gather(); err != nil {
		t.Fatal(err)
	}
}

func gaugeValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	m := find(t, g, name, labels...)
	if m == nil {
		t.Fatalf("no series %s%v", name, labels)
	}
	return m.GetGauge().GetValue()
}
