package main

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/rotaqueue/rota/internal/tracing"
)

// tracingFlushTimeout bounds the flush of buffered spans at exit.
const tracingFlushTimeout = 5 * time.Second

// startTracing sets up OpenTelemetry tracing from the standard OTEL_* environment
// variables (internal/tracing: on when an OTLP endpoint is set). The returned stop
// flushes the spans still buffered; defer it first so that it runs after every
// component that makes spans has stopped.
func startTracing(ctx context.Context, service string, logger *slog.Logger) (stop func(), err error) {
	_, shutdown, err := tracing.Setup(ctx, service)
	if err != nil {
		return nil, err
	}
	if !tracing.Enabled() {
		return func() {}, nil
	}
	// Export failures (an unreachable collector) are logged, never fatal.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing: export failed", "error", err)
	}))
	logger.Info("tracing on: spans exported as the OTEL_* variables say", "service", service)
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			logger.Warn("tracing: flush at exit failed", "error", err)
		}
	}, nil
}
