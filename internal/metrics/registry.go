package metrics

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry holding the Go runtime and process collectors, as the
// default registry does. Each command builds its own, so that running a command twice in
// one process (tests) never meets collectors bound to an earlier run's store.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves reg's metrics in the Prometheus exposition format, counting its own
// requests (promhttp_metric_handler_*) as promhttp.Handler does for the default registry.
// A collector that fails does not hide the others' metrics.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      reg,
	}))
}

// Register registers c with reg, or returns the collector already registered under the
// same descriptors: two components of one process (two schedulers, say) may ask for the
// same metrics. A clash with a different metric of the same name panics: a programming
// error. Every package that exports metrics registers through it.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}
