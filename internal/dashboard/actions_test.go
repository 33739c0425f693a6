package dashboard

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

func TestCancelAndReplayTask(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		task := createTask(t, st, store.CreateParams{})
		page := "/tasks/" + task.ID.String()

		redirect, shown := b.submit(page, page+"/cancel", nil)
		if loc := redirect.header.Get("Location"); loc != page {
			t.Fatalf("cancel went to %q, want back to %q", loc, page)
		}
		shown.want(t, http.StatusOK).wantFlash(t, "ok", "Task canceled")
		shown.contains(t, `<span id="task-status" class="badge badge-canceled">CANCELED</span>`, `id="replay-form"`)
		wantStatus(t, st, task.ID, store.StatusCanceled)

		// A second cancel is harmless; a CANCELED task replays.
		_, shown = b.submit(page, page+"/replay", nil)
		shown.wantFlash(t, "ok", "Task replayed")
		wantStatus(t, st, task.ID, store.StatusPending)

		// A running task gets a cancel request, which its worker carries out.
		running := claimTask(t, st, createTask(t, st, store.CreateParams{}), time.Minute)
		rpage := "/tasks/" + running.ID.String()
		_, shown = b.submit(rpage, rpage+"/cancel", nil)
		shown.wantFlash(t, "ok", "Cancel requested")
		if got := getTask(t, st, running.ID); got.Status != store.StatusProcessing || got.CancelRequestedAt == nil {
			t.Fatalf("running task after cancel: %s, cancel requested %v", got.Status, got.CancelRequestedAt)
		}
		shown.contains(t, "cancel requested").lacks(t, `id="cancel-form"`)
	})
}

func TestIllegalActionsChangeNothing(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		done := finish(t, st, store.CreateParams{}, store.StatusSucceeded)
		page := "/tasks/" + done.ID.String()

		_, shown := b.submit(page, page+"/cancel", nil)
		shown.wantFlash(t, "error", "Cannot cancel this task: it is SUCCEEDED")
		_, shown = b.submit(page, page+"/replay", nil)
		shown.wantFlash(t, "error", "Cannot replay this task: it is SUCCEEDED")
		after := getTask(t, st, done.ID)
		if after.Status != store.StatusSucceeded || !after.UpdatedAt.Equal(done.UpdatedAt) {
			t.Fatalf("refused actions changed the task: %s, updated %s -> %s", after.Status, done.UpdatedAt, after.UpdatedAt)
		}

		// An unknown (well-formed) id goes back with an error.
		missing := store.NewID().String()
		_, shown = b.submit(page, "/tasks/"+missing+"/cancel", nil)
		shown.wantFlash(t, "error", "No task has the id "+missing)
	})
}

func TestDeadLetterReplay(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		one := finish(t, st, store.CreateParams{Queue: "emails"}, store.StatusDead)
		emails := finish(t, st, store.CreateParams{Queue: "emails"}, store.StatusFailed)
		emailsDead := finish(t, st, store.CreateParams{Queue: "emails"}, store.StatusDead)
		other := finish(t, st, store.CreateParams{Queue: "reports"}, store.StatusDead)

		// One task, from its row.
		redirect, shown := b.submit("/dead-letters", "/dead-letters/replay", url.Values{"task_id": {one.ID.String()}})
		if loc := redirect.header.Get("Location"); loc != "/dead-letters" {
			t.Fatalf("replay-one went to %q", loc)
		}
		shown.wantFlash(t, "ok", "Task replayed")
		wantStatus(t, st, one.ID, store.StatusPending)
		shown.contains(t, "replayed <time") // its event is marked

		// A filtered set: queue emails, reason DEAD only.
		_, shown = b.submit("/dead-letters?queue=emails", "/dead-letters/replay",
			url.Values{"queue": {"emails"}, "kind": {""}, "reason": {"DEAD"}})
		shown.wantFlash(t, "ok", "Replayed 1 task (queue emails, reason DEAD).")
		wantStatus(t, st, emailsDead.ID, store.StatusPending)
		wantStatus(t, st, emails.ID, store.StatusFailed)
		wantStatus(t, st, other.ID, store.StatusDead)

		// Every remaining one: confirmed (TestReplayAllAsksFirst covers the question).
		_, shown = b.submit("/dead-letters", "/dead-letters/replay", url.Values{"confirm": {"all"}})
		shown.wantFlash(t, "ok", "Replayed 2 tasks.")
		wantStatus(t, st, emails.ID, store.StatusPending)
		wantStatus(t, st, other.ID, store.StatusPending)

		_, shown = b.submit("/dead-letters", "/dead-letters/replay", url.Values{"queue": {"emails"}})
		shown.wantFlash(t, "ok", "No DEAD or FAILED task matches (queue emails); nothing was replayed.")

		// Replaying a task that is not dead any more says so.
		_, shown = b.submit("/dead-letters", "/dead-letters/replay", url.Values{"task_id": {one.ID.String()}})
		shown.wantFlash(t, "error", "it is PENDING")
	})
}

