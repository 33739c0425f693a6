package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// The schedule half of the suite. Ticks come from the adapter's clock (the database's
// now()), so tests compute which ticks were due from what a claim reports (NextRunAt is
// the first tick it did not handle) instead of assuming where a minute boundary falls.

var scheduleTests = []testCase{
	{"CreateAndGet", testScheduleCreateGet},
	{"CreateErrors", testScheduleCreateErrors},
	{"NotFound", testScheduleNotFound},
	{"ListOrderedByName", testScheduleList},
	{"Update", testScheduleUpdate},
	{"Delete", testScheduleDelete},
	{"PauseResume", testSchedulePauseResume},
	{"Reschedule", testScheduleReschedule},
	{"Trigger", testScheduleTrigger},
	{"ClaimEnqueuesRuns", testScheduleClaim},
	{"ClaimInvalidLimit", testScheduleClaimInvalid},
	{"CatchUpPolicies", testScheduleCatchUp},
	{"CatchUpAllIsBounded", testScheduleCatchUpAllBounded},
	{"CatchUpFarBehind", testScheduleCatchUpFarBehind},
	{"DisabledNeverClaimed", testScheduleDisabledNotClaimed},
	{"TickNeverEnqueuedTwice", testScheduleTickOnce},
	{"RunsListing", testScheduleRuns},
	{"ConcurrentClaimers", testScheduleConcurrentClaims},
}

const everyMinute = "* * * * *"

func mkSchedule(t *testing.T, s store.Store, p store.ScheduleParams) *store.Schedule {
	t.Helper()
	sc, err := s.CreateSchedule(ctx(t), p)
	if err != nil {
		t.Fatalf("CreateSchedule(%q): %v", p.Name, err)
	}
	return sc
}

func getSchedule(t *testing.T, s store.Store, name string) *store.Schedule {
	t.Helper()
	sc, err := s.GetSchedule(ctx(t), name)
	if err != nil {
		t.Fatalf("GetSchedule(%q): %v", name, err)
	}
	return sc
}

func reschedule(t *testing.T, s store.Store, name string, at time.Time) *store.Schedule {
	t.Helper()
	sc, err := s.RescheduleSchedule(ctx(t), name, at)
	if err != nil {
		t.Fatalf("RescheduleSchedule(%q, %s): %v", name, at, err)
	}
	if !sc.NextRunAt.Equal(at) {
		t.Fatalf("RescheduleSchedule(%q, %s): NextRunAt = %s", name, at, sc.NextRunAt)
	}
	return sc
}

func claimSchedules(t *testing.T, s store.Store, limit int) []store.ScheduleClaim {
	t.Helper()
	claims, err := s.ClaimDueSchedules(ctx(t), store.ClaimSchedulesParams{Limit: limit})
	if err != nil {
		t.Fatalf("ClaimDueSchedules(%d): %v", limit, err)
	}
	if len(claims) > limit {
		t.Fatalf("ClaimDueSchedules(%d) claimed %d schedules", limit, len(claims))
	}
	return claims
}

// claimOf returns the claim of the named schedule, failing when there is none.
func claimOf(t *testing.T, claims []store.ScheduleClaim, name string) store.ScheduleClaim {
	t.Helper()
	for _, c := range claims {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("schedule %q was not claimed (claims: %v)", name, claimNames(claims))
	return store.ScheduleClaim{}
}

func claimNames(claims []store.ScheduleClaim) []string {
	out := make([]string, len(claims))
	for i, c := range claims {
		out[i] = c.Name
	}
	return out
}

func scheduleRuns(t *testing.T, s store.Store, name string) []*store.Task {
	t.Helper()
	var out []*store.Task
	p := store.ScheduleRunsParams{Name: name, Limit: store.MaxListLimit}
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatal("ListScheduleRuns: cursor paging never ends")
		}
		tasks, next, err := s.ListScheduleRuns(ctx(t), p)
		if err != nil {
			t.Fatalf("ListScheduleRuns(%+v): %v", p, err)
		}
		out = append(out, tasks...)
		if next == "" {
			return out
		}
		p.Cursor = next
	}
}

// minuteTicks lists the every-minute ticks from first up to (not including) end.
func minuteTicks(first, end time.Time) []time.Time {
	var out []time.Time
	for tick := first; tick.Before(end); tick = tick.Add(time.Minute) {
		out = append(out, tick)
	}
	return out
}

// lastMinute is the latest whole minute at or before the test's clock, minus n minutes.
func lastMinute(n int) time.Time {
	return time.Now().UTC().Truncate(time.Minute).Add(-time.Duration(n) * time.Minute)
}

// checkTick checks that tm is a whole minute.
func checkTick(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if !tm.Equal(tm.Truncate(time.Minute)) {
		t.Fatalf("%s = %s, want a whole minute", what, tm.Format(time.RFC3339Nano))
	}
}

// checkNextMinute checks that tm is the first whole minute after a moment between
// before and after (the adapter's now during a call), give or take clockSkew.
func checkNextMinute(t *testing.T, what string, tm, before, after time.Time) {
	t.Helper()
	checkTick(t, what, tm)
	if !tm.After(before.Add(-clockSkew)) || tm.After(after.Add(clockSkew+time.Minute)) {
		t.Fatalf("%s = %s, want the first minute after a moment in [%s, %s] (±%s)", what,
			tm.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano), clockSkew)
	}
}

// checkRun checks one run task of a schedule's tick against its template.
func checkRun(t *testing.T, run *store.Task, sc *store.Schedule, tick time.Time) {
	t.Helper()
	if want := store.ScheduleRunKey(sc.Name, tick); run.IdempotencyKey != want {
		t.Fatalf("run key %q, want %q", run.IdempotencyKey, want)
	}
	if !run.ScheduledFor.Equal(tick) {
		t.Fatalf("run %s ScheduledFor = %s, want the tick %s", run.IdempotencyKey, run.ScheduledFor, tick)
	}
	if run.Kind != sc.Task.Kind || run.Queue != sc.Task.Queue || run.MaxAttempts != sc.Task.MaxAttempts {
		t.Fatalf("run %s: kind %q queue %q max attempts %d, want the template's %q %q %d", run.IdempotencyKey,
			run.Kind, run.Queue, run.MaxAttempts, sc.Task.Kind, sc.Task.Queue, sc.Task.MaxAttempts)
	}
	jsonEqual(t, "run payload", run.Payload, sc.Task.Payload)
	if run.Status != store.StatusPending || run.AttemptCount != 0 {
		t.Fatalf("run %s: status %s attempts %d, want a fresh PENDING task", run.IdempotencyKey, run.Status, run.AttemptCount)
	}
}

