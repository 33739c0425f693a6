// Package tracing is Rota's OpenTelemetry seam: the tracer provider a process exports
// with (Setup, from the standard OTEL_* environment variables), and the W3C trace
// context a task carries from the call that created it to the attempt that runs it
// (Inject, FromHeader, Extract).
//
// Tracing is off unless an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER names an exporter; off,
// the provider is OpenTelemetry's no-op one, whose spans record nothing. A trace
// context received from a caller is stored with its tasks either way, so that a traced
// worker (Go or an SDK) still continues the enqueuer's trace.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of Rota's own spans.
const Name = "github.com/rotaqueue/rota"

// Propagator is the one format a task's trace context is stored in: W3C Trace Context
// (traceparent, tracestate), whatever the process's global propagator is.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Enabled reports whether the environment asks for traces to be exported: an OTLP
// endpoint, or an explicit OTEL_TRACES_EXPORTER other than "none", and not
// OTEL_SDK_DISABLED=true.
func Enabled() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return true
	}
}

// Setup installs the process's tracer provider and the W3C propagator as the
// OpenTelemetry globals, and returns the provider and its shutdown, which flushes the
// spans still buffered (call it last, after the components that make spans stopped).
// Off (Enabled false), the provider is a no-op one and shutdown does nothing.
// service names the process (service.name; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override it).
func Setup(ctx context.Context, service string) (trace.TracerProvider, func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if !Enabled() {
		tp := noop.NewTracerProvider()
		otel.SetTracerProvider(tp)
		return tp, func(context.Context) error { return nil }, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: span exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName(service)),
		resource.Environment(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: resource: %w", err)
	}
	// The batch processor reads OTEL_BSP_* (queue size, delay, batch size).
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp, tp.Shutdown, nil
}

// Inject returns the trace context of ctx's span as a carrier to store with a task, or
// nil when ctx holds no valid span context (the call was not traced).
func Inject(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	return c
}

// FromHeader returns the trace context an HTTP request names in its traceparent (and
// tracestate) header, re-encoded, or nil when there is none or it is malformed (a W3C
// receiver ignores a malformed traceparent rather than refusing the request).
func FromHeader(h http.Header) map[string]string {
	return Inject(Propagator.Extract(context.Background(), propagation.HeaderCarrier(h)))
}

// Extract returns ctx with the stored trace context c as its remote parent, so that a
// span started from it continues the creating call's trace; ctx as it is when c holds
// none.
func Extract(ctx context.Context, c map[string]string) context.Context {
	if len(c) == 0 {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier(c))
}
