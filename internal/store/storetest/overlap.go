package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// The overlap half of the schedule suite (DESIGN.md section 11). Ticks are driven by
// RescheduleSchedule: a yearly schedule moved to a past moment has exactly that moment
// due (its next tick is months away), so each claim sees one tick, or as many as the
// test moves it back over under catch-up all.

var overlapTests = []testCase{
	{"OverlapDefaultAndValidation", testOverlapValidation},
	{"OverlapAllow", testOverlapAllow},
	{"OverlapSkip", testOverlapSkip},
	{"OverlapBufferOne", testOverlapBufferOne},
	{"OverlapBufferOneHeldRunCanceled", testOverlapBufferOneHeldCanceled},
	{"OverlapBufferOneRestore", testOverlapBufferOneRestore},
	{"OverlapCancelOther", testOverlapCancelOther},
	{"OverlapWithCatchUp", testOverlapCatchUp},
	{"OverlapTriggerIgnoresIt", testOverlapTrigger},
}

const yearly = "0 0 1 1 *"

// tickDriver moves a yearly schedule to distinct past seconds, one per tick.
type tickDriver struct {
	t    *testing.T
	s    store.Store
	name string
	base time.Time
	n    int
}

func newTickDriver(t *testing.T, s store.Store, p store.ScheduleParams) *tickDriver {
	t.Helper()
	p.CronSpec = yearly
	if p.Task.Kind == "" {
		p.Task = store.TaskTemplate{Kind: "k", Queue: "q-" + p.Name}
	}
	mkSchedule(t, s, p)
	return &tickDriver{t: t, s: s, name: p.Name, base: time.Now().UTC().Truncate(time.Second).Add(-time.Hour)}
}

// tick makes the next tick due and claims it.
func (d *tickDriver) tick() store.ScheduleClaim {
	d.t.Helper()
	d.n++
	reschedule(d.t, d.s, d.name, d.base.Add(time.Duration(d.n)*time.Second))
	return claimOf(d.t, claimSchedules(d.t, d.s, 10), d.name)
}

// state reads the schedule.
func (d *tickDriver) state() *store.Schedule { return getSchedule(d.t, d.s, d.name) }

func wantRuns(t *testing.T, what string, c store.ScheduleClaim, n int) {
	t.Helper()
	if len(c.Runs) != n {
		t.Fatalf("%s: %d runs, want %d", what, len(c.Runs), n)
	}
}

func wantIDPtr(t *testing.T, what string, got *uuid.UUID, want *store.Task) {
	t.Helper()
	switch {
	case want == nil && got != nil:
		t.Fatalf("%s = %s, want none", what, *got)
	case want != nil && (got == nil || *got != want.ID):
		t.Fatalf("%s = %v, want %s", what, got, want.ID)
	}
}

// finish claims run (its own queue, by id) and records kind for it.
func finish(t *testing.T, s store.Store, run *store.Task, kind store.OutcomeKind, want store.Status) {
	t.Helper()
	c := claimID(t, s, run, store.StatusPending, 30*time.Second)
	recordOK(t, s, outcome(c, kind, "done"), want)
}