func TestScheduleActions(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		createSchedule(t, st, "nightly", "0 3 * * *", "Europe/Berlin")
		page := "/schedules/nightly"

		_, shown := b.submit("/schedules", page+"/pause", nil)
		shown.wantFlash(t, "ok", "Schedule nightly paused")
		if getSchedule(t, st, "nightly").Enabled {
			t.Fatal("pause left the schedule enabled")
		}
		shown.contains(t, `<td class="enabled"><span class="badge badge-paused">paused</span></td>`, `class="resume-schedule"`).
			lacks(t, `class="pause-schedule"`)

		_, shown = b.submit("/schedules", page+"/resume", nil)
		shown.wantFlash(t, "ok", "Schedule nightly resumed: next run ")
		sc := getSchedule(t, st, "nightly")
		if !sc.Enabled || !sc.NextRunAt.After(time.Now()) {
			t.Fatalf("after resume: enabled %v next %s", sc.Enabled, sc.NextRunAt)
		}

		redirect, shown := b.submit(page, page+"/trigger", nil)
		if loc := redirect.header.Get("Location"); loc != page {
			t.Fatalf("trigger went to %q", loc)
		}
		runs, _, err := st.ListScheduleRuns(ctx(t), store.ScheduleRunsParams{Name: "nightly"})
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs after trigger: %v, %d", err, len(runs))
		}
		shown.wantFlash(t, "ok", "task "+runs[0].ID.String()+" enqueued")
		if got := getSchedule(t, st, "nightly").NextRunAt; !got.Equal(sc.NextRunAt) {
			t.Fatalf("trigger moved next_run_at from %s to %s", sc.NextRunAt, got)
		}
		if rows := shown.taskRows(); len(rows) != 1 || rows[0] != runs[0].ID.String() {
			t.Fatalf("run history rows %v", rows)
		}

		// Reschedule: a wall time in the schedule's zone, then RFC 3339.
		_, shown = b.submit(page, page+"/reschedule", url.Values{"next_run_at": {"2031-07-01T09:30"}})
		want := time.Date(2031, 7, 1, 7, 30, 0, 0, time.UTC) // Berlin is UTC+2 in July
		shown.wantFlash(t, "ok", "next run 2031-07-01T07:30:00Z")
		if got := getSchedule(t, st, "nightly").NextRunAt; !got.Equal(want) {
			t.Fatalf("next_run_at %s, want %s", got, want)
		}
		_, shown = b.submit(page, page+"/reschedule", url.Values{"next_run_at": {"2032-01-02T03:04:00Z"}})
		shown.wantFlash(t, "ok", "next run 2032-01-02T03:04:00Z")
		if got := getSchedule(t, st, "nightly").NextRunAt; !got.Equal(time.Date(2032, 1, 2, 3, 4, 0, 0, time.UTC)) {
			t.Fatalf("next_run_at %s after RFC 3339 reschedule", got)
		}

		// An unknown schedule goes back to the list with an error.
		_, shown = b.submit("/schedules", "/schedules/gone/pause", nil)
		shown.wantFlash(t, "error", `No schedule is named "gone"`)
	})
}
