package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// TestCancelReachesRunningHandlerAtOnce is issue #12 item 3: with the default lease and
// heartbeat settings (a beat every 10 s), a cancel request reaches the running handler
// through the cancel notification well under a second after the request, not at the
// next heartbeat, and the task is recorded CANCELED.
func TestCancelReachesRunningHandlerAtOnce(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		started := make(chan struct{})
		stopped := make(chan struct{})
		mux := runtime.NewMux()
		mux.HandleFunc("wait", func(ctx context.Context, _ *runtime.Job) error {
			close(started)
			<-ctx.Done()
			close(stopped)
			return ctx.Err()
		})
		cfg := testConfig(t)
		cfg.Store = st
		cfg.LeaseDuration = 0 // the defaults: 30 s lease, a heartbeat every 10 s
		cfg.HeartbeatInterval = 0
		h := newHarness(t, mux, cfg).start()
		id := h.create(store.CreateParams{Kind: "wait"})[0]
		recv(t, "the handler to start", started)

		if _, err := st.CancelTask(context.Background(), id); err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		select {
		case <-stopped:
		case <-time.After(time.Second):
			t.Fatal("the handler's context was not done within 1s of the cancel request")
		}
		h.waitStatus(id, store.StatusCanceled)
	})
}