func testOverlapValidation(t *testing.T, s store.Store) {
	d := mkSchedule(t, s, store.ScheduleParams{Name: "d", CronSpec: everyMinute, Task: store.TaskTemplate{Kind: "k"}})
	if d.Overlap != store.OverlapAllow || d.SkippedTicks != 0 || d.LastSkippedAt != nil || d.CurrentRunID != nil || d.WaitingRunID != nil {
		t.Fatalf("a new schedule: overlap %q, skipped %d, last skipped %v, current %v, waiting %v; want allow and nothing",
			d.Overlap, d.SkippedTicks, d.LastSkippedAt, d.CurrentRunID, d.WaitingRunID)
	}
	for _, o := range []store.Overlap{store.OverlapAllow, store.OverlapSkip, store.OverlapBufferOne, store.OverlapCancelOther} {
		sc := mkSchedule(t, s, store.ScheduleParams{Name: "o-" + string(o), CronSpec: everyMinute, Overlap: o, Task: store.TaskTemplate{Kind: "k"}})
		if sc.Overlap != o || getSchedule(t, s, sc.Name).Overlap != o {
			t.Fatalf("created with overlap %q: %q", o, sc.Overlap)
		}
	}
	_, err := s.CreateSchedule(ctx(t), store.ScheduleParams{Name: "bad", CronSpec: everyMinute, Overlap: "queue", Task: store.TaskTemplate{Kind: "k"}})
	wantErr(t, err, store.ErrInvalid, "CreateSchedule with overlap \"queue\"")
	if !strings.Contains(err.Error(), "overlap") || !strings.Contains(err.Error(), "buffer_one") {
		t.Fatalf("the error %q does not name the field and the values", err)
	}
	skip := store.OverlapSkip
	got, err := s.UpdateSchedule(ctx(t), "d", store.ScheduleUpdate{Overlap: &skip})
	if err != nil || got.Overlap != store.OverlapSkip {
		t.Fatalf("UpdateSchedule(overlap skip): %+v, %v", got, err)
	}
	bad := store.Overlap("Skip")
	_, err = s.UpdateSchedule(ctx(t), "d", store.ScheduleUpdate{Overlap: &bad})
	wantErr(t, err, store.ErrInvalid, "UpdateSchedule with overlap \"Skip\"")
	if sc := getSchedule(t, s, "d"); sc.Overlap != store.OverlapSkip {
		t.Fatalf("a rejected update changed overlap to %q", sc.Overlap)
	}
}

// testOverlapAllow: every tick runs while the previous runs wait or run.
func testOverlapAllow(t *testing.T, s store.Store) {
	d := newTickDriver(t, s, store.ScheduleParams{Name: "allow"})
	r1 := d.tick()
	wantRuns(t, "tick 1", r1, 1)
	claimID(t, s, r1.Runs[0], store.StatusPending, time.Minute) // PROCESSING
	r2 := d.tick()
	wantRuns(t, "tick 2 while run 1 runs", r2, 1)
	r3 := d.tick()
	wantRuns(t, "tick 3 while run 2 waits", r3, 1)
	if r3.SkippedTicks != 0 || d.state().SkippedTicks != 0 {
		t.Fatalf("allow skipped ticks: %d, schedule %d", r3.SkippedTicks, d.state().SkippedTicks)
	}
	if got := get(t, s, r1.Runs[0].ID).Status; got != store.StatusProcessing {
		t.Fatalf("run 1 is %s, want still PROCESSING", got)
	}
	wantIDPtr(t, "CurrentRunID", d.state().CurrentRunID, r3.Runs[0])

	// A tick whose run exists (next_run_at moved back onto it) inserts nothing and does
	// not become the current run: after a switch to skip, run 3 still blocks.
	reschedule(t, s, d.name, d.base.Add(time.Duration(d.n)*time.Second))
	wantRuns(t, "the same tick again", claimOf(t, claimSchedules(t, s, 10), d.name), 0)
	wantIDPtr(t, "CurrentRunID after a repeated tick", d.state().CurrentRunID, r3.Runs[0])
	skip := store.OverlapSkip
	if _, err := s.UpdateSchedule(ctx(t), d.name, store.ScheduleUpdate{Overlap: &skip}); err != nil {
		t.Fatal(err)
	}
	wantRuns(t, "tick 4 under skip while run 3 waits", d.tick(), 0)
}

