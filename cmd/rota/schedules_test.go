package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type scheduleOut struct {
	Name     string `json:"name"`
	CronSpec string `json:"cron_spec"`
	Timezone string `json:"timezone"`
	Task     struct {
		Kind        string          `json:"kind"`
		Queue       string          `json:"queue"`
		Payload     json.RawMessage `json:"payload"`
		MaxAttempts int             `json:"max_attempts"`
	} `json:"task"`
	Enabled   bool       `json:"enabled"`
	CatchUp   string     `json:"catch_up"`
	NextRunAt time.Time  `json:"next_run_at"`
	LastRunAt *time.Time `json:"last_run_at"`
}

func TestScheduleCommands(t *testing.T) {
	a := newTestAPI(t, "")

	// create: every flag, the JSON form.
	s := decode[scheduleOut](t, a.ok(t, "schedules", "create", "nightly", "--cron", "30 3 * * *", "--tz", "Europe/Berlin",
		"--kind", "report.build", "--queue", "reports", "--payload", `{"full": true}`, "--max-attempts", "3",
		"--catch-up", "all", "--json"))
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if s.Name != "nightly" || s.CronSpec != "30 3 * * *" || s.Timezone != "Europe/Berlin" || s.Task.Kind != "report.build" ||
		s.Task.Queue != "reports" || compact(t, s.Task.Payload) != `{"full":true}` || s.Task.MaxAttempts != 3 ||
		s.CatchUp != "all" || !s.Enabled || s.NextRunAt.In(berlin).Hour() != 3 || s.NextRunAt.In(berlin).Minute() != 30 {
		t.Fatalf("created: %+v", s)
	}
	// The human form, with flags before the name; --disabled.
	out := a.ok(t, "schedules", "create", "--cron", "@hourly", "--kind", "noop", "--disabled", "a-hourly")
	for _, want := range []string{"name:", "a-hourly", "enabled:", "false", "@hourly", "task.kind:", "noop", "paused", "task.queue:", "default"} {
		if !strings.Contains(out, want) {
			t.Errorf("create output lacks %q:\n%s", want, out)
		}
	}
	a.ok(t, "schedules", "create", "every5", "--cron", "*/5 * * * *", "--kind", "noop")

	// list: a table with the next fire time in the schedule's zone, or JSON.
	out = a.ok(t, "schedules", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME ") || !strings.HasPrefix(lines[1], "a-hourly ") ||
		!strings.HasPrefix(lines[3], "nightly ") {
		t.Fatalf("list:\n%s", out)
	}
	for _, want := range []string{"CRON", "TIMEZONE", "NEXT_RUN_AT", "LAST_RUN_AT", "ENABLED"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("list header lacks %s: %s", want, lines[0])
		}
	}
	if next := s.NextRunAt.In(berlin).Format(time.RFC3339); !strings.Contains(lines[3], next) || !strings.Contains(lines[3], "30 3 * * *") ||
		!strings.Contains(lines[3], "Europe/Berlin") || !strings.Contains(lines[3], "true") {
		t.Errorf("list row of nightly lacks its fields (next %s): %s", next, lines[3])
	}
	if !strings.Contains(lines[1], "(paused)") || !strings.Contains(lines[1], "false") {
		t.Errorf("list row of a paused schedule: %s", lines[1])
	}
	type listOut struct {
		Schedules []scheduleOut `json:"schedules"`
	}
	l := decode[listOut](t, a.ok(t, "schedules", "list", "--json"))
	if len(l.Schedules) != 3 || l.Schedules[2].Name != "nightly" {
		t.Errorf("list --json: %+v", l)
	}

	// get.
	if g := decode[scheduleOut](t, a.ok(t, "schedules", "get", "nightly", "--json")); !g.NextRunAt.Equal(s.NextRunAt) {
		t.Errorf("get: %+v", g)
	}
	if out := a.ok(t, "schedules", "get", "nightly"); !strings.Contains(out, "Europe/Berlin") || !strings.Contains(out, "report.build") {
		t.Errorf("get (human):\n%s", out)
	}

	// update: only the flags given change; task flags keep the rest of the template.
	u := decode[scheduleOut](t, a.ok(t, "schedules", "update", "nightly", "--queue", "urgent", "--json"))
	if u.Task.Queue != "urgent" || u.Task.Kind != "report.build" || u.Task.MaxAttempts != 3 ||
		compact(t, u.Task.Payload) != `{"full":true}` || u.CronSpec != "30 3 * * *" || u.CatchUp != "all" {
		t.Errorf("update --queue: %+v", u)
	}
	u = decode[scheduleOut](t, a.ok(t, "schedules", "update", "nightly", "--cron", "0 6 * * 1-5", "--tz", "UTC", "--catch-up", "skip", "--disabled", "--json"))
	if u.CronSpec != "0 6 * * 1-5" || u.Timezone != "UTC" || u.CatchUp != "skip" || u.Enabled || u.NextRunAt.Hour() != 6 ||
		u.Task.Queue != "urgent" {
		t.Errorf("update --cron --tz --catch-up --disabled: %+v", u)
	}
	dir := t.TempDir()
	payloadFile := filepath.Join(dir, "p.json")
	if err := os.WriteFile(payloadFile, []byte(`{"from":"file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	u = decode[scheduleOut](t, a.ok(t, "schedules", "update", "nightly", "--enabled", "--kind", "sleep", "--payload-file", payloadFile, "--json"))
	if !u.Enabled || u.Task.Kind != "sleep" || compact(t, u.Task.Payload) != `{"from":"file"}` || u.Task.Queue != "urgent" {
		t.Errorf("update --enabled --kind --payload-file: %+v", u)
	}

	// pause, resume.
	if p := decode[scheduleOut](t, a.ok(t, "schedules", "pause", "nightly", "--json")); p.Enabled {
		t.Errorf("pause: %+v", p)
	}
	if r := decode[scheduleOut](t, a.ok(t, "schedules", "resume", "nightly", "--json")); !r.Enabled || !r.NextRunAt.After(time.Now()) {
		t.Errorf("resume: %+v", r)
	}

	// reschedule.
	at := "2031-02-03T04:05:00Z"
	r := decode[scheduleOut](t, a.ok(t, "schedules", "reschedule", "nightly", "--at", "2031-02-03T05:05:00+01:00", "--json"))
	if r.NextRunAt.Format(time.RFC3339) != at {
		t.Errorf("reschedule: %+v", r)
	}

	// trigger prints the task; runs lists it.
	run := decode[taskOut](t, a.ok(t, "schedules", "trigger", "nightly", "--json"))
	if run.Kind != "sleep" || run.Queue != "urgent" || run.Status != "PENDING" {
		t.Errorf("trigger: %+v", run)
	}
	if out := a.ok(t, "schedules", "trigger", "nightly"); !strings.Contains(out, "id:") || !strings.Contains(out, "PENDING") {
		t.Errorf("trigger (human):\n%s", out)
	}
	if g := decode[scheduleOut](t, a.ok(t, "schedules", "get", "nightly", "--json")); g.NextRunAt.Format(time.RFC3339) != at {
		t.Errorf("trigger moved next_run_at: %+v", g)
	}
	type runsOut struct {
		Tasks      []taskOut `json:"tasks"`
		NextCursor string    `json:"next_cursor"`
	}
	runs := decode[runsOut](t, a.ok(t, "schedules", "runs", "nightly", "--json"))
	if len(runs.Tasks) != 2 || runs.Tasks[1].ID != run.ID || runs.NextCursor != "" {
		t.Errorf("runs: %+v", runs)
	}
	runs = decode[runsOut](t, a.ok(t, "schedules", "runs", "nightly", "--limit", "1", "--json"))
	if len(runs.Tasks) != 1 || runs.NextCursor == "" {
		t.Errorf("runs --limit 1: %+v", runs)
	}
	runs = decode[runsOut](t, a.ok(t, "schedules", "runs", "nightly", "--limit", "1", "--all", "--json"))
	if len(runs.Tasks) != 2 || runs.NextCursor != "" {
		t.Errorf("runs --all: %+v", runs)
	}
	out, errOut, err := a.cli(t, "schedules", "runs", "nightly", "--limit", "1")
	if err != nil || !strings.HasPrefix(out, "ID ") || strings.Count(out, "\n") != 2 || !strings.Contains(errOut, "--cursor") {
		t.Errorf("runs (human): %v\n%s\n%s", err, out, errOut)
	}

	// delete.
	if out := a.ok(t, "schedules", "delete", "every5"); !strings.Contains(out, "deleted schedule every5") {
		t.Errorf("delete: %q", out)
	}
	if out := a.ok(t, "schedules", "delete", "a-hourly", "--json"); compact(t, []byte(out)) != `{"name":"a-hourly","deleted":true}` {
		t.Errorf("delete --json: %q", out)
	}
	if l := decode[listOut](t, a.ok(t, "schedules", "list", "--json")); len(l.Schedules) != 1 {
		t.Errorf("after deletes: %+v", l)
	}

	// API errors: one readable line, exit 1 (not a usage error).
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schedules", "get", "missing"}, "not_found: "},
		{[]string{"schedules", "delete", "missing"}, "not_found: "},
		{[]string{"schedules", "trigger", "missing"}, "not_found: "},
		{[]string{"schedules", "runs", "missing"}, "not_found: "},
		{[]string{"schedules", "update", "missing", "--kind", "noop"}, "not_found: "},
		{[]string{"schedules", "create", "nightly", "--cron", "@daily", "--kind", "noop"}, "conflict: "},
		{[]string{"schedules", "create", "x", "--cron", "61 * * * *", "--kind", "noop"}, "invalid_request: "},
		{[]string{"schedules", "create", "x", "--cron", "@daily", "--kind", "noop", "--tz", "Mars/Olympus"}, "invalid_request: "},
	} {
		_, _, err := a.cli(t, tc.args...)
		if err == nil || errors.Is(err, errUsage) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("rota %s: %v, want one line starting %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	_, _, err = a.cli(t, "schedules", "create", "x", "--cron", "61 * * * *", "--kind", "noop")
	if err == nil || !strings.Contains(err.Error(), "minute") {
		t.Errorf("invalid spec error does not name the field: %v", err)
	}
}

func TestScheduleCommandUsageErrors(t *testing.T) {
	a := newTestAPI(t, "")
	a.ok(t, "schedules", "create", "s", "--cron", "@daily", "--kind", "noop")
	for _, args := range [][]string{
		{"schedules"},
		{"schedules", "bogus"},
		{"schedules", "--json"},
		{"schedules", "get"},
		{"schedules", "get", "a", "b"},
		{"schedules", "get", "a:b"},
		{"schedules", "get", "--bogus", "s"},
		{"schedules", "list", "extra"},
		{"schedules", "create", "x", "--kind", "noop"},
		{"schedules", "create", "x", "--cron", "@daily"},
		{"schedules", "create", "x", "--cron", "", "--kind", "noop"},
		{"schedules", "create", "x", "--cron", "@daily", "--kind", "bad kind"},
		{"schedules", "create", "x", "--cron", "@daily", "--kind", "noop", "--queue", "a/b"},
		{"schedules", "create", "x", "--cron", "@daily", "--kind", "noop", "--payload", "{nope"},
		{"schedules", "create", "x", "--cron", "@daily", "--kind", "noop", "--payload", "{}", "--payload-file", "f"},
		{"schedules", "create", "x", "--cron", "@daily", "--kind", "noop", "--catch-up", "most"},
		{"schedules", "create", "x", "--cron", "@daily", "--kind", "noop", "--max-attempts", "-1"},
		{"schedules", "create", "x", "--cron", "@daily", "--kind", "noop", "--tz", ""},
		{"schedules", "create", "x", "--cron", "@daily", "--kind", "noop", "--enabled"},
		{"schedules", "update", "s"},
		{"schedules", "update", "s", "--enabled", "--disabled"},
		{"schedules", "reschedule", "s"},
		{"schedules", "reschedule", "s", "--at", "tomorrow"},
		{"schedules", "reschedule", "s", "--at", "0001-01-01T00:00:00Z"},
		{"schedules", "runs", "s", "--limit", "1001"},
		{"schedules", "delete"},
		{"schedules", "pause", "a", "b"},
	} {
		_, _, err := a.cli(t, args...)
		if !errors.Is(err, errUsage) {
			t.Errorf("rota %s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
	// Help is not an error.
	for _, args := range [][]string{{"schedules", "help"}, {"schedules", "create", "-h"}, {"schedules", "runs", "--help"}} {
		if _, _, err := a.cli(t, args...); err != nil {
			t.Errorf("rota %s: %v", strings.Join(args, " "), err)
		}
	}
	// Nothing was changed by the refused commands.
	if g := decode[scheduleOut](t, a.ok(t, "schedules", "get", "s", "--json")); g.CronSpec != "@daily" || !g.Enabled {
		t.Errorf("after usage errors: %+v", g)
	}
}
