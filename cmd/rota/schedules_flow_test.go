package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// TestScheduleFlowCommands: `schedules create --flow-file` makes a schedule of kind flow,
// get and list show its flow, update --flow-file replaces it, trigger starts a flow, and
// a claim of the schedule starts one flow per tick.
func TestScheduleFlowCommands(t *testing.T) {
	a := newTestAPI(t, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "flow.json")
	if err := os.WriteFile(file, []byte(`{"name": "etl", "queue": "etl", "steps": [
		{"name": "extract", "kind": "extract"},
		{"name": "load", "kind": "load", "depends_on": ["extract"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	type flowSchedule struct {
		Overlap string         `json:"overlap"`
		Kind    string         `json:"kind"`
		Task    map[string]any `json:"task"`
		Flow    struct {
			Name  string `json:"name"`
			Steps []struct {
				Name string `json:"name"`
			} `json:"steps"`
		} `json:"flow"`
	}
	s := decode[flowSchedule](t, a.ok(t, "schedules", "create", "nightly", "--cron", "0 0 1 1 *", "--flow-file", file, "--json"))
	if s.Kind != "flow" || s.Task != nil || s.Flow.Name != "etl" || len(s.Flow.Steps) != 2 {
		t.Fatalf("created: %+v", s)
	}
	out := a.ok(t, "schedules", "get", "nightly")
	if !strings.Contains(out, `"name":"extract"`) || strings.Contains(out, "task.kind") {
		t.Fatalf("get:\n%s", out)
	}
	a.ok(t, "schedules", "create", "plain", "--cron", "@daily", "--kind", "noop")
	if out := a.ok(t, "schedules", "get", "plain"); strings.Contains(out, "flow:") || !strings.Contains(out, "task.kind") {
		t.Fatalf("get of a task schedule:\n%s", out)
	}
	if out := a.ok(t, "schedules", "list"); !strings.Contains(out, "flow") || !strings.Contains(out, "etl") {
		t.Fatalf("list:\n%s", out)
	}
	if out := a.ok(t, "schedules", "trigger", "nightly"); !strings.Contains(out, "started flow") || !strings.Contains(out, "extract") {
		t.Fatalf("trigger:\n%s", out)
	}

	if err := os.WriteFile(file, []byte(`{"name": "etl2", "steps": [{"name": "only", "kind": "k"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := decode[flowSchedule](t, a.ok(t, "schedules", "update", "nightly", "--flow-file", file, "--json")); s.Flow.Name != "etl2" {
		t.Fatalf("updated: %+v", s)
	}
	for _, args := range [][]string{
		{"schedules", "create", "bad", "--cron", "@daily", "--flow-file", file, "--kind", "noop"},
		{"schedules", "create", "bad", "--cron", "@daily", "--flow-file", filepath.Join(dir, "missing.json")},
	} {
		if _, _, err := a.cli(t, args...); !errors.Is(err, errUsage) {
			t.Errorf("rota %s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
	for _, o := range []string{"buffer_one", "cancel_other"} { // a 400 before migration 0029
		if s := decode[flowSchedule](t, a.ok(t, "schedules", "create", "ov-"+o[:3], "--cron", "@daily", "--flow-file", file,
			"--overlap", o, "--json")); s.Overlap != o {
			t.Errorf("created with --overlap %s: %+v", o, s)
		}
	}

	// A claim at a tick starts one flow with the tick's key.
	ctx := context.Background()
	tick := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	if _, err := a.store.RescheduleSchedule(ctx, "nightly", tick); err != nil {
		t.Fatal(err)
	}
	claims, err := a.store.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 1 || len(claims[0].Flows) != 1 {
		t.Fatalf("claim: %v %+v", err, claims)
	}
	if key := claims[0].Flows[0].IdempotencyKey; key != store.ScheduleRunKey("nightly", tick) {
		t.Fatalf("flow key %q", key)
	}
}
