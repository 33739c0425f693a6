package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
)

func TestCancelTask(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()

	pending := mustCreate(t, st, store.CreateParams{Kind: "noop"})[0]
	got, err := st.CancelTask(ctx, pending.ID)
	if err != nil || got.Status != store.StatusCanceled || got.CompletedAt == nil || got.CancelRequestedAt != nil {
		t.Fatalf("cancel PENDING: %+v, %v", got, err)
	}
	// Canceling again is idempotent.
	again, err := st.CancelTask(ctx, pending.ID)
	if err != nil || again.Status != store.StatusCanceled || !again.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("cancel CANCELED: %+v, %v; want it unchanged", again, err)
	}

	enqueued := mustCreate(t, st, store.CreateParams{Kind: "noop"})[0]
	exec(t, pool, `UPDATE rota.tasks SET status = 'ENQUEUED' WHERE id = $1`, enqueued.ID)
	if got, err := st.CancelTask(ctx, enqueued.ID); err != nil || got.Status != store.StatusCanceled {
		t.Errorf("cancel ENQUEUED: %+v, %v", got, err)
	}

	// A running task gets a request and a notification for its worker.
	conn, err := pgx.Connect(ctx, pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `LISTEN rota_cancel`); err != nil {
		t.Fatal(err)
	}
	running := claimOnly(t, st, store.CreateParams{Kind: "noop"})
	got, err = st.CancelTask(ctx, running.ID)
	if err != nil || got.Status != store.StatusProcessing || got.CancelRequestedAt == nil || got.LeaseToken != running.LeaseToken {
		t.Fatalf("cancel PROCESSING: %+v, %v", got, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(wctx)
	if err != nil || n.Channel != "rota_cancel" || n.Payload != running.ID.String() {
		t.Errorf("notification %+v, %v; want rota_cancel %s", n, err, running.ID)
	}
	// A second request keeps the first time.
	if again, err := st.CancelTask(ctx, running.ID); err != nil || !again.CancelRequestedAt.Equal(*got.CancelRequestedAt) {
		t.Errorf("second cancel request: %+v, %v", again, err)
	}

	done := claimOnly(t, st, store.CreateParams{Kind: "noop"})
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: done.ID, LeaseToken: done.LeaseToken, Kind: store.Succeed}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelTask(ctx, done.ID); !errors.Is(err, store.ErrIllegalTransition) {
		t.Errorf("cancel SUCCEEDED: %v, want ErrIllegalTransition", err)
	}
	if _, err := st.CancelTask(ctx, store.NewID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancel unknown: %v, want ErrNotFound", err)
	}
}

