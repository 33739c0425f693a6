package schedule_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/schedule"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

func TestMetricsCountClaims(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := schedule.NewMetrics(reg)
	m.Observe(schedule.ClaimEvent{Latency: 3 * time.Millisecond, Schedules: 2, Runs: 3, Skipped: 9})
	m.Observe(schedule.ClaimEvent{Err: errors.New("db down")})
	// A second registration with the same registry shares the collectors.
	schedule.NewMetrics(reg).Observe(schedule.ClaimEvent{Latency: time.Millisecond, Runs: 1})

	want := map[string]float64{"rota_schedule_runs_enqueued_total": 4, "rota_schedule_ticks_skipped_total": 9}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			switch {
			case metric.GetCounter() != nil:
				got[f.GetName()] += metric.GetCounter().GetValue()
			case metric.GetHistogram() != nil:
				got[f.GetName()+"_count"] = float64(metric.GetHistogram().GetSampleCount())
			}
		}
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
	if got["rota_schedule_claims_total"] != 3 || got["rota_schedule_claim_duration_seconds_count"] != 2 {
		t.Errorf("claims %v, latency samples %v; want 3 and 2", got["rota_schedule_claims_total"], got["rota_schedule_claim_duration_seconds_count"])
	}
}

func TestSchedulerFeedsMetrics(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: "s", CronSpec: "* * * * *", CatchUp: store.CatchUpAll,
		Task: store.TaskTemplate{Kind: "noop"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RescheduleSchedule(ctx, "s", time.Now().Add(-3*time.Minute).Truncate(time.Minute)); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := schedule.NewMetrics(reg)
	s := schedule.NewScheduler(schedule.Config{Store: st, OnClaim: m.Observe})
	runs := s.Pass(ctx)
	if runs < 3 {
		t.Fatalf("pass enqueued %d runs, want at least 3", runs)
	}
	if v := counterValue(t, reg, "rota_schedule_runs_enqueued_total"); v != float64(runs) {
		t.Fatalf("runs counter %v, want %d", v, runs)
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			var sum float64
			for _, metric := range f.GetMetric() {
				sum += metric.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}
