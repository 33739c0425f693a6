package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/browserguard"
)

// NewEndpoint returns the HTTP handler of a process that has no API server (a worker):
// GET /metrics (reg's metrics) and GET /healthz (200 "ok" while the process runs). The
// worker serves it with the same server loop as the API (cmd/rota serveHTTP).
//
// A worker has no API token, so /metrics follows browserguard's Host rule, as the
// server's does without a token: a DNS-rebinding page cannot read queue names and
// counts through a visitor's browser. Scrape it by IP address (Prometheus's service
// discovery does) or at localhost. /healthz answers any Host, as probes may use any name.
func NewEndpoint(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	metrics := Handler(reg)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if err := browserguard.Check(r, false); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
