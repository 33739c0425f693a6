package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

var bulkReplayTests = []testCase{
	{"FiltersAndLimit", testReplayTasksFilters},
	{"ByIDsOnlyDeadOrFailed", testReplayTasksByIDs},
	{"SkipsHeldIdempotencyKey", testReplayTasksSkipsHeldKey},
	{"ReplaysOneOfTasksSharingAKey", testReplayTasksSharingAKey},
	{"InvalidParams", testReplayTasksInvalid},
	{"CountReplayable", testCountReplayable},
}

var retentionTests = []testCase{
	{"DeletesOnlyPastCutoff", testDeleteFinished},
	{"ZeroCutoffKeeps", testDeleteFinishedZeroKeeps},
	{"InvalidLimit", testDeleteFinishedInvalid},
}

var pingTests = []testCase{
	{"OpenStoreAnswers", func(t *testing.T, s store.Store) {
		if err := s.Ping(ctx(t)); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	}},
}

func testReplayTasksFilters(t *testing.T, s store.Store) {
	var deadA []*store.Task
	for range 3 {
		deadA = append(deadA, driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k1"}, store.StatusDead))
	}
	failedA := driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k2"}, store.StatusFailed)
	deadB := driveTo(t, s, store.CreateParams{Queue: "qb", Kind: "k1"}, store.StatusDead)
	succeeded := driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k1"}, store.StatusSucceeded)
	canceled := driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k1"}, store.StatusCanceled)

	// Oldest first, limit respected.
	got, err := s.ReplayTasks(ctx(t), store.ReplayParams{Queue: "qa", Reason: store.StatusDead, Limit: 2})
	if err != nil {
		t.Fatalf("ReplayTasks: %v", err)
	}
	if len(got) != 2 || got[0].ID != deadA[0].ID || got[1].ID != deadA[1].ID {
		t.Fatalf("ReplayTasks(limit 2) replayed %v, want the two oldest DEAD tasks of qa", ids(got))
	}
	for _, task := range got {
		if task.Status != store.StatusPending || task.AttemptCount != 0 {
			t.Fatalf("bulk-replayed task: status %s attempts %d", task.Status, task.AttemptCount)
		}
		if a := attempts(t, s, task.ID); a[len(a)-1].Outcome != store.OutcomeReplayed {
			t.Fatalf("bulk replay left no REPLAYED event: %+v", a)
		}
		if d := deadLettersOf(t, s, task.ID); len(d) != 1 || d[0].ReplayedAt == nil {
			t.Fatalf("bulk replay did not mark the dead letter replayed: %+v", d)
		}
	}
	// Kind filter: only k1 in qa -> the last DEAD one; k2 FAILED untouched.
	got, err = s.ReplayTasks(ctx(t), store.ReplayParams{Queue: "qa", Kind: "k1", Limit: 100})
	if err != nil {
		t.Fatalf("ReplayTasks: %v", err)
	}
	if len(got) != 1 || got[0].ID != deadA[2].ID {
		t.Fatalf("ReplayTasks(qa, k1) replayed %v, want [%s]", ids(got), deadA[2].ID)
	}
	// Reason filter.
	got, err = s.ReplayTasks(ctx(t), store.ReplayParams{Reason: store.StatusFailed, Limit: 100})
	if err != nil {
		t.Fatalf("ReplayTasks: %v", err)
	}
	if len(got) != 1 || got[0].ID != failedA.ID {
		t.Fatalf("ReplayTasks(FAILED) replayed %v, want [%s]", ids(got), failedA.ID)
	}
	// What is left: qb's DEAD task; SUCCEEDED and CANCELED are never bulk-replayed.
	got, err = s.ReplayTasks(ctx(t), store.ReplayParams{Limit: 100})
	if err != nil {
		t.Fatalf("ReplayTasks: %v", err)
	}
	if len(got) != 1 || got[0].ID != deadB.ID {
		t.Fatalf("ReplayTasks(all) replayed %v, want [%s]", ids(got), deadB.ID)
	}
	if st := get(t, s, succeeded.ID).Status; st != store.StatusSucceeded {
		t.Fatalf("a SUCCEEDED task became %s", st)
	}
	if st := get(t, s, canceled.ID).Status; st != store.StatusCanceled {
		t.Fatalf("a CANCELED task became %s", st)
	}
	got, err = s.ReplayTasks(ctx(t), store.ReplayParams{Limit: 100})
	if err != nil || len(got) != 0 {
		t.Fatalf("ReplayTasks with nothing left: %v, %v", ids(got), err)
	}
}

func testReplayTasksByIDs(t *testing.T, s store.Store) {
	d1 := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	d2 := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	pending := createOne(t, s, store.CreateParams{Kind: "k"})
	got, err := s.ReplayTasks(ctx(t), store.ReplayParams{TaskIDs: []uuid.UUID{d2.ID, pending.ID, uuid.New()}, Limit: 10})
	if err != nil {
		t.Fatalf("ReplayTasks: %v", err)
	}
	if len(got) != 1 || got[0].ID != d2.ID {
		t.Fatalf("ReplayTasks(ids) replayed %v, want only %s", ids(got), d2.ID)
	}
	if st := get(t, s, d1.ID).Status; st != store.StatusDead {
		t.Fatalf("an unnamed DEAD task became %s", st)
	}
}

func testReplayTasksSkipsHeldKey(t *testing.T, s store.Store) {
	old := driveTo(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "key-1"}, store.StatusDead)
	other := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	live := createOne(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "key-1"})
	if live.ID == old.ID {
		t.Fatal("a DEAD task's key was not released")
	}
	got, err := s.ReplayTasks(ctx(t), store.ReplayParams{Limit: 10})
	if err != nil {
		t.Fatalf("ReplayTasks: %v", err)
	}
	if len(got) != 1 || got[0].ID != other.ID {
		t.Fatalf("ReplayTasks replayed %v, want only %s (the other's key is held)", ids(got), other.ID)
	}
	if st := get(t, s, old.ID).Status; st != store.StatusDead {
		t.Fatalf("the task whose key is held became %s", st)
	}
}

