package runtime

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/tracing"
)

// The worker's spans (issue 15): one per handler attempt, a child of the span that
// created the task (its stored trace context), and one per claim and per commit
// statement, each linked to the traces of the tasks it carried. With the no-op tracer
// provider (tracing off) none records, and the links, which cost a parse per task,
// are not even built.

// startAttempt starts the attempt's span in the trace the task was created in.
func (w *Worker) startAttempt(ctx context.Context, t *store.Task) (context.Context, trace.Span) {
	ctx = tracing.Extract(ctx, t.TraceContext)
	ctx, span := w.tracer.Start(ctx, "rota.attempt "+t.Kind, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() { // the attributes cost allocations: none when tracing is off
		span.SetAttributes(
			attribute.String("messaging.system", "rota"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", t.Queue),
			attribute.String("messaging.message.id", t.ID.String()),
			attribute.String("rota.task.id", t.ID.String()),
			attribute.String("rota.queue", t.Queue),
			attribute.String("rota.kind", t.Kind),
			attribute.Int("rota.attempt", t.AttemptCount),
			attribute.String("rota.worker_id", w.cfg.WorkerID),
		)
	}
	return ctx, span
}

// endAttempt ends the attempt's span with the handler's result: an error status for
// any failure (a retry, a permanent failure, a cancel, a timeout).
func endAttempt(span trace.Span, err error, abandoned bool) {
	switch {
	case abandoned:
		span.SetStatus(codes.Error, "handler abandoned: it ignored its context's end")
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// startBatch starts the span of one claim or commit statement.
func (w *Worker) startBatch(ctx context.Context, name, queue string, n int) (context.Context, trace.Span) {
	ctx, span := w.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("rota.batch.size", n), attribute.String("rota.worker_id", w.cfg.WorkerID))
		if queue != "" {
			span.SetAttributes(attribute.String("rota.queue", queue))
		}
	}
	return ctx, span
}

// linkTasks links a batch span to the traces of its tasks.
func linkTasks[T any](span trace.Span, items []T, traceOf func(T) map[string]string) {
	if !span.IsRecording() {
		return
	}
	for _, it := range items {
		if l, ok := tracing.Link(traceOf(it)); ok {
			span.AddLink(l)
		}
	}
}

// endBatch ends a batch span with the statement's error, if any.
func endBatch(span trace.Span, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
