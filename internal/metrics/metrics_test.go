package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// A real worker runs a mix of built-in tasks; every counter must equal what the store
// recorded, attempt by attempt.
func TestObserverCountsMatchTheStore(t *testing.T) {
	t.Parallel()
	st := memory.New()
	t.Cleanup(st.Close)
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)

	mux := runtime.NewMux()
	handlers.Register(mux, handlers.Config{})
	w, err := runtime.NewWorker(runtime.Config{
		Store: st, Mux: mux, Observer: m,
		Queues:       map[string]int{"default": 0, "emails": 0},
		PollInterval: 10 * time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	var params []store.CreateParams
	for range 5 {
		params = append(params, store.CreateParams{Kind: "noop"}, store.CreateParams{Kind: "noop", Queue: "emails"})
	}
	params = append(params,
		store.CreateParams{Kind: "fail", Payload: []byte(`{"times": 2}`)},                         // 2 retries, then SUCCEEDED
		store.CreateParams{Kind: "fail", Payload: []byte(`{}`), MaxAttempts: 3},                   // 2 retries, then DEAD
		store.CreateParams{Kind: "fail", Payload: []byte(`{"permanent": true}`), Queue: "emails"}, // FAILED
	)
	res, err := st.CreateTasks(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every task to finish", func() bool {
		for _, r := range res {
			task, err := st.GetTask(context.Background(), r.Task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !task.Status.Terminal() {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// What the store says, by (queue, kind) and attempt outcome.
	type key struct{ queue, kind string }
	attempts := map[key]int{}
	outcomes := map[key]map[store.AttemptOutcome]int{}
	for _, r := range res {
		k := key{r.Task.Queue, r.Task.Kind}
		list, err := st.ListAttempts(context.Background(), r.Task.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			attempts[k]++
			if outcomes[k] == nil {
				outcomes[k] = map[store.AttemptOutcome]int{}
			}
			outcomes[k][a.Outcome]++
		}
	}
	if got := outcomes[key{"default", "fail"}]; got[store.OutcomeRetried] != 4 || got[store.OutcomeDead] != 1 {
		t.Fatalf("the fail tasks' attempts were %v, want 4 RETRIED and 1 DEAD (the test's premise)", got)
	}
	counters := map[store.AttemptOutcome]string{
		store.OutcomeSucceeded: "rota_tasks_succeeded_total",
		store.OutcomeRetried:   "rota_tasks_retried_total",
		store.OutcomeDead:      "rota_tasks_dead_total",
		store.OutcomeFailed:    "rota_tasks_failed_total",
	}
	for k, n := range attempts {
		if got := counterValue(t, reg, "rota_tasks_claimed_total", "queue", k.queue, "kind", k.kind); got != float64(n) {
			t.Errorf("claimed{%s,%s} = %v, want %d attempts", k.queue, k.kind, got, n)
		}
		if got := histogramCount(t, reg, "rota_handler_duration_seconds", "queue", k.queue, "kind", k.kind); got != uint64(n) {
			t.Errorf("handler duration count{%s,%s} = %d, want %d attempts", k.queue, k.kind, got, n)
		}
		for outcome, name := range counters {
			if got, want := counterValue(t, reg, name, "queue", k.queue, "kind", k.kind), float64(outcomes[k][outcome]); got != want {
				t.Errorf("%s{%s,%s} = %v, want %v", name, k.queue, k.kind, got, want)
			}
		}
	}
	if got := histogramCount(t, reg, "rota_commit_duration_seconds"); got == 0 {
		t.Error("no commit was timed")
	}
	if got := histogramCount(t, reg, "rota_claim_duration_seconds", "queue", "emails"); got == 0 {
		t.Error("no claim of queue emails was timed")
	}
}

// Each event lands in its own series; errors are counted apart from latencies.
func TestObserverEvents(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	task := &store.Task{Queue: "q", Kind: "k"}

	for _, s := range []store.Status{store.StatusSucceeded, store.StatusPending, store.StatusEnqueued,
		store.StatusDead, store.StatusFailed, store.StatusCanceled, store.StatusProcessing} {
		m.OutcomeRecorded(task, s)
	}
	for name, want := range map[string]float64{
		"rota_tasks_succeeded_total": 1,
		"rota_tasks_retried_total":   2, // PENDING (poll mode) and ENQUEUED (SQS mode)
		"rota_tasks_dead_total":      1,
		"rota_tasks_failed_total":    1,
		"rota_tasks_canceled_total":  1,
	} {
		if got := counterValue(t, reg, name, "queue", "q", "kind", "k"); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	m.ClaimDone("q", 3, 2*time.Millisecond, nil)
	m.ClaimDone("q", 0, time.Millisecond, errors.New("connection refused"))
	m.CommitDone(5, time.Millisecond, nil)
	m.CommitDone(5, time.Millisecond, fmt.Errorf("record outcomes: %w", store.ErrLeaseLost)) // an answer: timed
	m.CommitDone(5, time.Second, errors.New("connection reset"))
	m.LeaseLost(task)
	m.Reaped(3)
	m.Reaped(4)

	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"claim duration count", float64(histogramCount(t, reg, "rota_claim_duration_seconds", "queue", "q")), 1},
		{"claim errors", counterValue(t, reg, "rota_claim_errors_total", "queue", "q"), 1},
		{"commit duration count", float64(histogramCount(t, reg, "rota_commit_duration_seconds")), 2},
		{"commit errors", counterValue(t, reg, "rota_commit_errors_total"), 1},
		{"lease lost", counterValue(t, reg, "rota_lease_lost_total"), 1},
		{"reaps", counterValue(t, reg, "rota_lease_reaps_total"), 7},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// Past MaxLabelValues distinct kinds, new kinds are counted under "_other"; kinds seen
// before keep their own series.
func TestLabelValuesAreBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	for i := range metrics.MaxLabelValues + 5 {
		m.TaskClaimed(&store.Task{Queue: "q", Kind: fmt.Sprintf("kind-%d", i)})
	}
	m.TaskClaimed(&store.Task{Queue: "q", Kind: "kind-0"})

	if got := counterValue(t, reg, "rota_tasks_claimed_total", "queue", "q", "kind", "_other"); got != 5 {
		t.Errorf("_other = %v, want 5", got)
	}
	if got := counterValue(t, reg, "rota_tasks_claimed_total", "queue", "q", "kind", "kind-0"); got != 2 {
		t.Errorf("kind-0 = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(reg, "rota_tasks_claimed_total"); n != metrics.MaxLabelValues+1 {
		t.Errorf("%d series, want %d", n, metrics.MaxLabelValues+1)
	}
}

// Registering twice with one registry shares the collectors instead of panicking.
func TestNewTwiceSharesCollectors(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a, b := metrics.New(reg), metrics.New(reg)
	a.Reaped(1)
	b.Reaped(2)
	if got := counterValue(t, reg, "rota_lease_reaps_total"); got != 3 {
		t.Errorf("reaps = %v, want 3", got)
	}
}

// counterValue returns the value of the counter name with the given label pairs, 0 when
// that series does not exist.
func counterValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	if m := find(t, g, name, labels...); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

// histogramCount returns the sample count of the histogram name with the given labels.
func histogramCount(t *testing.T, g prometheus.Gatherer, name string, labels ...string) uint64 {
	t.Helper()
	if m := find(t, g, name, labels...); m != nil {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

func find(t *testing.T, g prometheus.Gatherer, name string, labels ...string) *dto.Metric {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels)/2 {
				continue
			}
			for _, l := range m.GetLabel() {
				if !hasPair(labels, l.GetName(), l.GetValue()) {
					continue metric
				}
			}
			return m
		}
	}
	return nil
}

func hasPair(labels []string, name, value string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		if labels[i] == name && labels[i+1] == value {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing the test after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, 15*time.Second, 5*time.Millisecond, cond)
}