// testReplayTasksSharingAKey: a DEAD task frees its idempotency key, a new task takes it
// and dies too. A bulk replay must replay only the older of the two (replaying both would
// break the key's uniqueness and fail the whole replay), and still replay everything else.
func testReplayTasksSharingAKey(t *testing.T, s store.Store) {
	older := driveTo(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "key-2"}, store.StatusDead)
	younger := driveTo(t, s, store.CreateParams{Kind: "k", IdempotencyKey: "key-2"}, store.StatusFailed)
	other := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	if younger.ID == older.ID {
		t.Fatal("a DEAD task's key was not released")
	}
	got, err := s.ReplayTasks(ctx(t), store.ReplayParams{Limit: 10})
	if err != nil {
		t.Fatalf("ReplayTasks: %v", err)
	}
	if want := []uuid.UUID{older.ID, other.ID}; !slices.Equal(ids(got), want) {
		t.Fatalf("ReplayTasks replayed %v, want %v (the older of the two sharing a key, and the other)", ids(got), want)
	}
	if st := get(t, s, younger.ID).Status; st != store.StatusFailed {
		t.Fatalf("the younger task sharing the key became %s", st)
	}
	// Asked for by id, the younger is still skipped: the older holds the key now.
	got, err = s.ReplayTasks(ctx(t), store.ReplayParams{TaskIDs: []uuid.UUID{younger.ID}, Limit: 10})
	if err != nil || len(got) != 0 {
		t.Fatalf("ReplayTasks(younger) = %v, %v; want nothing replayed", ids(got), err)
	}
}

func testReplayTasksInvalid(t *testing.T, s store.Store) {
	failed := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusFailed)
	for _, p := range []store.ReplayParams{{Limit: 0}, {Limit: -1}, {Limit: store.MaxListLimit + 1}, {Limit: 1, Reason: store.StatusCanceled},
		{Limit: 1, Queue: "\x00"}, {Limit: 1, Kind: "\xff"}, {Limit: 1, Queue: "a b"}} {
		if _, err := s.ReplayTasks(ctx(t), p); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("ReplayTasks(%+v): %v, want ErrInvalid", p, err)
		}
	}
	if got := get(t, s, failed.ID); got.Status != store.StatusFailed {
		t.Fatalf("an invalid bulk replay changed a task: it is %s", got.Status)
	}
}

func testCountReplayable(t *testing.T, s store.Store) {
	for range 3 {
		driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k1"}, store.StatusDead)
	}
	driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k2"}, store.StatusFailed)
	driveTo(t, s, store.CreateParams{Queue: "qb", Kind: "k1"}, store.StatusDead)
	driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k1"}, store.StatusSucceeded)
	driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k1"}, store.StatusCanceled)
	createOne(t, s, store.CreateParams{Queue: "qa", Kind: "k1"})
	replayed := driveTo(t, s, store.CreateParams{Queue: "qa", Kind: "k1"}, store.StatusDead)
	if _, err := s.ReplayTask(ctx(t), replayed.ID); err != nil {
		t.Fatalf("ReplayTask: %v", err)
	}

	count := func(p store.ReplayParams, atMost int) int {
		t.Helper()
		n, err := s.CountReplayable(ctx(t), p, atMost)
		if err != nil {
			t.Fatalf("CountReplayable(%+v, %d): %v", p, atMost, err)
		}
		return n
	}
	for _, c := range []struct {
		p      store.ReplayParams
		atMost int
		want   int
	}{
		{store.ReplayParams{}, 100, 5}, // DEAD and FAILED only; the replayed one is PENDING
		{store.ReplayParams{}, 3, 3},   // capped
		{store.ReplayParams{Queue: "qa"}, 100, 4},
		{store.ReplayParams{Queue: "qa", Kind: "k1"}, 100, 3},
		{store.ReplayParams{Reason: store.StatusFailed}, 100, 1},
		{store.ReplayParams{Queue: "qb", Reason: store.StatusFailed}, 100, 0},
		{store.ReplayParams{Limit: 1, TaskIDs: []uuid.UUID{replayed.ID}}, 100, 5}, // ignored
	} {
		if got := count(c.p, c.atMost); got != c.want {
			t.Fatalf("CountReplayable(%+v, %d) = %d, want %d", c.p, c.atMost, got, c.want)
		}
	}
	for _, atMost := range []int{0, -1} {
		if _, err := s.CountReplayable(ctx(t), store.ReplayParams{}, atMost); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("CountReplayable(atMost %d): %v, want ErrInvalid", atMost, err)
		}
	}
	if _, err := s.CountReplayable(ctx(t), store.ReplayParams{Reason: store.StatusCanceled}, 10); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("CountReplayable(reason CANCELED): %v, want ErrInvalid", err)
	}
}

