package runtime_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// flowBacklog is the backlog each variant of BenchmarkDrainFlowControlPostgres drains.
const flowBacklog = 20_000

// BenchmarkDrainFlowControlPostgres is the cost of flow control (issue #14,
// docs/performance.md "Flow control"): a worker at its default concurrency drains
// a backlog of noop tasks from PostgreSQL in poll mode, from a queue
//
//   - unlimited: no settings, no group keys (the plain claim);
//   - concurrency: concurrency = the worker's concurrency (every claim goes through
//     rota.claim_limited, under the queue's lock);
//   - groups: 1,000 groups (round robin) and group_concurrency 10 (the fair walk, and
//     a count per group).
//
// Every iteration drains all three, in an order that rotates, so that a shared
// machine's changing load falls on each alike; the ratios to unlimited are reported.
// Run with
//
//	go test -run '^$' -bench DrainFlowControlPostgres -benchtime 3x ./internal/runtime/
//
// ROTA_FLOW_BENCH_ONLY (say "concurrency" or "groups") drains only unlimited and that
// variant, to look at one with pg_stat_activity or pprof.
//
// ROTA_FLOW_BENCH_ALTERNATE="a.sql,b.sql" compares two versions of the limited claim's
// SQL in one process, so that the machine's load falls on both alike: before the
// limited variants of even iterations it runs a.sql, of odd ones b.sql (each a script
// that installs its version, say a migration's up file), and reports each limited
// variant's rate and ratio per script (-a, -b), against the unlimited drains of the
// same iterations. Use an even -benchtime.
func BenchmarkDrainFlowControlPostgres(b *testing.B) {
	type variant struct {
		queue  string
		patch  *store.QueuePatch
		groups int
	}
	variants := []variant{
		{"unlimited", nil, 0},
		{"concurrency", &store.QueuePatch{Concurrency: &store.Change[int]{To: new(benchConcurrency())}}, 0},
		{"groups", &store.QueuePatch{GroupConcurrency: &store.Change[int]{To: new(10)}}, 1000},
	}
	if only := os.Getenv("ROTA_FLOW_BENCH_ONLY"); only != "" {
		variants = slices.DeleteFunc(variants, func(v variant) bool {
			return v.queue != "unlimited" && v.queue != only
		})
	}
	pool := pgtest.NewPoolConns(b, 16)
	st := postgres.New(pool)
	defer st.Close()
	ctx := context.Background()
	for _, v := range variants {
		if v.patch != nil {
			if _, err := st.UpdateQueueSettings(ctx, v.queue, *v.patch); err != nil {
				b.Fatal(err)
			}
		}
	}
	var done atomic.Int64
	var finished chan struct{}
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
		if done.Add(1) == flowBacklog {
			close(finished)
		}
		return nil
	})
	alternate := loadAlternates(b)
	elapsed := make([]time.Duration, len(variants))
	obs := make([]claimCounter, len(variants))
	// With alternates: elapsed time per script, [script][variant].
	altElapsed := [2][]time.Duration{make([]time.Duration, len(variants)), make([]time.Duration, len(variants))}
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		for k := range variants {
			j := (i + k) % len(variants)
			v := variants[j]
			if alternate != nil && v.patch != nil {
				if _, err := pool.Exec(ctx, alternate[i%2]); err != nil {
					b.Fatalf("alternate script %d: %v", i%2, err)
				}
			}
			fillGroupedBacklog(b, pool, st, v.queue, v.groups)
			done.Store(0)
			finished = make(chan struct{})
			w, err := runtime.NewWorker(runtime.Config{Store: st, Mux: mux, Observer: &obs[j],
				Queues: map[string]int{v.queue: benchConcurrency()},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			wctx, cancel := context.WithCancel(ctx)
			ran := make(chan error, 1)
			b.StartTimer()
			start := time.Now()
			go func() { ran <- w.Run(wctx) }()
			<-finished
			waitAllSucceeded(b, pool, flowBacklog)
			elapsed[j] += time.Since(start)
			altElapsed[i%2][j] += time.Since(start)
			b.StopTimer()
			cancel()
			if err := <-ran; err != nil {
				b.Fatal(err)
			}
		}
	}
	rate := func(j int) float64 { return float64(flowBacklog*b.N) / elapsed[j].Seconds() }
	for j, v := range variants {
		b.ReportMetric(rate(j), v.queue+"-tasks/s")
		b.ReportMetric(float64(obs[j].held.Load())/float64(b.N), v.queue+"-held/drain")
		if claims := obs[j].claims.Load(); claims > 0 {
			b.ReportMetric(float64(claims)/float64(b.N), v.queue+"-claims/drain")
			b.ReportMetric(float64(obs[j].claimTime.Load())/float64(claims)/1e6, v.queue+"-ms/claim")
		}
		if j > 0 {
			b.ReportMetric(rate(j)/rate(0), v.queue+"/unlimited")
		}
	}
	if alternate != nil {
		for a, name := range []string{"a", "b"} {
			runs := (b.N + 1 - a) / 2 // iterations of script a: even ones, b: odd ones
			for j, v := range variants[1:] {
				limited := float64(flowBacklog*runs) / altElapsed[a][j+1].Seconds()
				unlimited := float64(flowBacklog*runs) / altElapsed[a][0].Seconds()
				b.ReportMetric(limited, v.queue+"-tasks/s-"+name)
				b.ReportMetric(limited/unlimited, v.queue+"/unlimited-"+name)
			}
		}
	}
}

