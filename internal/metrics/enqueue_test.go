package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// Every path that creates tasks through the wrapped store is counted once per new task;
// idempotent hits and failed calls are not.
func TestCountEnqueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw := memory.New()
	t.Cleanup(raw.Close)
	reg := prometheus.NewRegistry()
	st := metrics.New(reg).CountEnqueued(raw)
	enqueued := func(queue, kind string) float64 {
		return counterValue(t, reg, "rota_tasks_enqueued_total", "queue", queue, "kind", kind)
	}

	if _, err := st.CreateTasks(ctx, []store.CreateParams{
		{Kind: "noop"}, {Kind: "noop"}, {Kind: "mail", Queue: "emails", IdempotencyKey: "k1"},
	}); err != nil {
		t.Fatal(err)
	}
	res, err := st.CreateTasks(ctx, []store.CreateParams{{Kind: "mail", Queue: "emails", IdempotencyKey: "k1"}})
	if err != nil || !res[0].Existing {
		t.Fatalf("repeat create: %v, %+v; want the existing task", err, res)
	}
	if _, err := st.CreateTasks(ctx, []store.CreateParams{{Kind: "noop"}, {Kind: ""}}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("invalid batch: err %v, want ErrInvalid", err)
	}
	if got := enqueued("default", "noop"); got != 2 {
		t.Errorf("enqueued{default,noop} = %v, want 2 (the invalid batch created nothing)", got)
	}
	if got := enqueued("emails", "mail"); got != 1 {
		t.Errorf("enqueued{emails,mail} = %v, want 1 (the idempotent hit is not a new task)", got)
	}

	// Schedules: a trigger, and the runs a claim inserts.
	if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: "nightly", CronSpec: "0 3 * * *",
		Task: store.TaskTemplate{Kind: "report", Queue: "reports"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TriggerSchedule(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RescheduleSchedule(ctx, "nightly", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 1 || len(claims[0].Runs) != 1 {
		t.Fatalf("ClaimDueSchedules: %v, %+v; want one claim with one run", err, claims)
	}
	if got := enqueued("reports", "report"); got != 2 {
		t.Errorf("enqueued{reports,report} = %v, want 2 (one trigger, one claimed run)", got)
	}

	// Everything else goes straight through to the store.
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, q := range stats {
		total += q.Counts[store.StatusPending]
	}
	if total != 5 {
		t.Errorf("the store holds %d PENDING tasks, want 5", total)
	}
}
