package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// TestScheduleOverlapCommands: --overlap on create and update (any case; a bad value is
// a usage error naming the values), and get/runs show the policy and the skipped ticks.
func TestScheduleOverlapCommands(t *testing.T) {
	a := newTestAPI(t, "")
	type overlapOut struct {
		Overlap      string `json:"overlap"`
		SkippedTicks int64  `json:"skipped_ticks"`
	}
	s := decode[overlapOut](t, a.ok(t, "schedules", "create", "job", "--cron", "0 0 1 1 *", "--kind", "noop", "--overlap", "Skip", "--json"))
	if s.Overlap != "skip" {
		t.Fatalf("created with --overlap Skip: %+v", s)
	}
	if s := decode[overlapOut](t, a.ok(t, "schedules", "create", "plain", "--cron", "@daily", "--kind", "noop", "--json")); s.Overlap != "allow" {
		t.Fatalf("default overlap %q", s.Overlap)
	}
	for _, args := range [][]string{
		{"schedules", "create", "bad", "--cron", "@daily", "--kind", "noop", "--overlap", "never"},
		{"schedules", "update", "job", "--overlap", "cancel-other"},
	} {
		_, _, err := a.cli(t, args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "buffer_one") {
			t.Errorf("rota %s: %v, want a usage error listing the policies", strings.Join(args, " "), err)
		}
	}
	if s := decode[overlapOut](t, a.ok(t, "schedules", "update", "plain", "--overlap", "cancel_other", "--json")); s.Overlap != "cancel_other" {
		t.Fatalf("updated overlap %q", s.Overlap)
	}

	// Two ticks while the first run waits: one skipped, shown by get and runs.
	ctx := context.Background()
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	for i := range 2 {
		if _, err := a.store.RescheduleSchedule(ctx, "job", base.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.store.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10}); err != nil {
			t.Fatal(err)
		}
	}
	out := a.ok(t, "schedules", "get", "job")
	for _, want := range []string{"overlap:", "skip", "skipped_ticks:", "1", "current_run_id:", "last_skipped_at:"} {
		if !strings.Contains(out, want) {
			t.Errorf("get output lacks %q:\n%s", want, out)
		}
	}
	stdout, stderr, err := a.cli(t, "schedules", "runs", "job")
	if err != nil || strings.Count(strings.TrimSpace(stdout), "\n") != 1 || !strings.Contains(stderr, "1 ticks skipped") {
		t.Errorf("runs: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
}