func runTicks(runs []*store.Task) []time.Time {
	out := make([]time.Time, len(runs))
	for i, r := range runs {
		out[i] = r.ScheduledFor
	}
	return out
}

func equalTimes(a, b []time.Time) bool {
	return slices.EqualFunc(a, b, time.Time.Equal)
}

// --- CRUD -----------------------------------------------------------------------------

func testScheduleCreateGet(t *testing.T, s store.Store) {
	before := time.Now()
	sc := mkSchedule(t, s, store.ScheduleParams{
		Name:     "nightly-report.v2",
		CronSpec: everyMinute,
		Task:     store.TaskTemplate{Kind: "report", Queue: "reports", Payload: json.RawMessage(`{"full": true}`), MaxAttempts: 3},
		CatchUp:  store.CatchUpAll,
	})
	after := time.Now()
	if sc.Name != "nightly-report.v2" || sc.Kind != store.ScheduleKindTask || sc.CronSpec != everyMinute ||
		sc.Timezone != "UTC" || !sc.Enabled || sc.CatchUp != store.CatchUpAll {
		t.Fatalf("created schedule: %+v", sc)
	}
	if sc.Task.Kind != "report" || sc.Task.Queue != "reports" || sc.Task.MaxAttempts != 3 {
		t.Fatalf("created template: %+v", sc.Task)
	}
	jsonEqual(t, "template payload", sc.Task.Payload, json.RawMessage(`{"full": true}`))
	checkNextMinute(t, "NextRunAt of a new schedule", sc.NextRunAt, before, after)
	isNil(t, "LastRunAt of a new schedule", sc.LastRunAt)
	isNil(t, "LastEnqueuedAt of a new schedule", sc.LastEnqueuedAt)
	nearNow(t, "CreatedAt", sc.CreatedAt)
	nearNow(t, "UpdatedAt", sc.UpdatedAt)

	got := getSchedule(t, s, sc.Name)
	sameSchedule(t, "GetSchedule after create", got, sc)

	// Defaults: kind task, UTC, enabled, catch-up one, queue default, payload {}, 25 attempts.
	d := mkSchedule(t, s, store.ScheduleParams{Name: "defaults", CronSpec: "0 * * * *", Task: store.TaskTemplate{Kind: "k"}})
	if d.Kind != store.ScheduleKindTask || d.Timezone != "UTC" || !d.Enabled || d.CatchUp != store.CatchUpOne ||
		d.Task.Queue != store.DefaultQueue || d.Task.MaxAttempts != store.DefaultMaxAttempts {
		t.Fatalf("defaults: %+v", d)
	}
	jsonEqual(t, "default payload", d.Task.Payload, json.RawMessage(`{}`))
	if !d.NextRunAt.Equal(d.NextRunAt.Truncate(time.Hour)) || !d.NextRunAt.After(before.Add(-clockSkew)) ||
		d.NextRunAt.After(time.Now().Add(time.Hour+clockSkew)) {
		t.Fatalf("NextRunAt of an hourly schedule = %s, want the next whole hour", d.NextRunAt)
	}

	// A time zone and a disabled start.
	off := false
	z := mkSchedule(t, s, store.ScheduleParams{Name: "berlin", CronSpec: "0 * * * *", Timezone: "Europe/Berlin",
		Enabled: &off, Task: store.TaskTemplate{Kind: "k"}})
	if z.Timezone != "Europe/Berlin" || z.Enabled {
		t.Fatalf("zoned, disabled schedule: %+v", z)
	}
}

func sameSchedule(t *testing.T, what string, got, want *store.Schedule) {
	t.Helper()
	ptrEq := func(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }
	if got.Name != want.Name || got.Kind != want.Kind || got.CronSpec != want.CronSpec || got.Timezone != want.Timezone ||
		got.Enabled != want.Enabled || got.CatchUp != want.CatchUp || !got.NextRunAt.Equal(want.NextRunAt) ||
		!ptrEq(got.LastRunAt, want.LastRunAt) || !ptrEq(got.LastEnqueuedAt, want.LastEnqueuedAt) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) ||
		got.Task.Kind != want.Task.Kind || got.Task.Queue != want.Task.Queue || got.Task.MaxAttempts != want.Task.MaxAttempts {
		t.Fatalf("%s: schedules differ:\n got %+v\nwant %+v", what, got, want)
	}
	jsonEqual(t, what+": payload", got.Task.Payload, want.Task.Payload)
}

