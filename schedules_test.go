package rota_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota"
)

func TestScheduleOperations(t *testing.T) {
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		s, err := c.CreateSchedule(ctx, rota.ScheduleParams{Name: "hourly", CronSpec: "0 * * * *",
			Timezone: "Europe/Berlin", Task: rota.TaskTemplate{Kind: "noop"}})
		if err != nil {
			t.Fatalf("CreateSchedule: %v", err)
		}
		if !s.Enabled || s.CatchUp != rota.CatchUpOne || !s.NextRunAt.After(time.Now()) || s.NextRunAt.Minute() != 0 {
			t.Fatalf("created schedule: %+v", s)
		}
		// Bad input is ErrInvalid naming the field, and writes nothing.
		_, err = c.CreateSchedule(ctx, rota.ScheduleParams{Name: "bad", CronSpec: "61 * * * *", Task: rota.TaskTemplate{Kind: "noop"}})
		if !errors.Is(err, rota.ErrInvalid) || !strings.Contains(err.Error(), "minute") {
			t.Fatalf("invalid spec: %v, want ErrInvalid naming minute", err)
		}
		if _, err := c.CreateSchedule(ctx, rota.ScheduleParams{Name: "hourly", CronSpec: "* * * * *", Task: rota.TaskTemplate{Kind: "noop"}}); !errors.Is(err, rota.ErrConflict) {
			t.Fatalf("duplicate name: %v, want ErrConflict", err)
		}
		if all, err := c.Schedules(ctx); err != nil || len(all) != 1 {
			t.Fatalf("Schedules: %d, %v; want only the valid one", len(all), err)
		}

		// Trigger runs now without moving the next fire time.
		task, err := c.TriggerSchedule(ctx, "hourly")
		if err != nil || task.Kind != "noop" {
			t.Fatalf("TriggerSchedule: %v %v", task, err)
		}
		if got, _ := c.Schedule(ctx, "hourly"); !got.NextRunAt.Equal(s.NextRunAt) {
			t.Fatalf("trigger moved next_run_at from %v to %v", s.NextRunAt, got.NextRunAt)
		}
		runs, _, err := c.ScheduleRuns(ctx, "hourly", 10, "")
		if err != nil || len(runs) != 1 || runs[0].ID != task.ID {
			t.Fatalf("ScheduleRuns: %v, %v", runs, err)
		}

		// Pause, resume, reschedule, update, delete.
		if p, err := c.PauseSchedule(ctx, "hourly"); err != nil || p.Enabled {
			t.Fatalf("PauseSchedule: %+v %v", p, err)
		}
		if r, err := c.ResumeSchedule(ctx, "hourly"); err != nil || !r.Enabled {
			t.Fatalf("ResumeSchedule: %+v %v", r, err)
		}
		at := time.Now().Add(-time.Hour).Truncate(time.Minute).UTC()
		if r, err := c.RescheduleSchedule(ctx, "hourly", at); err != nil || !r.NextRunAt.Equal(at) {
			t.Fatalf("RescheduleSchedule: %+v %v", r, err)
		}
		spec := "*/5 * * * *"
		if u, err := c.UpdateSchedule(ctx, "hourly", rota.ScheduleUpdate{CronSpec: &spec}); err != nil || u.CronSpec != spec || u.NextRunAt.Minute()%5 != 0 {
			t.Fatalf("UpdateSchedule: %+v %v", u, err)
		}
		if err := c.DeleteSchedule(ctx, "hourly"); err != nil {
			t.Fatalf("DeleteSchedule: %v", err)
		}
		if _, err := c.Schedule(ctx, "hourly"); !errors.Is(err, rota.ErrNotFound) {
			t.Fatalf("deleted schedule: %v, want ErrNotFound", err)
		}
	})
}

// TestScheduleOverlapOption: Overlap is set on create and update and read back; an
// unknown value is ErrInvalid naming the field.
func TestScheduleOverlapOption(t *testing.T) {
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		s, err := c.CreateSchedule(ctx, rota.ScheduleParams{Name: "report", CronSpec: "@daily",
			Task: rota.TaskTemplate{Kind: "noop"}, Overlap: rota.OverlapBufferOne})
		if err != nil || s.Overlap != rota.OverlapBufferOne || s.SkippedTicks != 0 {
			t.Fatalf("CreateSchedule(buffer_one): %+v, %v", s, err)
		}
		skip := rota.OverlapSkip
		if u, err := c.UpdateSchedule(ctx, "report", rota.ScheduleUpdate{Overlap: &skip}); err != nil || u.Overlap != rota.OverlapSkip {
			t.Fatalf("UpdateSchedule(skip): %+v, %v", u, err)
		}
		_, err = c.CreateSchedule(ctx, rota.ScheduleParams{Name: "bad", CronSpec: "@daily", Task: rota.TaskTemplate{Kind: "noop"}, Overlap: "sometimes"})
		if !errors.Is(err, rota.ErrInvalid) || !strings.Contains(err.Error(), "overlap") {
			t.Fatalf("unknown overlap: %v, want ErrInvalid naming overlap", err)
		}
	})
}

// TestScheduleOfKindFlow: the Go API creates a schedule that starts a flow per tick,
// reads its flow back and triggers one.
func TestScheduleOfKindFlow(t *testing.T) {
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		s, err := c.CreateSchedule(ctx, rota.ScheduleParams{Name: "etl", Kind: rota.ScheduleKindFlow, CronSpec: "@daily",
			Flow: &rota.ScheduleFlow{Name: "etl", Steps: []rota.ScheduleFlowStep{
				{Name: "extract", Kind: "extract"},
				{Name: "load", Kind: "load", DependsOn: []string{"extract"}},
			}}})
		if err != nil {
			t.Fatalf("CreateSchedule: %v", err)
		}
		if s.Kind != rota.ScheduleKindFlow || s.Flow == nil || len(s.Flow.Steps) != 2 {
			t.Fatalf("created: %+v", s)
		}
		f, err := c.TriggerScheduleFlow(ctx, "etl")
		if err != nil || len(f.Steps) != 2 || len(f.Steps[0].TaskIDs) != 1 {
			t.Fatalf("TriggerScheduleFlow: %+v %v", f, err)
		}
		if _, err := c.TriggerSchedule(ctx, "etl"); !errors.Is(err, rota.ErrInvalid) {
			t.Fatalf("TriggerSchedule of a flow schedule: %v, want ErrInvalid", err)
		}
		for _, o := range []rota.Overlap{rota.OverlapBufferOne, rota.OverlapCancelOther} {
			s, err := c.CreateSchedule(ctx, rota.ScheduleParams{Name: "etl-" + strings.ReplaceAll(string(o), "_", "-"),
				Kind: rota.ScheduleKindFlow, CronSpec: "@daily", Overlap: o,
				Flow: &rota.ScheduleFlow{Steps: []rota.ScheduleFlowStep{{Name: "a", Kind: "k"}}}})
			if err != nil || s.Overlap != o {
				t.Fatalf("CreateSchedule of kind flow with overlap %s: %+v, %v", o, s, err)
			}
		}
	})
}
