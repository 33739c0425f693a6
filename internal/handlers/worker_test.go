package handlers

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// The built-in kinds end in the right states when a real worker runs them.
func TestBuiltinsOnAWorker(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first call fails, the retry succeeds
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	s := memory.New()
	t.Cleanup(s.Close)
	mux := runtime.NewMux()
	Register(mux, Config{})
	w, err := runtime.NewWorker(runtime.Config{
		Store: s, Mux: mux, PollInterval: 10 * time.Millisecond,
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	res, err := s.CreateTasks(context.Background(), []store.CreateParams{
		{Kind: "noop"},
		{Kind: "sleep", Payload: []byte(`{"ms": 5}`)},
		{Kind: "fail", Payload: []byte(`{"times": 2}`)},
		{Kind: "fail", Payload: []byte(`{"times": 5, "permanent": true}`)},
		{Kind: "fail", Payload: []byte(`{}`), MaxAttempts: 2},
		{Kind: "http", Payload: []byte(`{"url": "` + srv.URL + `"}`)},
		{Kind: "http", Payload: []byte(`{"url": "gopher://x"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status   store.Status
		attempts int
	}{
		{store.StatusSucceeded, 1},
		{store.StatusSucceeded, 1},
		{store.StatusSucceeded, 3},
		{store.StatusFailed, 1},
		{store.StatusDead, 2},
		{store.StatusSucceeded, 2},
		{store.StatusFailed, 1},
	}
	for i, r := range res {
		task := waitTerminal(t, s, r.Task.ID)
		if task.Status != want[i].status || task.AttemptCount != want[i].attempts {
			t.Errorf("%s %s: %s after %d attempts (%s), want %s after %d",
				task.Kind, task.Payload, task.Status, task.AttemptCount, task.LastError, want[i].status, want[i].attempts)
		}
	}
}

func waitTerminal(t *testing.T, s store.Store, id uuid.UUID) *store.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := s.GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.Terminal() {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s", id, task.Status)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
