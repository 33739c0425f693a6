package runtime_test

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// A running worker is in the workers registry with its queues, kinds, concurrency and
// running handlers, renewed while it runs, and leaves it at a graceful stop.
func TestWorkerRegistersItsPresence(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		release := newGate()
		mux := runtime.NewMux()
		mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
		mux.HandleFunc("block", func(ctx context.Context, _ *runtime.Job) error {
			select {
			case <-release.ch:
			case <-ctx.Done():
			}
			return nil
		})
		cfg := testConfig(t)
		cfg.Store = st
		cfg.Queues = map[string]int{"b": 0, "a": 0}
		cfg.PresenceInterval = 20 * time.Millisecond
		h := newHarness(t, mux, cfg).start()
		defer release.open()

		list := func() []store.Worker {
			ws, err := st.ListWorkers(t.Context(), store.WorkerListParams{})
			if err != nil {
				t.Fatalf("ListWorkers: %v", err)
			}
			return ws
		}
		h.create(store.CreateParams{Queue: "a", Kind: "block"})
		var w store.Worker
		waitFor(t, "the worker registered with one running handler", func() bool {
			ws := list()
			if len(ws) == 1 {
				w = ws[0]
			}
			return len(ws) == 1 && ws[0].Running == 1
		})
		host, _ := os.Hostname()
		want := store.Worker{ID: "test-worker", Host: host, PID: os.Getpid(), Version: runtime.BuildVersion(),
			Mode: store.WorkerModePoll, Queues: []string{"a", "b"}, Kinds: []string{"block", "noop"},
			Concurrency: 10, Running: 1, StartedAt: w.StartedAt, LastSeenAt: w.LastSeenAt}
		if !reflect.DeepEqual(w, want) {
			t.Errorf("registry row = %+v\nwant           %+v", w, want)
		}
		release.open()
		h.stop()
		if ws := list(); len(ws) != 0 {
			t.Errorf("after a graceful stop the registry still lists %+v", ws)
		}
	})
}