// benchConcurrency is the worker's concurrency: runtime.DefaultConcurrency, or
// ROTA_FLOW_BENCH_CONCURRENCY (to look at another size without editing the default);
// the concurrency variant's limit follows it.
func benchConcurrency() int {
	if n, err := strconv.Atoi(os.Getenv("ROTA_FLOW_BENCH_CONCURRENCY")); err == nil && n > 0 {
		return n
	}
	return runtime.DefaultConcurrency
}

// loadAlternates reads ROTA_FLOW_BENCH_ALTERNATE's two scripts (nil when unset).
func loadAlternates(b *testing.B) []string {
	files := os.Getenv("ROTA_FLOW_BENCH_ALTERNATE")
	if files == "" {
		return nil
	}
	names := strings.Split(files, ",")
	if len(names) != 2 {
		b.Fatalf("ROTA_FLOW_BENCH_ALTERNATE: want two scripts a.sql,b.sql, got %q", files)
	}
	scripts := make([]string, 2)
	for i, name := range names {
		text, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		scripts[i] = string(text)
	}
	return scripts
}

// fillGroupedBacklog empties the table and inserts flowBacklog due noop tasks of queue,
// spread round robin over groups group keys (0: none), then vacuums.
func fillGroupedBacklog(b *testing.B, pool *pgxpool.Pool, st store.Store, queue string, groups int) {
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`); err != nil {
		b.Fatal(err)
	}
	params := make([]store.CreateParams, 5000)
	for n := 0; n < flowBacklog; n += len(params) {
		for i := range params {
			params[i] = store.CreateParams{ID: store.NewID(), Queue: queue, Kind: "noop", ScheduledFor: time.Now().Add(-time.Second)}
			if groups > 0 {
				params[i].GroupKey = fmt.Sprintf("tenant-%d", (n+i)%groups)
			}
		}
		if _, err := st.CreateTasks(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE rota.tasks`); err != nil {
		b.Fatal(err)
	}
}

// claimCounter counts a worker's claims, their time (the store's call, lock waits
// included) and those held back by a queue setting.
type claimCounter struct {
	runtime.NopObserver
	held      atomic.Int64
	claims    atomic.Int64
	claimTime atomic.Int64 // nanoseconds
}

func (c *claimCounter) ClaimHeldBack(string, store.HoldBack) { c.held.Add(1) }

func (c *claimCounter) ClaimDone(_ string, _ int, took time.Duration, _ error) {
	c.claims.Add(1)
	c.claimTime.Add(int64(took))
}
