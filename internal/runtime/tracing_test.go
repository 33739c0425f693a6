package runtime_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// TestAttemptSpanContinuesTheEnqueuersTrace: the attempt's span is a child of the span
// that created the task (its stored trace context), carries the task's attributes and
// an error status when the handler fails, and links to its claim's span; the commit
// span links to it; the handler's context holds the attempt span.
func TestAttemptSpanContinuesTheEnqueuersTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mux := runtime.NewMux()
	inHandler := make(chan trace.SpanContext, 2)
	mux.HandleFunc("ok", func(ctx context.Context, job *runtime.Job) error {
		inHandler <- trace.SpanContextFromContext(ctx)
		return nil
	})
	mux.HandleFunc("bad", func(ctx context.Context, job *runtime.Job) error {
		inHandler <- trace.SpanContextFromContext(ctx)
		return runtime.Permanent(errors.New("broken payload"))
	})
	cfg := testConfig(t)
	cfg.TracerProvider = tp
	h := newHarness(t, mux, cfg).start()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	carrier := map[string]string{"traceparent": "00-" + traceID + "-" + parentID + "-01"}
	ok := h.create(store.CreateParams{Kind: "ok", TraceContext: carrier})[0]
	h.waitStatus(ok, store.StatusSucceeded)
	bad := h.create(store.CreateParams{Kind: "bad", TraceContext: carrier})[0]
	h.waitStatus(bad, store.StatusFailed)
	h.stop()

	attempts := map[string]sdktrace.ReadOnlySpan{}
	claims := map[trace.SpanID]bool{}
	var commits []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "rota.attempt ok", "rota.attempt bad":
			attempts[s.Name()] = s
		case "rota.claim":
			claims[s.SpanContext().SpanID()] = true
		case "rota.commit":
			commits = append(commits, s)
		}
	}
	for name, wantErr := range map[string]bool{"rota.attempt ok": false, "rota.attempt bad": true} {
		s := attempts[name]
		if s == nil {
			t.Fatalf("no %q span among %d", name, len(rec.Ended()))
		}
		if s.Parent().TraceID().String() != traceID || s.Parent().SpanID().String() != parentID || !s.Parent().IsRemote() {
			t.Errorf("%s: parent %s/%s, want the stored %s/%s", name, s.Parent().TraceID(), s.Parent().SpanID(), traceID, parentID)
		}
		if s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("%s: kind %v", name, s.SpanKind())
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["rota.queue"] != "default" || attrs["rota.attempt"] != "1" || attrs["rota.task.id"] == "" {
			t.Errorf("%s: attributes %v", name, attrs)
		}
		if got := s.Status().Code == codes.Error; got != wantErr {
			t.Errorf("%s: status %v, want error %v", name, s.Status(), wantErr)
		}
		if l := s.Links(); len(l) != 1 || !claims[l[0].SpanContext.SpanID()] {
			t.Errorf("%s: links %v, want one to its claim's span", name, l)
		}
		if !linkedFrom(commits, s.SpanContext().SpanID()) {
			t.Errorf("%s: no commit span links to it", name)
		}
	}
	for range 2 {
		sc := recv(t, "handler span context", inHandler)
		if sc.TraceID().String() != traceID || sc.IsRemote() {
			t.Errorf("handler's context: trace %s remote %v, want the attempt's span", sc.TraceID(), sc.IsRemote())
		}
	}
}

// linkedFrom reports whether one of spans links to the span id.
func linkedFrom(spans []sdktrace.ReadOnlySpan, id trace.SpanID) bool {
	for _, s := range spans {
		for _, l := range s.Links() {
			if l.SpanContext.SpanID() == id {
				return true
			}
		}
	}
	return false
}
