package runtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/testio"
)

// Every log line about a task is JSON with the same keys (task_id, queue, kind, attempt,
// worker_id), whatever happened to the task, so operators can filter on them.
func TestTaskLogLinesHaveConsistentKeys(t *testing.T) {
	var logs testio.LockedBuffer
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	mux.HandleFunc("flaky", func(context.Context, *runtime.Job) error { return errors.New("try again") })
	mux.HandleFunc("broken", func(context.Context, *runtime.Job) error { return runtime.Permanent(errors.New("never")) })
	cfg := testConfig(t)
	cfg.Queues = map[string]int{"default": 0, "emails": 0}
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, mux, cfg).start()

	ids := h.create(
		store.CreateParams{Kind: "noop"},
		store.CreateParams{Kind: "flaky", Queue: "emails", MaxAttempts: 2},
		store.CreateParams{Kind: "broken"},
		store.CreateParams{Kind: "nobody-handles-this", MaxAttempts: 1},
	)
	want := map[string]store.Status{ids[0].String(): store.StatusSucceeded, ids[1].String(): store.StatusDead,
		ids[2].String(): store.StatusFailed, ids[3].String(): store.StatusDead}
	for _, id := range ids {
		h.waitStatus(id, want[id.String()])
	}
	h.stop()

	tasks := map[string]*store.Task{}
	for _, id := range ids {
		tasks[id.String()] = h.get(id)
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, sc.Bytes())
		}
		if line["worker_id"] != cfg.WorkerID {
			t.Errorf("worker_id = %v, want %q in %s", line["worker_id"], cfg.WorkerID, sc.Bytes())
		}
		id, ok := line["task_id"].(string)
		if !ok {
			continue // a line about the worker, not a task
		}
		task := tasks[id]
		if task == nil {
			t.Errorf("a line names unknown task %q: %s", id, sc.Bytes())
			continue
		}
		seen[id]++
		attempt, _ := line["attempt"].(float64)
		if line["queue"] != task.Queue || line["kind"] != task.Kind || attempt < 1 || int(attempt) > task.MaxAttempts {
			t.Errorf("line about %s (queue %s, kind %s) has queue=%v kind=%v attempt=%v: %s",
				id, task.Queue, task.Kind, line["queue"], line["kind"], line["attempt"], sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for id, status := range want {
		if seen[id] == 0 {
			t.Errorf("no log line names task %s (%s)", id, status)
		}
	}
	if seen[ids[1].String()] < 2 {
		t.Errorf("%d lines about the flaky task, want its retry and its death", seen[ids[1].String()])
	}
}