func testScheduleCreateErrors(t *testing.T, s store.Store) {
	good := func() store.ScheduleParams {
		return store.ScheduleParams{Name: "s", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}}
	}
	mkSchedule(t, s, good())
	_, err := s.CreateSchedule(ctx(t), good())
	wantErr(t, err, store.ErrConflict, "CreateSchedule with a name that exists")

	cases := []struct {
		what   string
		mutate func(p *store.ScheduleParams)
		field  string // the error must name it
	}{
		{"empty name", func(p *store.ScheduleParams) { p.Name = "" }, "name"},
		{"name with ':'", func(p *store.ScheduleParams) { p.Name = "a:b" }, "name"},
		{"name with space", func(p *store.ScheduleParams) { p.Name = "a b" }, "name"},
		{"long name", func(p *store.ScheduleParams) { p.Name = strings.Repeat("n", store.MaxNameLength+1) }, "name"},
		{"empty spec", func(p *store.ScheduleParams) { p.CronSpec = "" }, "cron"},
		{"garbage spec", func(p *store.ScheduleParams) { p.CronSpec = "every day" }, ""},
		{"minute out of range", func(p *store.ScheduleParams) { p.CronSpec = "61 * * * *" }, "minute"},
		{"four fields", func(p *store.ScheduleParams) { p.CronSpec = "* * * *" }, ""},
		{"unknown zone", func(p *store.ScheduleParams) { p.Timezone = "Mars/Olympus_Mons" }, ""},
		{"unknown kind", func(p *store.ScheduleParams) { p.Kind = "workflow" }, "kind"},
		{"flow kind with a task", func(p *store.ScheduleParams) { p.Kind = store.ScheduleKindFlow }, "kind flow"},
		{"unknown catch-up", func(p *store.ScheduleParams) { p.CatchUp = "sometimes" }, "catch_up"},
		{"no task kind", func(p *store.ScheduleParams) { p.Task.Kind = "" }, "kind"},
		{"bad task queue", func(p *store.ScheduleParams) { p.Task.Queue = "1queue" }, "queue"},
		{"payload not JSON", func(p *store.ScheduleParams) { p.Task.Payload = json.RawMessage(`{nope`) }, "payload"},
		{"payload with NUL", func(p *store.ScheduleParams) { p.Task.Payload = json.RawMessage(`{"a":"\u0000"}`) }, "payload"},
		{"max attempts negative", func(p *store.ScheduleParams) { p.Task.MaxAttempts = -1 }, "max_attempts"},
		{"max attempts too many", func(p *store.ScheduleParams) { p.Task.MaxAttempts = store.MaxMaxAttempts + 1 }, "max_attempts"},
	}
	for i, c := range cases {
		p := good()
		p.Name = fmt.Sprintf("bad-%d", i)
		c.mutate(&p)
		_, err := s.CreateSchedule(ctx(t), p)
		wantErr(t, err, store.ErrInvalid, "CreateSchedule with "+c.what)
		if c.field != "" && !strings.Contains(strings.ToLower(err.Error()), c.field) {
			t.Fatalf("CreateSchedule with %s: error %q does not name %q", c.what, err, c.field)
		}
	}
	all, err := s.ListSchedules(ctx(t))
	if err != nil || len(all) != 1 {
		t.Fatalf("after rejected creates: ListSchedules = %d schedules, %v; want only the first", len(all), err)
	}
}

func testScheduleNotFound(t *testing.T, s store.Store) {
	const name = "missing"
	_, err := s.GetSchedule(ctx(t), name)
	wantErr(t, err, store.ErrNotFound, "GetSchedule of an unknown name")
	spec := "0 * * * *"
	_, err = s.UpdateSchedule(ctx(t), name, store.ScheduleUpdate{CronSpec: &spec})
	wantErr(t, err, store.ErrNotFound, "UpdateSchedule of an unknown name")
	wantErr(t, s.DeleteSchedule(ctx(t), name), store.ErrNotFound, "DeleteSchedule of an unknown name")
	_, err = s.PauseSchedule(ctx(t), name)
	wantErr(t, err, store.ErrNotFound, "PauseSchedule of an unknown name")
	_, err = s.ResumeSchedule(ctx(t), name)
	wantErr(t, err, store.ErrNotFound, "ResumeSchedule of an unknown name")
	_, err = s.RescheduleSchedule(ctx(t), name, time.Now())
	wantErr(t, err, store.ErrNotFound, "RescheduleSchedule of an unknown name")
	_, err = s.TriggerSchedule(ctx(t), name)
	wantErr(t, err, store.ErrNotFound, "TriggerSchedule of an unknown name")
	_, _, err = s.ListScheduleRuns(ctx(t), store.ScheduleRunsParams{Name: name})
	wantErr(t, err, store.ErrNotFound, "ListScheduleRuns of an unknown name")
	if n := countTasks(t, s); n != 0 {
		t.Fatalf("operations on an unknown schedule created %d tasks", n)
	}
}