// testOverlapSkip: no run while the previous one is unfinished (PENDING, PROCESSING);
// the skipped ticks are counted on the claim and the schedule.
func testOverlapSkip(t *testing.T, s store.Store) {
	d := newTickDriver(t, s, store.ScheduleParams{Name: "skip", Overlap: store.OverlapSkip})
	c1 := d.tick()
	wantRuns(t, "tick 1", c1, 1)
	run1 := c1.Runs[0]
	wantIDPtr(t, "CurrentRunID after tick 1", d.state().CurrentRunID, run1)

	c2 := d.tick() // run 1 PENDING
	wantRuns(t, "tick 2 while run 1 is PENDING", c2, 0)
	if c2.SkippedTicks != 1 {
		t.Fatalf("tick 2: SkippedTicks %d, want 1", c2.SkippedTicks)
	}
	claimed := claimID(t, s, run1, store.StatusPending, time.Minute)
	c3 := d.tick() // run 1 PROCESSING
	wantRuns(t, "tick 3 while run 1 is PROCESSING", c3, 0)
	sc := d.state()
	if sc.SkippedTicks != 2 || sc.LastSkippedAt == nil {
		t.Fatalf("after two skipped ticks: SkippedTicks %d, LastSkippedAt %v", sc.SkippedTicks, sc.LastSkippedAt)
	}
	nearNowPtr(t, "LastSkippedAt", sc.LastSkippedAt)

	recordOK(t, s, outcome(claimed, store.Succeed, ""), store.StatusSucceeded)
	if sc := d.state(); sc.CurrentRunID != nil {
		t.Fatalf("the current run succeeded, CurrentRunID still %s", *sc.CurrentRunID)
	}
	c4 := d.tick()
	wantRuns(t, "tick 4 after run 1 ended", c4, 1)
	// Every final status frees the schedule: FAILED here.
	finish(t, s, c4.Runs[0], store.Fail, store.StatusFailed)
	c5 := d.tick()
	wantRuns(t, "tick 5 after run 4 failed", c5, 1)
	if sc := d.state(); sc.SkippedTicks != 2 {
		t.Fatalf("SkippedTicks %d, want 2", sc.SkippedTicks)
	}
	if runs := scheduleRuns(t, s, "skip"); len(runs) != 3 {
		t.Fatalf("%d runs listed, want 3", len(runs))
	}
}

// testOverlapBufferOne: one run waits (held, not due) while the current one is
// unfinished; further ticks are skipped; the waiting run becomes due in the
// transaction that finishes the current one, and becomes the current run.
func testOverlapBufferOne(t *testing.T, s store.Store) {
	d := newTickDriver(t, s, store.ScheduleParams{Name: "buf", Overlap: store.OverlapBufferOne})
	c1 := d.tick()
	wantRuns(t, "tick 1", c1, 1)
	run1 := claimID(t, s, c1.Runs[0], store.StatusPending, time.Minute)

	c2 := d.tick()
	wantRuns(t, "tick 2 while run 1 runs", c2, 1)
	run2 := c2.Runs[0]
	if run2.Status != store.StatusPending || !run2.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatalf("the buffered run: %s at %s, want PENDING held at %s", run2.Status, run2.ScheduledFor, store.HeldRunAt)
	}
	if want := store.ScheduleRunKey("buf", d.base.Add(2*time.Second)); run2.IdempotencyKey != want {
		t.Fatalf("the buffered run's key %q, want its tick's %q", run2.IdempotencyKey, want)
	}
	sc := d.state()
	wantIDPtr(t, "CurrentRunID", sc.CurrentRunID, run1)
	wantIDPtr(t, "WaitingRunID", sc.WaitingRunID, run2)

	c3 := d.tick()
	wantRuns(t, "tick 3 while one waits", c3, 0)
	if c3.SkippedTicks != 1 || d.state().SkippedTicks != 1 {
		t.Fatalf("tick 3: SkippedTicks %d, schedule %d; want 1, 1", c3.SkippedTicks, d.state().SkippedTicks)
	}
	// The held run is not claimable.
	if got := claim(t, s, claimParams(run1.Queue, 10)); len(got) != 0 {
		t.Fatalf("claimed %v while the buffered run is held", ids(got))
	}

	recordOK(t, s, outcome(run1, store.Succeed, ""), store.StatusSucceeded)
	released := get(t, s, run2.ID)
	if released.Status != store.StatusPending || released.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatalf("after run 1 ended the buffered run is %s at %s, want due", released.Status, released.ScheduledFor)
	}
	nearNow(t, "the released run's ScheduledFor", released.ScheduledFor)
	sc = d.state()
	wantIDPtr(t, "CurrentRunID after release", sc.CurrentRunID, run2)
	wantIDPtr(t, "WaitingRunID after release", sc.WaitingRunID, nil)
	got := claim(t, s, claimParams(run1.Queue, 10))
	if len(got) != 1 || got[0].ID != run2.ID {
		t.Fatalf("claimed %v, want the released run %s", ids(got), run2.ID)
	}

	// The next tick buffers again behind run 2; ending run 2 by the reaper-free path of a
	// cancel request releases it too.
	c4 := d.tick()
	wantRuns(t, "tick 4 while run 2 runs", c4, 1)
	if _, err := s.CancelTask(ctx(t), run2.ID); err != nil {
		t.Fatal(err)
	}
	recordOK(t, s, outcome(got[0], store.Cancel, ""), store.StatusCanceled)
	if r := get(t, s, c4.Runs[0].ID); r.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatal("the buffered run stayed held after the current run was canceled")
	}

	// Deleting the schedule cancels a run still held (nothing could release it).
	claimID(t, s, c4.Runs[0], store.StatusPending, time.Minute)
	c5 := d.tick()
	wantRuns(t, "tick 5", c5, 1)
	if err := s.DeleteSchedule(ctx(t), "buf"); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, c5.Runs[0].ID); r.Status != store.StatusCanceled {
		t.Fatalf("the held run of a deleted schedule is %s, want CANCELED", r.Status)
	}
	if r := get(t, s, c4.Runs[0].ID); r.Status != store.StatusProcessing {
		t.Fatalf("the running run of a deleted schedule is %s, want PROCESSING (runs stay)", r.Status)
	}
}

