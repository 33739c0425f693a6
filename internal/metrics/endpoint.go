package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// NewEndpoint returns the HTTP handler of a process that has no API server (a worker):
// GET /metrics (reg's metrics) and GET /healthz (200 "ok" while the process runs). The
// worker serves it with the same server loop as the API (cmd/rota serveHTTP).
func NewEndpoint(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", Handler(reg))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