func TestReplayTask(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()

	failed := claimOnly(t, st, store.CreateParams{Kind: "noop", MaxAttempts: 3, IdempotencyKey: "k"})
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: failed.ID, LeaseToken: failed.LeaseToken, Kind: store.Fail, Error: "bad"}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.ReplayTask(ctx, failed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StatusPending || got.AttemptCount != 0 || got.LastError != "" || got.CompletedAt != nil ||
		got.CancelRequestedAt != nil || got.ScheduledFor.Before(failed.ScheduledFor) {
		t.Errorf("replayed task %+v", got)
	}
	attempts := mustAttempts(t, st, failed.ID)
	if len(attempts) != 2 || attempts[1].Outcome != store.OutcomeReplayed || attempts[1].Attempt != 1 {
		t.Errorf("attempts after replay: %+v", attempts)
	}
	dls, _, err := st.ListDeadLetters(ctx, store.DeadLetterParams{})
	if err != nil || len(dls) != 1 || dls[0].ReplayedAt == nil {
		t.Errorf("dead letters after replay: %+v, %v", dls, err)
	}
	if again := mustClaim(t, st, store.ClaimParams{}); len(again) != 1 || again[0].ID != failed.ID || again[0].AttemptCount != 1 {
		t.Errorf("claim after replay: %+v", again)
	}
	if _, err := st.ReplayTask(ctx, failed.ID); !errors.Is(err, store.ErrIllegalTransition) {
		t.Errorf("replay PROCESSING: %v, want ErrIllegalTransition", err)
	}
	if _, err := st.ReplayTask(ctx, store.NewID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("replay unknown: %v, want ErrNotFound", err)
	}

	// Replaying a canceled task whose key a newer live task holds: conflict.
	old := mustCreate(t, st, store.CreateParams{Kind: "noop", IdempotencyKey: "shared"})[0]
	if _, err := st.CancelTask(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	newer := mustCreate(t, st, store.CreateParams{Kind: "noop", IdempotencyKey: "shared"})[0]
	if newer.ID == old.ID {
		t.Fatal("key of a canceled task was not released")
	}
	if _, err := st.ReplayTask(ctx, old.ID); !errors.Is(err, store.ErrConflict) {
		t.Errorf("replay with a taken key: %v, want ErrConflict", err)
	}
	if got := mustGet(t, st, old.ID); got.Status != store.StatusCanceled {
		t.Errorf("conflicting replay changed the task: %+v", got)
	}
}

func TestListTasks(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	var ids []uuid.UUID
	for i := range 7 {
		queue := "a"
		if i%2 == 1 {
			queue = "b"
		}
		ids = append(ids, mustCreate(t, st, store.CreateParams{Kind: "k" + queue, Queue: queue})[0].ID)
	}
	exec(t, pool, `UPDATE rota.tasks SET status = 'CANCELED' WHERE id = $1`, ids[6])

	var all []uuid.UUID
	cursor := ""
	for page := 0; ; page++ {
		tasks, next, err := st.ListTasks(ctx, store.ListParams{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			all = append(all, task.ID)
		}
		if next == "" {
			if page != 2 || len(tasks) != 1 {
				t.Errorf("last page is page %d with %d tasks, want page 2 with 1", page, len(tasks))
			}
			break
		}
		cursor = next
	}
	if len(all) != 7 {
		t.Fatalf("listed %d tasks, want 7", len(all))
	}
	for i, id := range all {
		if id != ids[6-i] {
			t.Errorf("position %d: %s, want %s (newest first)", i, id, ids[6-i])
		}
	}

	for _, tc := range []struct {
		p    store.ListParams
		want int
	}{
		{store.ListParams{Queue: "a"}, 4},
		{store.ListParams{Kind: "kb"}, 3},
		{store.ListParams{Statuses: []store.Status{store.StatusCanceled}}, 1},
		{store.ListParams{Statuses: []store.Status{store.StatusCanceled, store.StatusPending}}, 7},
		{store.ListParams{Statuses: []store.Status{store.StatusPending}, Queue: "a"}, 3},
		{store.ListParams{Queue: "nope"}, 0},
	} {
		tasks, next, err := st.ListTasks(ctx, tc.p)
		if err != nil || len(tasks) != tc.want || next != "" {
			t.Errorf("ListTasks(%+v) = %d tasks, %q, %v; want %d", tc.p, len(tasks), next, err, tc.want)
		}
	}
	for _, p := range []store.ListParams{{Limit: -1}, {Limit: store.MaxListLimit + 1}, {Cursor: "!!"}, {Statuses: []store.Status{"LOST"}}} {
		if _, _, err := st.ListTasks(ctx, p); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ListTasks(%+v) = %v, want ErrInvalid", p, err)
		}
	}
}

func TestListDeadLettersAndAttempts(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	for i := range 5 {
		task := claimOnly(t, st, store.CreateParams{Kind: "k", Queue: "q", MaxAttempts: 1})
		kind := store.Fail
		if i%2 == 0 {
			kind = store.Retry
		}
		if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: kind, Error: "e"}}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []int64
	cursor := ""
	for {
		dls, next, err := st.ListDeadLetters(ctx, store.DeadLetterParams{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dls {
			seen = append(seen, d.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != 5 {
		t.Fatalf("%d dead letters, want 5", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] >= seen[i-1] {
			t.Errorf("dead letters not newest first: %v", seen)
		}
	}
	for _, tc := range []struct {
		p    store.DeadLetterParams
		want int
	}{
		{store.DeadLetterParams{Reason: store.StatusDead}, 3},
		{store.DeadLetterParams{Reason: store.StatusFailed, Queue: "q", Kind: "k"}, 2},
		{store.DeadLetterParams{Queue: "other"}, 0},
	} {
		dls, _, err := st.ListDeadLetters(ctx, tc.p)
		if err != nil || len(dls) != tc.want {
			t.Errorf("ListDeadLetters(%+v) = %d, %v; want %d", tc.p, len(dls), err, tc.want)
		}
	}
	for _, p := range []store.DeadLetterParams{{Reason: store.StatusPending}, {Cursor: "x"}, {Limit: -3}} {
		if _, _, err := st.ListDeadLetters(ctx, p); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ListDeadLetters(%+v) = %v, want ErrInvalid", p, err)
		}
	}

	fresh := mustCreate(t, st, store.CreateParams{Kind: "noop"})[0]
	if a, err := st.ListAttempts(ctx, fresh.ID); err != nil || a == nil || len(a) != 0 {
		t.Errorf("attempts of a new task: %#v, %v; want an empty list", a, err)
	}
	if _, err := st.ListAttempts(ctx, store.NewID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("attempts of an unknown task: %v, want ErrNotFound", err)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	if stats, err := st.Stats(ctx); err != nil || len(stats) != 0 {
		t.Fatalf("empty stats: %+v, %v", stats, err)
	}
	now := dbNow(t, pool)
	old := now.Add(-time.Hour).Truncate(time.Microsecond)
	mustCreate(t, st,
		store.CreateParams{Kind: "k", Queue: "a", ScheduledFor: old},
		store.CreateParams{Kind: "k", Queue: "a"},
		store.CreateParams{Kind: "k", Queue: "a", ScheduledFor: now.Add(-2 * time.Hour), Priority: -1},
		store.CreateParams{Kind: "k", Queue: "b", ScheduledFor: now.Add(time.Hour)},
	)
	running := mustClaim(t, st, store.ClaimParams{Queue: "a", Limit: 1})[0]
	expireLease(t, pool, running.ID)
	// The claim took the -1h task (priority first, then the oldest); the -2h task, with a
	// lower priority, is the oldest due one left.
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 2 || stats[0].Queue != "a" || stats[1].Queue != "b" {
		t.Fatalf("stats %+v", stats)
	}
	a, b := stats[0], stats[1]
	if a.Counts[store.StatusPending] != 2 || a.Counts[store.StatusProcessing] != 1 || a.Counts[store.StatusSucceeded] != 0 || a.ExpiredLeases != 1 {
		t.Errorf("queue a: %+v", a)
	}
	if a.OldestDueAt == nil || !a.OldestDueAt.Equal(now.Add(-2*time.Hour).Truncate(time.Microsecond)) {
		t.Errorf("queue a oldest due %v", a.OldestDueAt)
	}
	if b.Counts[store.StatusPending] != 1 || b.OldestDueAt != nil || b.ExpiredLeases != 0 || len(b.Counts) != len(store.AllStatuses) {
		t.Errorf("queue b: %+v (a future task is not due)", b)
	}
}

// TestWaitForTasks: a listener hears inserts of due tasks, survives its connection being
// killed, and closes its channel when its context ends or the store closes.
func TestWaitForTasks(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := st.WaitForTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, store.CreateParams{Kind: "noop", Queue: "mail"})
	if q := receive(t, ch); q != "mail" {
		t.Errorf("woken for %q, want mail", q)
	}
	// Not yet due: no wake-up. A due insert after it is the next one heard.
	mustCreate(t, st, store.CreateParams{Kind: "noop", Queue: "later", ScheduledFor: time.Now().Add(time.Hour)})
	mustCreate(t, st, store.CreateParams{Kind: "noop", Queue: "now"})
	if q := receive(t, ch); q != "now" {
		t.Errorf("woken for %q, want now", q)
	}

	// Kill the listening connection: the listener reconnects and hears later inserts.
	exec(t, pool, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query = 'LISTEN rota_tasks'`)
	eventually(t, 30*time.Second, "a wake-up after reconnecting", func() bool {
		mustCreate(t, st, store.CreateParams{Kind: "noop", Queue: "again"})
		select {
		case q, ok := <-ch:
			if !ok {
				t.Fatal("channel closed after the connection was killed")
			}
			return q == "again"
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})

	cancel()
	eventually(t, 10*time.Second, "the channel to close", func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	})

	// Close ends every listener.
	ch2, err := st.WaitForTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	for range ch2 {
	}
	if _, err := st.WaitForTasks(context.Background()); err == nil {
		t.Error("WaitForTasks on a closed store succeeded")
	}
	// The pool is the caller's: still usable.
	if _, err := st.GetTask(context.Background(), store.NewID()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("store after Close: %v", err)
	}
}

func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case q, ok := <-ch:
		if !ok {
			t.Fatal("channel closed")
		}
		return q
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up within 10s")
	}
	return ""
}

// TestListenResumedAfterLostConnection: when Listen's connection dies (a restarted or
// failed-over server), it reconnects and says so with ListenResumed, which a worker takes
// as "the database is back, look for work"; later notifications are heard again.
func TestListenResumedAfterLostConnection(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := st.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, pool, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query = 'LISTEN rota_cancel'`)
	timeout := time.After(30 * time.Second)
	for resumed := false; !resumed; {
		select {
		case n := <-ch:
			resumed = n.Kind == store.ListenResumed
		case <-timeout:
			t.Fatal("no ListenResumed after the listening connection was killed")
		}
	}
	mustCreate(t, st, store.CreateParams{Kind: "noop", Queue: "again"})
	for {
		select {
		case n := <-ch:
			if n == (store.Notification{Kind: store.TasksDue, Queue: "again"}) {
				return
			}
		case <-timeout:
			t.Fatal("no wake-up after reconnecting")
		}
	}
}

// TestRetentionDeletesAttempts: rota.task_attempts has no foreign key to rota.tasks
// (migration 0027), so retention deletes a task's attempts itself, for plain tasks and
// for a flow's tasks alike. No attempt may outlive its task.
func TestRetentionDeletesAttempts(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	mustCreate(t, st, store.CreateParams{Queue: "plain", Kind: "k"}, store.CreateParams{Queue: "plain", Kind: "k"})
	plain := mustClaim(t, st, store.ClaimParams{Queue: "plain"})
	if _, err := st.CreateFlow(ctx, store.FlowParams{Queue: "flow", Steps: []store.StepParams{{Name: "a", Kind: "k"}}}); err != nil {
		t.Fatal(err)
	}
	step := mustClaim(t, st, store.ClaimParams{Queue: "flow"})
	if len(plain) != 2 || len(step) != 1 {
		t.Fatalf("claimed %d plain tasks and %d step tasks, want 2 and 1", len(plain), len(step))
	}
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{
		{TaskID: plain[0].ID, LeaseToken: plain[0].LeaseToken, Kind: store.Succeed},
		{TaskID: plain[1].ID, LeaseToken: plain[1].LeaseToken, Kind: store.Fail, Error: "no"},
		{TaskID: step[0].ID, LeaseToken: step[0].LeaseToken, Kind: store.Succeed},
	}); err != nil {
		t.Fatal(err)
	}
	attempts := func() (n int) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.task_attempts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := attempts(); n != 3 {
		t.Fatalf("%d attempt rows before retention, want 3", n)
	}
	exec(t, pool, `UPDATE rota.tasks SET completed_at = now() - interval '40 days'`)
	exec(t, pool, `UPDATE rota.flows SET completed_at = now() - interval '40 days'`)
	cut := time.Now().Add(-24 * time.Hour)
	n, err := st.DeleteFinishedTasks(ctx, store.RetentionParams{SucceededBefore: cut, FailedBefore: cut, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var tasks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.tasks`).Scan(&tasks); err != nil {
		t.Fatal(err)
	}
	if n != 3 || tasks != 0 {
		t.Fatalf("retention deleted %d tasks and left %d, want 3 and 0", n, tasks)
	}
	if n := attempts(); n != 0 {
		t.Errorf("%d attempt rows outlive their tasks", n)
	}
}