// testOverlapBufferOneHeldCanceled: a held run canceled by hand frees the buffer: the
// next tick buffers a new one.
func testOverlapBufferOneHeldCanceled(t *testing.T, s store.Store) {
	d := newTickDriver(t, s, store.ScheduleParams{Name: "bufc", Overlap: store.OverlapBufferOne})
	run1 := d.tick().Runs[0]
	held := d.tick()
	wantRuns(t, "tick 2", held, 1)
	if _, err := s.CancelTask(ctx(t), held.Runs[0].ID); err != nil {
		t.Fatal(err)
	}
	sc := d.state()
	wantIDPtr(t, "WaitingRunID after its cancel", sc.WaitingRunID, nil)
	wantIDPtr(t, "CurrentRunID", sc.CurrentRunID, run1)
	again := d.tick()
	wantRuns(t, "tick 3 after the held run was canceled", again, 1)
	if !again.Runs[0].ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatalf("the new buffered run is at %s, want held", again.Runs[0].ScheduledFor)
	}
	// A PENDING current run (not started yet) counts as unfinished as well.
	if got := get(t, s, run1.ID).Status; got != store.StatusPending {
		t.Fatalf("run 1 is %s", got)
	}
	finish(t, s, run1, store.Succeed, store.StatusSucceeded)
	if r := get(t, s, again.Runs[0].ID); r.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatal("the buffered run stayed held after run 1 succeeded")
	}
}

// testOverlapBufferOneRestore: moved back over ticks (a restore), a claim whose first
// tick's run exists (it ended) inserts nothing for it; the next tick, which buffer_one
// would hold behind it, then runs instead of waiting for a run that does not run. Held,
// it would wait for a later run to end, and a later claim, seeing the schedule idle,
// would hold another run in its place and leave this one held for good.
func testOverlapBufferOneRestore(t *testing.T, s store.Store) {
	mkSchedule(t, s, store.ScheduleParams{Name: "rst", CronSpec: everyMinute,
		Overlap: store.OverlapBufferOne, CatchUp: store.CatchUpAll,
		Task: store.TaskTemplate{Kind: "k", Queue: "q-rst"}})
	first := lastMinute(3)
	reschedule(t, s, "rst", first)
	c := claimOf(t, claimSchedules(t, s, 10), "rst")
	wantRuns(t, "the first claim", c, 2)
	running, held := c.Runs[0], c.Runs[1]
	if !held.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatalf("the second run is at %s, want held", held.ScheduledFor)
	}
	// The held run is canceled (its tick's key is free again), the running one ends.
	if _, err := s.CancelTask(ctx(t), held.ID); err != nil {
		t.Fatal(err)
	}
	finish(t, s, running, store.Succeed, store.StatusSucceeded)

	// Back over the same ticks: the first has its run, the second gets one, which runs.
	reschedule(t, s, "rst", first)
	c = claimOf(t, claimSchedules(t, s, 10), "rst")
	wantRuns(t, "the claim over restored ticks", c, 1)
	again := c.Runs[0]
	if want := store.ScheduleRunKey("rst", first.Add(time.Minute)); again.IdempotencyKey != want {
		t.Fatalf("the new run's key %q, want the second tick's %q", again.IdempotencyKey, want)
	}
	if again.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatal("the second tick's run is held behind a run that does not run")
	}
	sc := getSchedule(t, s, "rst")
	wantIDPtr(t, "CurrentRunID", sc.CurrentRunID, again)
	wantIDPtr(t, "WaitingRunID", sc.WaitingRunID, nil)
	if got := claim(t, s, claimParams("q-rst", 10)); len(got) != 1 || got[0].ID != again.ID {
		t.Fatalf("claimed %v, want the second tick's run %s", ids(got), again.ID)
	}
}

