package runtime

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/tracing"
)

// The worker's spans (issue 15): one per handler attempt, a child of the span that
// created the task (its stored trace context), and one per claim and per commit
// statement, each the root of a trace of its own (a batch serves many traces): an
// attempt span links to its claim's span, a commit span to the attempt spans whose
// outcomes it wrote. With the no-op tracer provider (tracing off) none records, and
// neither attributes nor links are built.

// consumerSpan is the attempt span's kind, made once (an option per call allocates).
var consumerSpan = trace.WithSpanKind(trace.SpanKindConsumer)

// startAttempt starts the attempt's span in the trace the task was created in, linked
// to the span of the claim that brought it.
func (w *Worker) startAttempt(ctx context.Context, e *inflight) (context.Context, trace.Span) {
	t := e.task
	ctx = tracing.Extract(ctx, t.TraceContext)
	ctx, span := w.tracer.Start(ctx, "rota.attempt "+t.Kind, consumerSpan)
	if span.IsRecording() { // attributes and links cost allocations: none when tracing is off
		if e.claim.IsValid() {
			span.AddLink(trace.Link{SpanContext: e.claim})
		}
		span.SetAttributes(
			attribute.String("messaging.system", "rota"),
			attribute.String("rota.task.id", t.ID.String()),
			attribute.String("rota.queue", t.Queue),
			attribute.String("rota.kind", t.Kind),
			attribute.Int("rota.attempt", t.AttemptCount),
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

// linkAttempts links a commit span to the attempt spans whose outcomes it writes.
func linkAttempts(span trace.Span, batch []pendingOutcome) {
	if !span.IsRecording() {
		return
	}
	for _, p := range batch {
		if p.e.span.IsValid() {
			span.AddLink(trace.Link{SpanContext: p.e.span})
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
