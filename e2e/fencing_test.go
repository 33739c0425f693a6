package e2e

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// TestFencingStoppedWorker: worker A claims a task and is frozen with SIGSTOP past its
// lease. Worker B reaps the lease and takes the task over. When A is thawed, it cannot
// write an outcome; B's result stands.
func TestFencingStoppedWorker(t *testing.T) {
	ctx := context.Background()
	dbURL, pool := newDB(t)
	st := postgres.New(pool)
	defer st.Close()
	res, err := st.CreateTasks(ctx, []store.CreateParams{{Kind: "sleep", Payload: []byte(`{"ms": 1500}`), MaxAttempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Task.ID

	args := func(name string) []string {
		return []string{"worker", "--database-url", dbURL, "--worker-id", name, "--lease", "1s",
			"--reap-interval", "200ms", "--poll-interval", "100ms", "--log-level", "debug"}
	}
	a := startProc(t, "worker-a", nil, args("worker-a")...)
	waitFor(t, 30*time.Second, "worker A to claim the task", func() (bool, string) {
		task, err := st.GetTask(ctx, id)
		return err == nil && task.Status == store.StatusProcessing && task.WorkerID == "worker-a", statusOf(task, err)
	})
	a.signal(syscall.SIGSTOP)

	b := startProc(t, "worker-b", nil, args("worker-b")...)
	waitFor(t, 30*time.Second, "worker B to take the task over", func() (bool, string) {
		task, err := st.GetTask(ctx, id)
		return err == nil && task.WorkerID == "worker-b", statusOf(task, err)
	})
	// Thaw A while B still holds the lease: A's handler has long finished its sleep, so it
	// tries to commit at once, and must be refused.
	a.signal(syscall.SIGCONT)

	waitFor(t, 30*time.Second, "the task to succeed", func() (bool, string) {
		task, err := st.GetTask(ctx, id)
		return err == nil && task.Status == store.StatusSucceeded, statusOf(task, err)
	})
	a.stop(t, 10*time.Second)
	b.stop(t, 10*time.Second)

	task, err := st.GetTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if task.WorkerID != "worker-b" {
		t.Errorf("task finished by %q, want worker-b", task.WorkerID)
	}
	attempts, err := st.ListAttempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var successes int
	var aToken uuid.UUID
	for _, at := range attempts {
		if at.Outcome == store.OutcomeSucceeded {
			successes++
			if at.WorkerID != "worker-b" {
				t.Errorf("success recorded for %q, want worker-b", at.WorkerID)
			}
		}
		if at.WorkerID == "worker-a" {
			aToken = at.LeaseToken
			if at.Outcome != store.OutcomeLeaseExpired {
				t.Errorf("worker A's attempt ended %q, want %s", at.Outcome, store.OutcomeLeaseExpired)
			}
		}
	}
	if successes != 1 {
		t.Errorf("%d successful attempts, want 1: %+v", successes, attempts)
	}
	// A's own view: it noticed the lost lease instead of writing.
	if out := a.output(); !containsAll(out, "lease") {
		t.Errorf("worker A's log does not mention the lost lease:\n%s", out)
	}
	// And the fence itself: A's token can write nothing, now or ever.
	results, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: id, LeaseToken: aToken, Kind: store.Fail, Error: "late"}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(results[0].Err, store.ErrLeaseLost) {
		t.Errorf("a write with A's stale token returned %v, want ErrLeaseLost", results[0].Err)
	}
	if _, err := st.Heartbeat(ctx, store.HeartbeatParams{TaskID: id, LeaseToken: aToken, LeaseDuration: time.Minute}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a heartbeat with A's stale token returned %v, want ErrLeaseLost", err)
	}
}

func statusOf(task *store.Task, err error) string {
	if err != nil {
		return err.Error()
	}
	return string(task.Status) + " by " + task.WorkerID
}
