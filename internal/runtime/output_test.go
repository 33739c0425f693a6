package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// outputOf decodes a task's stored output.
func outputOf(t *testing.T, task *store.Task) any {
	t.Helper()
	if task.Output == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(task.Output, &v); err != nil {
		t.Fatalf("task %s: output %q is not JSON: %v", task.ID, task.Output, err)
	}
	return v
}

// TestHandlerOutputReachesStore: what a Go handler sets with Job.SetOutput is the task's
// output once it succeeded, through the committer, on both stores; a handler that sets
// none leaves none, and an output set by an attempt that then failed is not kept.
func TestHandlerOutputReachesStore(t *testing.T) {
	t.Parallel()
	adapters.Each(t, func(t *testing.T, st store.Store) {
		type report struct {
			Rows  int      `json:"rows"`
			Files []string `json:"files"`
		}
		mux := runtime.NewMux()
		mux.HandleFunc("etl", func(ctx context.Context, job *runtime.Job) error {
			return job.SetOutput(report{Rows: 3, Files: []string{"a.csv", "b.csv"}})
		})
		mux.HandleFunc("raw", func(ctx context.Context, job *runtime.Job) error {
			return job.SetOutput(json.RawMessage(`[1, 2,  3]`))
		})
		mux.HandleFunc("none", func(ctx context.Context, job *runtime.Job) error { return nil })
		mux.HandleFunc("flaky", func(ctx context.Context, job *runtime.Job) error {
			if err := job.SetOutput(job.Task.AttemptCount); err != nil {
				return err
			}
			if job.Task.AttemptCount < 2 {
				return errors.New("first attempt fails after setting an output")
			}
			return nil
		})
		cfg := testConfig(t)
		cfg.Store = st
		h := newHarness(t, mux, cfg).start()
		ids := h.create(store.CreateParams{Kind: "etl"}, store.CreateParams{Kind: "raw"},
			store.CreateParams{Kind: "none"}, store.CreateParams{Kind: "flaky", MaxAttempts: 3})

		want := []any{
			map[string]any{"rows": 3.0, "files": []any{"a.csv", "b.csv"}},
			[]any{1.0, 2.0, 3.0},
			nil,
			2.0, // the attempt that succeeded
		}
		for i, id := range ids {
			task := h.waitStatus(id, store.StatusSucceeded)
			if got := outputOf(t, task); !reflect.DeepEqual(got, want[i]) {
				t.Errorf("task %d (%s): output %s, want %v", i, task.Kind, task.Output, want[i])
			}
		}
	})
}

// TestRefusedOutputFailsTheTask: SetOutput refuses more than MaxOutputBytes (the error
// wraps ErrInvalidOutput) and keeps nothing; a handler that ignores the refusal and
// returns nil fails the task permanently instead of succeeding without its result, and a
// handler that sets a smaller output after the refusal succeeds with it.
func TestRefusedOutputFailsTheTask(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", runtime.MaxOutputBytes)
	refusals := make(chan error, 2)
	mux := runtime.NewMux()
	mux.HandleFunc("ignores", func(ctx context.Context, job *runtime.Job) error {
		refusals <- job.SetOutput(big) // a JSON string of MaxOutputBytes + 2 bytes
		return nil
	})
	mux.HandleFunc("recovers", func(ctx context.Context, job *runtime.Job) error {
		refusals <- job.SetOutput(big)
		if job.Output() != nil {
			return errors.New("a refused output was kept")
		}
		return job.SetOutput(map[string]int{"truncated": len(big)})
	})
	mux.HandleFunc("unmarshalable", func(ctx context.Context, job *runtime.Job) error {
		return job.SetOutput(func() {})
	})
	h := newHarness(t, mux, testConfig(t)).start()
	ids := h.create(store.CreateParams{Kind: "ignores", MaxAttempts: 5},
		store.CreateParams{Kind: "recovers"}, store.CreateParams{Kind: "unmarshalable", MaxAttempts: 1})

	for range 2 {
		if err := recv(t, "a refusal", refusals); !errors.Is(err, runtime.ErrInvalidOutput) {
			t.Fatalf("SetOutput of %d bytes: %v, want ErrInvalidOutput", len(big)+2, err)
		}
	}
	failed := h.waitStatus(ids[0], store.StatusFailed)
	if failed.AttemptCount != 1 || !strings.Contains(failed.LastError, "output is") || failed.Output != nil {
		t.Fatalf("a success after a refused output: attempts %d, last error %q, output %d bytes; want FAILED at once saying why",
			failed.AttemptCount, failed.LastError, len(failed.Output))
	}
	if got := outputOf(t, h.waitStatus(ids[1], store.StatusSucceeded)); !reflect.DeepEqual(got, map[string]any{"truncated": float64(len(big))}) {
		t.Fatalf("output after a refusal and a smaller one: %v", got)
	}
	if task := h.waitStatus(ids[2], store.StatusDead); !strings.Contains(task.LastError, "invalid task output") {
		t.Fatalf("an output json cannot encode: last error %q", task.LastError)
	}
}