func testScheduleList(t *testing.T, s store.Store) {
	all, err := s.ListSchedules(ctx(t))
	if err != nil || len(all) != 0 {
		t.Fatalf("ListSchedules of an empty store: %v, %v", all, err)
	}
	for _, name := range []string{"b", "a-2", "C", "a", "a.1", "0"} {
		mkSchedule(t, s, store.ScheduleParams{Name: name, CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
	}
	all, err = s.ListSchedules(ctx(t))
	if err != nil {
		t.Fatalf("ListSchedules: %v", err)
	}
	var names []string
	for _, sc := range all {
		names = append(names, sc.Name)
	}
	if want := []string{"0", "C", "a", "a-2", "a.1", "b"}; !slices.Equal(names, want) {
		t.Fatalf("ListSchedules order %q, want %q (by name, byte order)", names, want)
	}
}

func testScheduleUpdate(t *testing.T, s store.Store) {
	sc := mkSchedule(t, s, store.ScheduleParams{Name: "u", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
	// Moved into the past: an update that changes no spec or zone keeps NextRunAt.
	past := lastMinute(5)
	reschedule(t, s, "u", past)
	catchAll := store.CatchUpAll
	got, err := s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{
		Task:    &store.TaskTemplate{Kind: "k2", Queue: "q2", Payload: json.RawMessage(`{"x":1}`), MaxAttempts: 7},
		CatchUp: &catchAll,
	})
	if err != nil {
		t.Fatalf("UpdateSchedule(template, catch-up): %v", err)
	}
	if got.Task.Kind != "k2" || got.Task.Queue != "q2" || got.Task.MaxAttempts != 7 || got.CatchUp != store.CatchUpAll {
		t.Fatalf("updated schedule: %+v", got)
	}
	jsonEqual(t, "updated payload", got.Task.Payload, json.RawMessage(`{"x":1}`))
	if !got.NextRunAt.Equal(past) || got.CronSpec != everyMinute {
		t.Fatalf("an update of the template moved NextRunAt to %s or the spec to %q", got.NextRunAt, got.CronSpec)
	}
	if got.UpdatedAt.Before(sc.UpdatedAt) {
		t.Fatalf("UpdatedAt went back: %s -> %s", sc.UpdatedAt, got.UpdatedAt)
	}
	// Template defaults apply to an updated template too.
	got, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{Task: &store.TaskTemplate{Kind: "k3"}})
	if err != nil || got.Task.Queue != store.DefaultQueue || got.Task.MaxAttempts != store.DefaultMaxAttempts {
		t.Fatalf("UpdateSchedule(template without defaults): %+v, %v", got, err)
	}
	jsonEqual(t, "defaulted payload", got.Task.Payload, json.RawMessage(`{}`))

	// A new spec recomputes NextRunAt from now.
	hourly := "0 * * * *"
	before := time.Now()
	got, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{CronSpec: &hourly})
	if err != nil {
		t.Fatalf("UpdateSchedule(spec): %v", err)
	}
	if got.CronSpec != hourly || !got.NextRunAt.Equal(got.NextRunAt.Truncate(time.Hour)) ||
		!got.NextRunAt.After(before.Add(-clockSkew)) || got.NextRunAt.After(time.Now().Add(time.Hour+clockSkew)) {
		t.Fatalf("after a spec update: spec %q NextRunAt %s, want the next whole hour", got.CronSpec, got.NextRunAt)
	}
	// So does a new zone ("" means UTC).
	reschedule(t, s, "u", past)
	zone := "Asia/Kolkata" // UTC+05:30: its whole hours are half hours in UTC
	got, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{Timezone: &zone})
	if err != nil {
		t.Fatalf("UpdateSchedule(zone): %v", err)
	}
	if got.Timezone != zone || got.NextRunAt.Minute() != 30 || !got.NextRunAt.After(before.Add(-clockSkew)) {
		t.Fatalf("after a zone update: zone %q NextRunAt %s, want the next hh:30 UTC", got.Timezone, got.NextRunAt)
	}
	empty := ""
	if got, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{Timezone: &empty}); err != nil || got.Timezone != "UTC" {
		t.Fatalf("UpdateSchedule(zone \"\"): %+v, %v; want UTC", got, err)
	}

	// Invalid updates change nothing.
	prev := getSchedule(t, s, "u")
	bad := "61 * * * *"
	_, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{CronSpec: &bad})
	wantErr(t, err, store.ErrInvalid, "UpdateSchedule with a bad spec")
	badZone := "Nowhere/Special"
	_, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{Timezone: &badZone, Task: &store.TaskTemplate{Kind: "other"}})
	wantErr(t, err, store.ErrInvalid, "UpdateSchedule with a bad zone")
	_, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{Task: &store.TaskTemplate{Kind: ""}})
	wantErr(t, err, store.ErrInvalid, "UpdateSchedule with a bad template")
	badCatchUp := store.CatchUp("never")
	_, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{CatchUp: &badCatchUp})
	wantErr(t, err, store.ErrInvalid, "UpdateSchedule with a bad catch-up")
	sameSchedule(t, "after rejected updates", getSchedule(t, s, "u"), prev)

	// Enabling a disabled schedule through an update recomputes NextRunAt, like resume.
	off, on := false, true
	if _, err := s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{Enabled: &off}); err != nil {
		t.Fatalf("UpdateSchedule(disable): %v", err)
	}
	reschedule(t, s, "u", past)
	got, err = s.UpdateSchedule(ctx(t), "u", store.ScheduleUpdate{Enabled: &on})
	if err != nil || !got.Enabled || !got.NextRunAt.After(before.Add(-clockSkew)) {
		t.Fatalf("UpdateSchedule(enable): %+v, %v; want enabled from the next tick", got, err)
	}
}

