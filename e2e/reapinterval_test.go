package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// Issue 12 item 12: the real binary starts with the form the help documents,
// `--reap-interval -1` (reaper off), works tasks, and stops cleanly. It used to exit
// with status 2: `invalid value "-1" for flag -reap-interval: parse error`.
func TestWorkerStartsWithReapIntervalMinusOne(t *testing.T) {
	url, pool := newDB(t)
	w := startProc(t, "worker", []string{"ROTA_REAP_INTERVAL="},
		"worker", "--database-url", url, "--reap-interval", "-1", "--poll-interval", "100ms")
	waitFor(t, 30*time.Second, "worker started", func() (bool, string) {
		if w.exited() {
			t.Fatalf("rota worker --reap-interval -1 exited: %s", w.output())
		}
		return strings.Contains(w.output(), "worker started"), ""
	})
	st := postgres.New(pool)
	res, err := st.CreateTasks(context.Background(), []store.CreateParams{{Kind: "noop"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the task to succeed", func() (bool, string) {
		task, err := st.GetTask(context.Background(), res[0].Task.ID)
		if err != nil {
			return false, err.Error()
		}
		return task.Status == store.StatusSucceeded, string(task.Status)
	})
	w.stop(t, 30*time.Second)
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("rota worker --reap-interval -1 exited with %d:\n%s", code, w.output())
	}
}