func testDeleteFinished(t *testing.T, s store.Store) {
	succeeded := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusSucceeded)
	canceled := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusCanceled)
	dead := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	failed := driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusFailed)
	pending := createOne(t, s, store.CreateParams{Kind: "k"})
	running := createAndClaim(t, s, store.CreateParams{Kind: "k"})

	future := time.Now().Add(time.Hour + clockSkew)
	past := time.Now().Add(-time.Hour)

	// Cutoffs in the past delete nothing.
	n, err := s.DeleteFinishedTasks(ctx(t), store.RetentionParams{SucceededBefore: past, FailedBefore: past, Limit: 100})
	if err != nil || n != 0 {
		t.Fatalf("DeleteFinishedTasks(past cutoffs) = %d, %v; want 0", n, err)
	}
	// Succeeded/canceled past their cutoff go; dead/failed (cutoff in the past) stay.
	n, err = s.DeleteFinishedTasks(ctx(t), store.RetentionParams{SucceededBefore: future, FailedBefore: past, Limit: 100})
	if err != nil || n != 2 {
		t.Fatalf("DeleteFinishedTasks(succeeded) = %d, %v; want 2", n, err)
	}
	for _, id := range []uuid.UUID{succeeded.ID, canceled.ID} {
		if _, err := s.GetTask(ctx(t), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleted task %s: GetTask = %v, want ErrNotFound", id, err)
		}
	}
	get(t, s, dead.ID)
	// With the limit: one at a time.
	n, err = s.DeleteFinishedTasks(ctx(t), store.RetentionParams{FailedBefore: future, Limit: 1})
	if err != nil || n != 1 {
		t.Fatalf("DeleteFinishedTasks(limit 1) = %d, %v; want 1", n, err)
	}
	n, err = s.DeleteFinishedTasks(ctx(t), store.RetentionParams{FailedBefore: future, Limit: 100})
	if err != nil || n != 1 {
		t.Fatalf("DeleteFinishedTasks(the rest) = %d, %v; want 1", n, err)
	}
	for _, id := range []uuid.UUID{dead.ID, failed.ID} {
		if _, err := s.GetTask(ctx(t), id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleted task %s: GetTask = %v, want ErrNotFound", id, err)
		}
	}
	// Their dead letters went with them; live tasks stay.
	if d := deadLetters(t, s, store.DeadLetterParams{}); len(d) != 0 {
		t.Fatalf("dead letters of deleted tasks remain: %+v", d)
	}
	get(t, s, pending.ID)
	get(t, s, running.ID)
	if n := countTasks(t, s); n != 2 {
		t.Fatalf("%d tasks left, want the 2 unfinished ones", n)
	}
	if st := statsOf(t, s, "default"); st.Counts[store.StatusSucceeded] != 0 || st.Counts[store.StatusDead] != 0 {
		t.Fatalf("stats still count deleted tasks: %v", st.Counts)
	}
}

func testDeleteFinishedZeroKeeps(t *testing.T, s store.Store) {
	driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusSucceeded)
	driveTo(t, s, store.CreateParams{Kind: "k"}, store.StatusDead)
	n, err := s.DeleteFinishedTasks(ctx(t), store.RetentionParams{Limit: 100})
	if err != nil || n != 0 {
		t.Fatalf("DeleteFinishedTasks(zero cutoffs) = %d, %v; want 0 (keep forever)", n, err)
	}
}

func testDeleteFinishedInvalid(t *testing.T, s store.Store) {
	if _, err := s.DeleteFinishedTasks(ctx(t), store.RetentionParams{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("DeleteFinishedTasks(limit 0) = %v, want ErrInvalid", err)
	}
}