func testScheduleDelete(t *testing.T, s store.Store) {
	mkSchedule(t, s, store.ScheduleParams{Name: "d", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
	run, err := s.TriggerSchedule(ctx(t), "d")
	if err != nil {
		t.Fatalf("TriggerSchedule: %v", err)
	}
	if err := s.DeleteSchedule(ctx(t), "d"); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
	_, err = s.GetSchedule(ctx(t), "d")
	wantErr(t, err, store.ErrNotFound, "GetSchedule after delete")
	wantErr(t, s.DeleteSchedule(ctx(t), "d"), store.ErrNotFound, "DeleteSchedule twice")
	// The runs are tasks: they stay, and the schedule's history still lists them.
	get(t, s, run.ID)
	if runs := scheduleRuns(t, s, "d"); len(runs) != 1 || runs[0].ID != run.ID {
		t.Fatalf("runs of a deleted schedule: %v, want [%s]", ids(runs), run.ID)
	}
	// The name is free again.
	mkSchedule(t, s, store.ScheduleParams{Name: "d", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
}

func testSchedulePauseResume(t *testing.T, s store.Store) {
	mkSchedule(t, s, store.ScheduleParams{Name: "p", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
	paused, err := s.PauseSchedule(ctx(t), "p")
	if err != nil || paused.Enabled {
		t.Fatalf("PauseSchedule: %+v, %v", paused, err)
	}
	if again, err := s.PauseSchedule(ctx(t), "p"); err != nil || again.Enabled {
		t.Fatalf("PauseSchedule twice: %+v, %v", again, err)
	}
	// Overdue while paused: never claimed.
	reschedule(t, s, "p", lastMinute(30))
	if claims := claimSchedules(t, s, 10); len(claims) != 0 {
		t.Fatalf("a paused schedule was claimed: %v", claimNames(claims))
	}
	// Resume starts from the first tick after now: the ticks missed while paused never run.
	before := time.Now()
	resumed, err := s.ResumeSchedule(ctx(t), "p")
	after := time.Now()
	if err != nil || !resumed.Enabled {
		t.Fatalf("ResumeSchedule: %+v, %v", resumed, err)
	}
	checkNextMinute(t, "NextRunAt after resume", resumed.NextRunAt, before, after)
	if claims := claimSchedules(t, s, 10); len(claims) > 1 || (len(claims) == 1 && len(claims[0].Runs) > 1) {
		t.Fatalf("after resume, a claim ran missed ticks: %+v", claims)
	}
	// Resuming an enabled schedule leaves it as it is.
	cur := getSchedule(t, s, "p")
	again, err := s.ResumeSchedule(ctx(t), "p")
	if err != nil || !again.Enabled || !again.NextRunAt.Equal(cur.NextRunAt) {
		t.Fatalf("ResumeSchedule of an enabled schedule: %+v, %v; want NextRunAt %s kept", again, err, cur.NextRunAt)
	}
}

func testScheduleReschedule(t *testing.T, s store.Store) {
	sc := mkSchedule(t, s, store.ScheduleParams{Name: "r", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}, CatchUp: store.CatchUpAll})
	// Into the future: not due until then.
	future := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	reschedule(t, s, "r", future)
	if claims := claimSchedules(t, s, 10); len(claims) != 0 {
		t.Fatalf("a schedule due in two days was claimed: %v", claimNames(claims))
	}
	// Into the past, at a moment that is no tick: claimable now, and that moment is the
	// first run's tick.
	at := time.Now().Add(-90 * time.Second).UTC().Truncate(time.Second).Add(7 * time.Second)
	if at.Equal(at.Truncate(time.Minute)) {
		at = at.Add(time.Second)
	}
	reschedule(t, s, "r", at)
	claims := claimSchedules(t, s, 10)
	c := claimOf(t, claims, "r")
	if len(c.Runs) == 0 {
		t.Fatalf("the rescheduled schedule's claim enqueued nothing: %+v", c)
	}
	want := append([]time.Time{at}, minuteTicks(at.Truncate(time.Minute).Add(time.Minute), c.NextRunAt)...)
	if got := runTicks(c.Runs); !equalTimes(got, want) {
		t.Fatalf("runs after reschedule to %s: ticks %v, want %v", at, got, want)
	}
	checkRun(t, c.Runs[0], sc, at)
	if _, err := s.RescheduleSchedule(ctx(t), "r", time.Time{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("RescheduleSchedule(zero time): %v, want ErrInvalid", err)
	}
}

func testScheduleTrigger(t *testing.T, s store.Store) {
	sc := mkSchedule(t, s, store.ScheduleParams{Name: "t", CronSpec: "0 * * * *",
		Task: store.TaskTemplate{Kind: "k", Queue: "tq", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 4}})
	run, err := s.TriggerSchedule(ctx(t), "t")
	if err != nil {
		t.Fatalf("TriggerSchedule: %v", err)
	}
	if !strings.HasPrefix(run.IdempotencyKey, store.ScheduleRunKeyPrefix("t")+"trigger:") {
		t.Fatalf("trigger run key %q", run.IdempotencyKey)
	}
	if run.Kind != "k" || run.Queue != "tq" || run.MaxAttempts != 4 || run.Status != store.StatusPending {
		t.Fatalf("trigger run: %+v", run)
	}
	jsonEqual(t, "trigger run payload", run.Payload, json.RawMessage(`{"n":1}`))
	nearNow(t, "trigger run ScheduledFor", run.ScheduledFor)
	sameTask(t, "GetTask of the trigger run", get(t, s, run.ID), run)
	after := getSchedule(t, s, "t")
	if !after.NextRunAt.Equal(sc.NextRunAt) || after.LastRunAt != nil {
		t.Fatalf("a trigger moved the schedule: NextRunAt %s -> %s, LastRunAt %v", sc.NextRunAt, after.NextRunAt, after.LastRunAt)
	}
	// It works on a paused schedule too, and each trigger is a run of its own.
	if _, err := s.PauseSchedule(ctx(t), "t"); err != nil {
		t.Fatal(err)
	}
	second, err := s.TriggerSchedule(ctx(t), "t")
	if err != nil || second.ID == run.ID {
		t.Fatalf("second TriggerSchedule: %v, %v; want a new task", second, err)
	}
	if runs := scheduleRuns(t, s, "t"); len(runs) != 2 || runs[0].ID != second.ID || runs[1].ID != run.ID {
		t.Fatalf("runs after two triggers: %v, want [%s %s]", ids(runs), second.ID, run.ID)
	}
}

// --- claiming -------------------------------------------------------------------------

func testScheduleClaim(t *testing.T, s store.Store) {
	sc := mkSchedule(t, s, store.ScheduleParams{Name: "c", CronSpec: everyMinute, CatchUp: store.CatchUpAll,
		Task: store.TaskTemplate{Kind: "job", Queue: "cq", Payload: json.RawMessage(`{"a":[1,2]}`), MaxAttempts: 2}})
	mkSchedule(t, s, store.ScheduleParams{Name: "later", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "job"}})
	wake, err := s.WaitForTasks(ctx(t))
	if err != nil {
		t.Fatalf("WaitForTasks: %v", err)
	}

	first := lastMinute(1)
	reschedule(t, s, "c", first)
	claims := claimSchedules(t, s, 10)
	c := claimOf(t, claims, "c")
	for _, other := range claims {
		if other.Name == "later" && len(other.Runs) > 1 {
			t.Fatalf("a schedule that was not overdue enqueued %d runs", len(other.Runs))
		}
	}
	// The ticks from first up to the claim's now: two, or three when a minute began
	// between the reschedule and the claim.
	want := minuteTicks(first, c.NextRunAt)
	if len(want) < 2 || len(want) > 3 {
		t.Fatalf("claim: NextRunAt %s is not the first tick after now (first due tick %s)", c.NextRunAt, first)
	}
	if got := runTicks(c.Runs); !equalTimes(got, want) {
		t.Fatalf("claim runs: ticks %v, want %v", got, want)
	}
	if c.SkippedTicks != 0 {
		t.Fatalf("catch-up all skipped %d ticks", c.SkippedTicks)
	}
	for i, run := range c.Runs {
		checkRun(t, run, sc, want[i])
		sameTask(t, "GetTask of a run", get(t, s, run.ID), run)
	}
	checkNextMinute(t, "NextRunAt after a claim", c.NextRunAt, time.Now().Add(-time.Minute), time.Now())
	after := getSchedule(t, s, "c")
	if !after.NextRunAt.Equal(c.NextRunAt) {
		t.Fatalf("schedule NextRunAt %s, claim reported %s", after.NextRunAt, c.NextRunAt)
	}
	if after.LastRunAt == nil || !after.LastRunAt.Equal(want[len(want)-1]) {
		t.Fatalf("LastRunAt = %v, want the last tick %s", after.LastRunAt, want[len(want)-1])
	}
	nearNowPtr(t, "LastEnqueuedAt", after.LastEnqueuedAt)

	// The runs are due tasks of the template's queue: workers are woken and claim them.
	waitFor(t, "a wake-up for queue cq", func() bool {
		select {
		case q := <-wake:
			return q == "cq"
		default:
			return false
		}
	})
	if got := claim(t, s, claimParams("cq", 10)); len(got) != len(want) {
		t.Fatalf("ClaimTasks(cq) took %d runs, want %d", len(got), len(want))
	}

	// Nothing is due now (unless a minute began meanwhile: then exactly one new tick).
	for _, again := range claimSchedules(t, s, 10) {
		if again.Name == "c" && (len(again.Runs) != 1 || !again.Runs[0].ScheduledFor.Equal(c.NextRunAt)) {
			t.Fatalf("a second claim of c: %+v, want nothing or the one next tick %s", again, c.NextRunAt)
		}
	}
}

func testScheduleClaimInvalid(t *testing.T, s store.Store) {
	for _, limit := range []int{0, -1, store.MaxListLimit + 1} {
		_, err := s.ClaimDueSchedules(ctx(t), store.ClaimSchedulesParams{Limit: limit})
		wantErr(t, err, store.ErrInvalid, fmt.Sprintf("ClaimDueSchedules(limit %d)", limit))
	}
}

// testScheduleCatchUp: a schedule ten ticks overdue produces 0, 1 or 10 runs under skip,
// one or all. The three are claimed in one call, so they see the same now; when a minute
// begins between the reschedule and the claim (eleven ticks due), the round is repeated.
func testScheduleCatchUp(t *testing.T, s store.Store) {
	const overdue = 10
	policies := []store.CatchUp{store.CatchUpSkip, store.CatchUpOne, store.CatchUpAll}
	for round := 0; ; round++ {
		if round == 3 {
			t.Fatal("three rounds in a row crossed a minute boundary")
		}
		first := lastMinute(overdue - 1) // due: first .. first+9min
		scs := map[store.CatchUp]*store.Schedule{}
		for _, policy := range policies {
			name := fmt.Sprintf("%s-%d", policy, round)
			scs[policy] = mkSchedule(t, s, store.ScheduleParams{Name: name, CronSpec: everyMinute, CatchUp: policy,
				Task: store.TaskTemplate{Kind: "k", Queue: "q-" + name}})
			reschedule(t, s, name, first)
		}
		claims := claimSchedules(t, s, 10)
		if len(claims) != len(policies) {
			t.Fatalf("claimed %v, want the %d overdue schedules", claimNames(claims), len(policies))
		}
		due := minuteTicks(first, claims[0].NextRunAt)
		for _, c := range claims {
			if !c.NextRunAt.Equal(claims[0].NextRunAt) {
				t.Fatalf("one claim, different next ticks: %s and %s", claims[0].NextRunAt, c.NextRunAt)
			}
		}
		if len(due) == overdue+1 {
			continue // a minute began: not ten ticks overdue any more
		}
		if len(due) != overdue {
			t.Fatalf("NextRunAt %s after a claim of a schedule due since %s: %d ticks due, want %d", claims[0].NextRunAt, first, len(due), overdue)
		}
		for _, policy := range policies {
			sc := scs[policy]
			c := claimOf(t, claims, sc.Name)
			var wantTicks []time.Time
			var wantSkipped int
			switch policy {
			case store.CatchUpSkip:
				wantSkipped = overdue
			case store.CatchUpOne:
				wantTicks, wantSkipped = due[overdue-1:], overdue-1
			case store.CatchUpAll:
				wantTicks = due
			}
			if got := runTicks(c.Runs); !equalTimes(got, wantTicks) || c.SkippedTicks != wantSkipped {
				t.Fatalf("catch-up %s: runs for %v, %d skipped; want runs for %v, %d skipped", policy, got, c.SkippedTicks, wantTicks, wantSkipped)
			}
			for i, run := range c.Runs {
				checkRun(t, run, sc, wantTicks[i])
			}
			if runs := scheduleRuns(t, s, sc.Name); len(runs) != len(wantTicks) {
				t.Fatalf("catch-up %s: ListScheduleRuns has %d runs, want %d", policy, len(runs), len(wantTicks))
			}
			after := getSchedule(t, s, sc.Name)
			if !after.NextRunAt.Equal(first.Add(overdue * time.Minute)) {
				t.Fatalf("catch-up %s: NextRunAt %s, want %s", policy, after.NextRunAt, first.Add(overdue*time.Minute))
			}
			switch {
			case policy == store.CatchUpSkip && after.LastRunAt != nil:
				t.Fatalf("catch-up skip enqueued nothing but set LastRunAt %s", after.LastRunAt)
			case policy != store.CatchUpSkip && (after.LastRunAt == nil || !after.LastRunAt.Equal(due[overdue-1])):
				t.Fatalf("catch-up %s: LastRunAt %v, want %s", policy, after.LastRunAt, due[overdue-1])
			}
		}
		return
	}
}

// testScheduleCatchUpAllBounded: catch-up all enqueues at most MaxCatchUpRuns per claim;
// the next claim continues where it stopped.
func testScheduleCatchUpAllBounded(t *testing.T, s store.Store) {
	const overdue = store.MaxCatchUpRuns + 20
	sc := mkSchedule(t, s, store.ScheduleParams{Name: "all", CronSpec: everyMinute, CatchUp: store.CatchUpAll, Task: store.TaskTemplate{Kind: "k"}})
	first := lastMinute(overdue - 1)
	reschedule(t, s, "all", first)
	c1 := claimOf(t, claimSchedules(t, s, 1), "all")
	if len(c1.Runs) != store.MaxCatchUpRuns {
		t.Fatalf("first claim enqueued %d runs, want MaxCatchUpRuns = %d", len(c1.Runs), store.MaxCatchUpRuns)
	}
	if want := first.Add(store.MaxCatchUpRuns * time.Minute); !c1.NextRunAt.Equal(want) {
		t.Fatalf("after a bounded claim NextRunAt = %s, want the first tick not enqueued %s", c1.NextRunAt, want)
	}
	c2 := claimOf(t, claimSchedules(t, s, 1), "all")
	all := append(slices.Clone(c1.Runs), c2.Runs...)
	want := minuteTicks(first, c2.NextRunAt)
	if len(want) < overdue || !equalTimes(runTicks(all), want) {
		t.Fatalf("two claims enqueued ticks %v, want %v", runTicks(all), want)
	}
	for i, run := range all {
		checkRun(t, run, sc, want[i])
	}
}

// testScheduleCatchUpFarBehind: a schedule far more than CatchUpScanLimit ticks behind
// still enqueues exactly the latest due tick under one, nothing under skip, and moves
// to the next tick after now.
func testScheduleCatchUpFarBehind(t *testing.T, s store.Store) {
	first := lastMinute(3 * 24 * 60) // three days of every-minute ticks
	for _, policy := range []store.CatchUp{store.CatchUpOne, store.CatchUpSkip} {
		name := "far-" + string(policy)
		sc := mkSchedule(t, s, store.ScheduleParams{Name: name, CronSpec: everyMinute, CatchUp: policy, Task: store.TaskTemplate{Kind: "k"}})
		reschedule(t, s, name, first)
		before := time.Now()
		c := claimOf(t, claimSchedules(t, s, 1), name)
		checkNextMinute(t, "NextRunAt after a far-behind claim", c.NextRunAt, before, time.Now())
		if c.SkippedTicks < store.CatchUpScanLimit-1 {
			t.Fatalf("catch-up %s: %d skipped, want at least %d", policy, c.SkippedTicks, store.CatchUpScanLimit-1)
		}
		switch policy {
		case store.CatchUpOne:
			if len(c.Runs) != 1 {
				t.Fatalf("catch-up one: %d runs, want 1", len(c.Runs))
			}
			checkRun(t, c.Runs[0], sc, c.NextRunAt.Add(-time.Minute))
		case store.CatchUpSkip:
			if len(c.Runs) != 0 {
				t.Fatalf("catch-up skip: %d runs, want 0", len(c.Runs))
			}
		}
	}
}

func testScheduleDisabledNotClaimed(t *testing.T, s store.Store) {
	off := false
	mkSchedule(t, s, store.ScheduleParams{Name: "off", CronSpec: everyMinute, Enabled: &off, Task: store.TaskTemplate{Kind: "k"}})
	mkSchedule(t, s, store.ScheduleParams{Name: "on", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
	past := reschedule(t, s, "off", lastMinute(5)).NextRunAt
	reschedule(t, s, "on", past)
	claims := claimSchedules(t, s, 10)
	if len(claims) != 1 || claims[0].Name != "on" {
		t.Fatalf("claimed %v, want only the enabled schedule", claimNames(claims))
	}
	if runs := scheduleRuns(t, s, "off"); len(runs) != 0 {
		t.Fatalf("a disabled schedule has %d runs", len(runs))
	}
	if sc := getSchedule(t, s, "off"); !sc.NextRunAt.Equal(past) {
		t.Fatalf("a disabled schedule's NextRunAt moved to %s", sc.NextRunAt)
	}
}

// testScheduleTickOnce: moving NextRunAt back to ticks already enqueued never enqueues
// them again; the claim still advances the schedule.
func testScheduleTickOnce(t *testing.T, s store.Store) {
	mkSchedule(t, s, store.ScheduleParams{Name: "once", CronSpec: everyMinute, CatchUp: store.CatchUpAll, Task: store.TaskTemplate{Kind: "k"}})
	first := lastMinute(3)
	reschedule(t, s, "once", first)
	c1 := claimOf(t, claimSchedules(t, s, 10), "once")
	if len(c1.Runs) < 4 {
		t.Fatalf("first claim enqueued %d runs, want at least 4", len(c1.Runs))
	}
	reschedule(t, s, "once", first)
	c2 := claimOf(t, claimSchedules(t, s, 10), "once")
	// Only ticks after the first claim's NextRunAt may be new (a minute began meanwhile).
	for _, run := range c2.Runs {
		if run.ScheduledFor.Before(c1.NextRunAt) {
			t.Fatalf("the tick %s was enqueued again", run.ScheduledFor)
		}
	}
	if c2.NextRunAt.Before(c1.NextRunAt) {
		t.Fatalf("the second claim left NextRunAt at %s, before %s", c2.NextRunAt, c1.NextRunAt)
	}
	runs := scheduleRuns(t, s, "once")
	seen := map[string]bool{}
	for _, run := range runs {
		if seen[run.IdempotencyKey] {
			t.Fatalf("two runs with key %q", run.IdempotencyKey)
		}
		seen[run.IdempotencyKey] = true
	}
	if len(runs) != len(c1.Runs)+len(c2.Runs) {
		t.Fatalf("%d runs listed, the claims enqueued %d", len(runs), len(c1.Runs)+len(c2.Runs))
	}
	// The same holds under catch-up one, for the single tick it picks.
	one := store.CatchUpOne
	if _, err := s.UpdateSchedule(ctx(t), "once", store.ScheduleUpdate{CatchUp: &one}); err != nil {
		t.Fatal(err)
	}
	last := c1.Runs[len(c1.Runs)-1].ScheduledFor
	reschedule(t, s, "once", last)
	c3 := claimOf(t, claimSchedules(t, s, 10), "once")
	if len(c3.Runs) != 0 && !c3.Runs[0].ScheduledFor.After(last) {
		t.Fatalf("catch-up one enqueued the tick %s again", c3.Runs[0].ScheduledFor)
	}
}

func testScheduleRuns(t *testing.T, s store.Store) {
	// "nightly" and "nightly-2": one name is a prefix of the other's; "night_y" has a
	// LIKE wildcard in it.
	for _, name := range []string{"nightly", "nightly-2", "night_y"} {
		mkSchedule(t, s, store.ScheduleParams{Name: name, CronSpec: everyMinute, CatchUp: store.CatchUpAll, Task: store.TaskTemplate{Kind: "k"}})
	}
	empty, next, err := s.ListScheduleRuns(ctx(t), store.ScheduleRunsParams{Name: "nightly"})
	if err != nil || len(empty) != 0 || next != "" {
		t.Fatalf("runs of a schedule that never ran: %v, %q, %v", ids(empty), next, err)
	}
	for _, name := range []string{"nightly", "nightly-2", "night_y"} {
		reschedule(t, s, name, lastMinute(4))
	}
	claims := claimSchedules(t, s, 10)
	c := claimOf(t, claims, "nightly")
	want := slices.Clone(c.Runs)
	for range 3 {
		run, err := s.TriggerSchedule(ctx(t), "nightly")
		if err != nil {
			t.Fatalf("TriggerSchedule: %v", err)
		}
		want = append(want, run)
	}
	createOne(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "nightly:not-a-run"})
	createOne(t, s, store.CreateParams{Kind: "k"})

	var got []*store.Task
	p := store.ScheduleRunsParams{Name: "nightly", Limit: 3}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("ListScheduleRuns: paging never ends")
		}
		tasks, next, err := s.ListScheduleRuns(ctx(t), p)
		if err != nil {
			t.Fatalf("ListScheduleRuns(%+v): %v", p, err)
		}
		if len(tasks) > 3 {
			t.Fatalf("ListScheduleRuns(limit 3) returned %d", len(tasks))
		}
		got = append(got, tasks...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	// Newest first is by id (time-ordered). Claims and triggers may take ids from
	// different clocks (the database's, this process's), so only the set is compared
	// with what was created, and the order with the ids.
	for i := 1; i < len(got); i++ {
		if compareIDs(got[i-1].ID, got[i].ID) <= 0 {
			t.Fatalf("runs of nightly are not newest first (by id): %v", ids(got))
		}
	}
	if !slices.Equal(sortedIDs(got), sortedIDs(want)) {
		t.Fatalf("runs of nightly: %v, want %v", ids(got), ids(want))
	}
	// One claim's runs are in tick order.
	for i := 1; i < len(c.Runs); i++ {
		if compareIDs(c.Runs[i-1].ID, c.Runs[i].ID) >= 0 {
			t.Fatalf("one claim's runs do not take ids in tick order: %v", ids(c.Runs))
		}
	}
	for _, name := range []string{"nightly-2", "night_y"} {
		if runs := scheduleRuns(t, s, name); len(runs) != len(claimOf(t, claims, name).Runs) {
			t.Fatalf("runs of %s: %d, want %d", name, len(runs), len(claimOf(t, claims, name).Runs))
		}
	}
	_, _, err = s.ListScheduleRuns(ctx(t), store.ScheduleRunsParams{Name: "nightly", Cursor: "%%%"})
	wantErr(t, err, store.ErrInvalid, "ListScheduleRuns with a malformed cursor")
	_, _, err = s.ListScheduleRuns(ctx(t), store.ScheduleRunsParams{Name: "nightly", Limit: store.MaxListLimit + 1})
	wantErr(t, err, store.ErrInvalid, "ListScheduleRuns with a limit too large")
	_, _, err = s.ListScheduleRuns(ctx(t), store.ScheduleRunsParams{Name: "a:b"})
	wantErr(t, err, store.ErrInvalid, "ListScheduleRuns with a bad name")
}

// testScheduleConcurrentClaims is the acceptance test of the claim: 10 concurrent
// claimers against 1,000 due schedules enqueue every due tick exactly once and never
// claim a schedule twice.
func testScheduleConcurrentClaims(t *testing.T, s store.Store) {
	const (
		schedules = 1000
		claimers  = 10
		batch     = 7
		overdue   = 3 // hourly ticks due per schedule
	)
	// Hourly ticks: a schedule becomes due again only if an hour begins during the test,
	// which the checks below notice.
	startHour := time.Now().UTC().Truncate(time.Hour)
	first := startHour.Add(-(overdue - 1) * time.Hour)
	c := ctx(t)
	setup := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, schedules)
	for range 8 {
		wg.Go(func() {
			for i := range setup {
				name := fmt.Sprintf("s%04d", i)
				if _, err := s.CreateSchedule(c, store.ScheduleParams{Name: name, CronSpec: "0 * * * *",
					CatchUp: store.CatchUpAll, Task: store.TaskTemplate{Kind: "k", Queue: "cc"}}); err != nil {
					errs <- err
					continue
				}
				if _, err := s.RescheduleSchedule(c, name, first); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range schedules {
		setup <- i
	}
	close(setup)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("setup: %v", err)
	}

	results := make([][]store.ScheduleClaim, claimers)
	claimErrs := make([]error, claimers)
	start := make(chan struct{})
	for w := range claimers {
		wg.Go(func() {
			<-start
			for {
				claims, err := s.ClaimDueSchedules(c, store.ClaimSchedulesParams{Limit: batch})
				if err != nil {
					claimErrs[w] = err
					return
				}
				if len(claims) > batch {
					claimErrs[w] = fmt.Errorf("claimed %d schedules, limit %d", len(claims), batch)
					return
				}
				if len(claims) == 0 {
					return
				}
				results[w] = append(results[w], claims...)
			}
		})
	}
	close(start)
	wg.Wait()
	for w, err := range claimErrs {
		if err != nil {
			t.Fatalf("claimer %d: %v", w, err)
		}
	}
	hourBegan := !time.Now().UTC().Truncate(time.Hour).Equal(startHour)

	claimsOf := map[string]int{}
	keys := map[string]bool{}
	for _, rs := range results {
		for _, c := range rs {
			claimsOf[c.Name]++
			for _, run := range c.Runs {
				if keys[run.IdempotencyKey] {
					t.Fatalf("tick enqueued twice: %q", run.IdempotencyKey)
				}
				keys[run.IdempotencyKey] = true
			}
		}
	}
	if len(claimsOf) != schedules {
		t.Fatalf("%d schedules claimed, want %d", len(claimsOf), schedules)
	}
	for name, n := range claimsOf {
		if n != 1 && !hourBegan {
			t.Fatalf("schedule %s claimed %d times", name, n)
		}
	}
	if claims := claimSchedules(t, s, 10); len(claims) != 0 && !hourBegan {
		t.Fatalf("schedules still due after every claimer stopped: %v", claimNames(claims))
	}
	// Every due tick of every schedule has exactly one run.
	total := 0
	for i := range schedules {
		name := fmt.Sprintf("s%04d", i)
		next := getSchedule(t, s, name).NextRunAt
		for tick := first; tick.Before(next); tick = tick.Add(time.Hour) {
			if !keys[store.ScheduleRunKey(name, tick)] {
				t.Fatalf("schedule %s: no run for the tick %s", name, tick)
			}
			total++
		}
	}
	if total != len(keys) || total < schedules*overdue {
		t.Fatalf("%d runs enqueued for %d due ticks (want at least %d)", len(keys), total, schedules*overdue)
	}
	if st := statsOf(t, s, "cc"); st == nil || st.Counts[store.StatusPending] != int64(total) {
		t.Fatalf("queue cc stats %+v, want %d PENDING runs", st, total)
	}
}
