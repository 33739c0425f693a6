package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
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

// TestRealServer runs every client method against the real API on the in-memory store.
func TestRealServer(t *testing.T) {
	st := memory.New()
	defer st.Close()
	srv, err := api.New(api.Config{Store: st, Token: "tok", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := context.Background()
	c := apiclient.New(hs.URL, "tok", nil)

	// Auth: no token or a wrong one is 401 unauthorized.
	for _, tok := range []string{"", "wrong"} {
		_, err := apiclient.New(hs.URL, tok, nil).Stats(ctx)
		var apiErr *apiclient.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Code != "unauthorized" || !apiclient.IsUnauthorized(err) {
			t.Errorf("token %q: got %v", tok, err)
		}
	}

	// Create, then the idempotency hit.
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	task, created, err := c.CreateTask(ctx, apiclient.CreateTask{Kind: "noop", Queue: "q1",
		Payload: json.RawMessage(`{"x":1}`), ScheduledFor: &at, MaxAttempts: 3, Priority: 5,
		IdempotencyKey: "key-1", TimeoutSeconds: 7})
	if err != nil || !created {
		t.Fatalf("create: %v, created %v", err, created)
	}
	if task.Status != "PENDING" || task.Queue != "q1" || !task.ScheduledFor.Equal(at) || task.MaxAttempts != 3 ||
		task.Priority != 5 || task.IdempotencyKey != "key-1" || task.TimeoutSeconds != 7 || string(task.Payload) != `{"x":1}` {
		t.Errorf("created: %+v", task)
	}
	again, created, err := c.CreateTask(ctx, apiclient.CreateTask{Kind: "noop", Queue: "q1", IdempotencyKey: "key-1"})
	if err != nil || created || again.ID != task.ID {
		t.Errorf("idempotency hit: %v, created %v, id %s", err, created, again.ID)
	}
	delayed, _, err := c.CreateTask(ctx, apiclient.CreateTask{Kind: "noop", DelaySeconds: 60})
	if err != nil || delayed.Queue != "default" || time.Until(delayed.ScheduledFor) < 50*time.Second {
		t.Errorf("delay_seconds: %v %+v", err, delayed)
	}

	// Batch, get, list with filters and paging.
	batch, err := c.CreateTasks(ctx, []apiclient.CreateTask{{Kind: "noop", Queue: "b"}, {Kind: "noop", Queue: "b"}, {Kind: "sleep", Queue: "b"}})
	if err != nil || len(batch) != 3 {
		t.Fatalf("batch: %v, %d", err, len(batch))
	}
	got, err := c.GetTask(ctx, batch[2].ID)
	if err != nil || got.Kind != "sleep" || len(got.Raw()) == 0 {
		t.Errorf("get: %v %+v", err, got)
	}
	page, err := c.ListTasks(ctx, apiclient.ListTasksParams{Queue: "b", Limit: 2})
	if err != nil || len(page.Tasks) != 2 || page.NextCursor == "" {
		t.Fatalf("page 1: %v %+v", err, page)
	}
	page, err = c.ListTasks(ctx, apiclient.ListTasksParams{Queue: "b", Limit: 2, Cursor: page.NextCursor})
	if err != nil || len(page.Tasks) != 1 || page.NextCursor != "" {
		t.Errorf("page 2: %v %+v", err, page)
	}
	page, err = c.ListTasks(ctx, apiclient.ListTasksParams{Statuses: []string{"PENDING", "CANCELED"}, Kind: "sleep"})
	if err != nil || len(page.Tasks) != 1 {
		t.Errorf("filtered: %v %+v", err, page)
	}

	// Cancel, replay, attempts, and the errors of illegal moves and unknown ids.
	if tk, err := c.CancelTask(ctx, task.ID); err != nil || tk.Status != "CANCELED" {
		t.Errorf("cancel: %v %+v", err, tk)
	}
	if tk, err := c.ReplayTask(ctx, task.ID); err != nil || tk.Status != "PENDING" {
		t.Errorf("replay: %v %+v", err, tk)
	}
	_, err = c.ReplayTask(ctx, task.ID)
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.Code != "illegal_transition" {
		t.Errorf("replay of a PENDING task: %v", err)
	}
	atts, err := c.ListAttempts(ctx, task.ID)
	if err != nil || len(atts) == 0 || atts[len(atts)-1].Outcome != "REPLAYED" {
		t.Errorf("attempts: %v %+v", err, atts)
	}
	_, err = c.GetTask(ctx, uuid.NewString())
	if !apiclient.IsNotFound(err) {
		t.Errorf("unknown id: %v", err)
	}
	_, _, err = c.CreateTask(ctx, apiclient.CreateTask{Kind: "bad kind!"})
	if !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Errorf("bad kind: %v", err)
	}

	// Dead letters: list, stats and bulk replay in batches.
	deadIDs := killTasks(t, st, "dlq", 5)
	dl, err := c.ListDeadLetters(ctx, apiclient.ListDeadLettersParams{Queue: "dlq", Reason: "FAILED", Limit: 3})
	if err != nil || len(dl.DeadLetters) != 3 || dl.NextCursor == "" || dl.DeadLetters[0].Reason != "FAILED" || dl.DeadLetters[0].Error != "boom" {
		t.Fatalf("dead letters: %v %+v", err, dl)
	}
	stats, err := c.Stats(ctx)
	if err != nil || stats.Totals["FAILED"] != 5 {
		t.Errorf("stats: %v %+v", err, stats)
	}
	r, err := c.ReplayDeadLetters(ctx, apiclient.ReplayDeadLetters{TaskIDs: deadIDs[:1]})
	if err != nil || r.Replayed != 1 || len(r.Tasks) != 1 || r.Tasks[0].ID != deadIDs[0] {
		t.Errorf("replay by id: %v %+v", err, r)
	}
	total := 0
	for {
		r, err := c.ReplayDeadLetters(ctx, apiclient.ReplayDeadLetters{Queue: "dlq", Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		total += r.Replayed
		if r.Replayed < 3 {
			break
		}
	}
	if total != 4 {
		t.Errorf("bulk replay: %d, want 4", total)
	}
}

// killTasks creates n tasks in queue and fails them permanently, as a worker would.
func killTasks(t *testing.T, st store.Store, queue string, n int) []string {
	t.Helper()
	ctx := context.Background()
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Queue: queue, Kind: "fail"}
	}
	if _, err := st.CreateTasks(ctx, params); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: queue, From: store.StatusPending,
		WorkerID: "w", Limit: n, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != n {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	ids := make([]string, n)
	outcomes := make([]store.Outcome, n)
	for i, task := range claimed {
		ids[i] = task.ID.String()
		outcomes[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Fail, Error: "boom"}
	}
	if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	return ids
}
