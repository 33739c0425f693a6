package rota_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota"
)

// TestEnqueueCarriesTheCallersTrace: a task enqueued under a span (Enqueue, EnqueueMany,
// EnqueueTx) is handled in that span's trace: the handler's context holds a span whose
// trace id is the enqueuer's.
func TestEnqueueCarriesTheCallersTrace(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		seen := make(chan trace.SpanContext, 3)
		mux := rota.NewMux()
		mux.HandleFunc("traced", func(ctx context.Context, job *rota.Job) error {
			seen <- trace.SpanContextFromContext(ctx)
			return nil
		})
		startWorker(t, c, mux)

		tp := sdktrace.NewTracerProvider()
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		sctx, span := tp.Tracer("test").Start(ctx, "enqueue")
		defer span.End()
		want := span.SpanContext().TraceID()

		n := 2
		if _, err := c.Enqueue(sctx, rota.EnqueueParams{Kind: "traced"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnqueueMany(sctx, []rota.EnqueueParams{{Kind: "traced"}}); err != nil {
			t.Fatal(err)
		}
		if c.pool != nil {
			tx, err := c.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.EnqueueTx(sctx, tx, rota.EnqueueParams{Kind: "traced"}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			n++
		}
		for range n {
			select {
			case sc := <-seen:
				if sc.TraceID() != want {
					t.Errorf("handler's trace %s, want the enqueuer's %s", sc.TraceID(), want)
				}
			case <-ctx.Done():
				t.Fatal("handlers did not run")
			}
		}
	})
}