// testOverlapCancelOther: a new run cancels the unfinished previous one as CancelTask
// does: a PENDING one at once, a PROCESSING one by a cancel request.
func testOverlapCancelOther(t *testing.T, s store.Store) {
	d := newTickDriver(t, s, store.ScheduleParams{Name: "co", Overlap: store.OverlapCancelOther})
	c1 := d.tick()
	wantRuns(t, "tick 1", c1, 1)
	c2 := d.tick()
	wantRuns(t, "tick 2", c2, 1)
	if r := get(t, s, c1.Runs[0].ID); r.Status != store.StatusCanceled || r.CompletedAt == nil {
		t.Fatalf("the PENDING run 1 after tick 2: %s (completed %v), want CANCELED", r.Status, r.CompletedAt)
	}
	wantIDPtr(t, "CurrentRunID", d.state().CurrentRunID, c2.Runs[0])

	run2 := claimID(t, s, c2.Runs[0], store.StatusPending, time.Minute)
	c3 := d.tick()
	wantRuns(t, "tick 3 while run 2 runs", c3, 1)
	r2 := get(t, s, run2.ID)
	if r2.Status != store.StatusProcessing || r2.CancelRequestedAt == nil {
		t.Fatalf("the PROCESSING run 2 after tick 3: %s, cancel requested %v; want a cancel request", r2.Status, r2.CancelRequestedAt)
	}
	if c3.Runs[0].Status != store.StatusPending || c3.Runs[0].ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatalf("run 3 is %s at %s, want due at once", c3.Runs[0].Status, c3.Runs[0].ScheduledFor)
	}
	// The worker records the cancel; run 3 stays the current run.
	recordOK(t, s, outcome(run2, store.Retry, "context canceled"), store.StatusCanceled)
	wantIDPtr(t, "CurrentRunID after run 2 ended", d.state().CurrentRunID, c3.Runs[0])
	if sc := d.state(); sc.SkippedTicks != 0 {
		t.Fatalf("cancel_other skipped %d ticks", sc.SkippedTicks)
	}
	// A finished current run is not touched.
	finish(t, s, c3.Runs[0], store.Succeed, store.StatusSucceeded)
	wantRuns(t, "tick 4", d.tick(), 1)
	if r := get(t, s, c3.Runs[0].ID); r.Status != store.StatusSucceeded {
		t.Fatalf("run 3 is %s, want SUCCEEDED", r.Status)
	}
}

