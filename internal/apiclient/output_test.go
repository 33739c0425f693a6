package apiclient_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/api"
	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// TestTaskOutput: a task's "output" reaches Task.Output (nil when the server sent null).
func TestTaskOutput(t *testing.T) {
	st := memory.New()
	defer st.Close()
	srv, err := api.New(api.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := context.Background()
	c := apiclient.New(hs.URL, "", nil)

	withOutput, _, err := c.CreateTask(ctx, apiclient.CreateTask{Kind: "noop", Queue: "outs"})
	if err != nil {
		t.Fatal(err)
	}
	if withOutput.Output != nil {
		t.Fatalf("a new task: Output %s, want nil", withOutput.Output)
	}
	none, _, err := c.CreateTask(ctx, apiclient.CreateTask{Kind: "noop", Queue: "outs"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "outs", From: store.StatusPending, WorkerID: "w", Limit: 2, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %v, %d", err, len(claimed))
	}
	outcomes := make([]store.Outcome, len(claimed))
	for i, task := range claimed {
		outcomes[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
		if task.ID == uuid.MustParse(withOutput.ID) {
			outcomes[i].Output = json.RawMessage(`{"rows":3}`)
		}
	}
	if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetTask(ctx, withOutput.ID)
	if err != nil || string(got.Output) != `{"rows":3}` {
		t.Fatalf("GetTask: %v, output %s", err, got.Output)
	}
	if got, err = c.GetTask(ctx, none.ID); err != nil || got.Output != nil || got.Status != "SUCCEEDED" {
		t.Fatalf("GetTask of a task without output: %v, %s output %q", err, got.Status, got.Output)
	}
}