// testOverlapCatchUp: overlap applies to the ticks catch-up chose. Four every-minute
// ticks overdue, nothing running: under catch-up all, allow runs 4, skip runs the first
// (3 skipped), buffer_one runs the first and holds the second (2 skipped), cancel_other
// runs the last (3 skipped). Under catch-up one (3 skipped by catch-up) the chosen tick
// runs under every policy when nothing runs, and is skipped under skip when one runs;
// catch-up skip's skipped ticks are counted too.
func testOverlapCatchUp(t *testing.T, s store.Store) {
	const overdue = 4
	type want struct {
		runs, held, skipped int
		firstTick           bool // the run is the first due tick (else the last)
	}
	cases := map[store.Overlap]want{
		store.OverlapAllow:       {overdue, 0, 0, true},
		store.OverlapSkip:        {1, 0, overdue - 1, true},
		store.OverlapBufferOne:   {2, 1, overdue - 2, true},
		store.OverlapCancelOther: {1, 0, overdue - 1, false},
	}
	for round := 0; ; round++ {
		if round == 3 {
			t.Fatal("three rounds in a row crossed a minute boundary")
		}
		first := lastMinute(overdue - 1)
		for o := range cases {
			name := fmt.Sprintf("all-%s-%d", strings.ReplaceAll(string(o), "_", "-"), round)
			mkSchedule(t, s, store.ScheduleParams{Name: name, CronSpec: everyMinute, CatchUp: store.CatchUpAll, Overlap: o,
				Task: store.TaskTemplate{Kind: "k", Queue: "q-" + name}})
			reschedule(t, s, name, first)
		}
		claims := claimSchedules(t, s, 10)
		if len(claims) != len(cases) {
			t.Fatalf("claimed %v", claimNames(claims))
		}
		due := minuteTicks(first, claims[0].NextRunAt)
		if len(due) != overdue {
			continue // a minute began
		}
		for o, w := range cases {
			name := fmt.Sprintf("all-%s-%d", strings.ReplaceAll(string(o), "_", "-"), round)
			c := claimOf(t, claims, name)
			if len(c.Runs) != w.runs || c.SkippedTicks != w.skipped {
				t.Fatalf("catch-up all, overlap %s: %d runs, %d skipped; want %d, %d", o, len(c.Runs), c.SkippedTicks, w.runs, w.skipped)
			}
			wantTick := due[overdue-1]
			if w.firstTick {
				wantTick = due[0]
			}
			if !c.Runs[0].ScheduledFor.Equal(wantTick) {
				t.Fatalf("overlap %s: the run is for %s, want %s", o, c.Runs[0].ScheduledFor, wantTick)
			}
			held := 0
			for _, r := range c.Runs {
				if r.ScheduledFor.Equal(store.HeldRunAt) {
					held++
				}
			}
			if held != w.held {
				t.Fatalf("overlap %s: %d held runs, want %d", o, held, w.held)
			}
			if o == store.OverlapBufferOne && c.Runs[1].IdempotencyKey != store.ScheduleRunKey(name, due[1]) {
				t.Fatalf("buffer_one held %q, want the second tick's run", c.Runs[1].IdempotencyKey)
			}
			if sc := getSchedule(t, s, name); sc.SkippedTicks != int64(w.skipped) {
				t.Fatalf("overlap %s: schedule SkippedTicks %d, want %d", o, sc.SkippedTicks, w.skipped)
			}
		}
		break
	}

	// Catch-up one under skip: the latest tick runs (the others skipped by catch-up);
	// a second overdue claim while it is unfinished skips the chosen tick too.
	d := mkSchedule(t, s, store.ScheduleParams{Name: "one-skip", CronSpec: everyMinute, Overlap: store.OverlapSkip,
		Task: store.TaskTemplate{Kind: "k", Queue: "q-one-skip"}})
	reschedule(t, s, d.Name, lastMinute(2))
	c := claimOf(t, claimSchedules(t, s, 10), d.Name)
	if len(c.Runs) != 1 || c.SkippedTicks < 2 {
		t.Fatalf("catch-up one, overlap skip, idle: %d runs, %d skipped; want 1, >= 2", len(c.Runs), c.SkippedTicks)
	}
	firstSkipped := c.SkippedTicks
	reschedule(t, s, d.Name, lastMinute(2))
	c = claimOf(t, claimSchedules(t, s, 10), d.Name)
	if len(c.Runs) != 0 || c.SkippedTicks < 3 {
		t.Fatalf("catch-up one, overlap skip, busy: %d runs, %d skipped; want 0, >= 3", len(c.Runs), c.SkippedTicks)
	}
	if sc := getSchedule(t, s, d.Name); sc.SkippedTicks != int64(firstSkipped+c.SkippedTicks) {
		t.Fatalf("SkippedTicks %d, want %d (catch-up and overlap skips)", sc.SkippedTicks, firstSkipped+c.SkippedTicks)
	}
}

// testOverlapTrigger: a manual trigger always runs and does not become the current run.
func testOverlapTrigger(t *testing.T, s store.Store) {
	d := newTickDriver(t, s, store.ScheduleParams{Name: "trig", Overlap: store.OverlapSkip})
	run1 := d.tick().Runs[0]
	manual, err := s.TriggerSchedule(ctx(t), "trig")
	if err != nil || manual.Status != store.StatusPending || manual.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatalf("TriggerSchedule under skip while a run waits: %+v, %v; want a due run", manual, err)
	}
	wantIDPtr(t, "CurrentRunID after a trigger", d.state().CurrentRunID, run1)
	// Its end does not free the schedule.
	finish(t, s, manual, store.Succeed, store.StatusSucceeded)
	wantIDPtr(t, "CurrentRunID after the manual run ended", d.state().CurrentRunID, run1)
	wantRuns(t, "a tick while run 1 waits", d.tick(), 0)
}
