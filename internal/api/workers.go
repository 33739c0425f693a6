package api

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/workers"
)

// The workers registry (DESIGN.md section 12): GET /api/workers, the warnings of a
// create answer, and the registration of HTTP-protocol workers by their claims.

type workerJSON struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Version     string    `json:"version"`
	Mode        string    `json:"mode"`
	Queues      []string  `json:"queues"`
	Kinds       []string  `json:"kinds"` // null = unknown (an HTTP-protocol worker)
	Concurrency int       `json:"concurrency"`
	Running     int       `json:"running"`
	StartedAt   time.Time `json:"started_at"`
	LastSeenAt  time.Time `json:"last_seen_at"`
}

type workersJSON struct {
	Workers []workerJSON `json:"workers"`
}

// listWorkers answers the live workers, fresh from the store (not the cache: an
// operator looking at the list wants what is there now).
func (s *Server) listWorkers(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "queue")
	if err != nil {
		return err
	}
	queue, err := single(q, "queue")
	if err != nil {
		return err
	}
	if queue != "" {
		if err := store.ValidateName("queue", queue); err != nil {
			return err
		}
	}
	ws, err := s.cfg.Store.ListWorkers(r.Context(), store.WorkerListParams{Queue: queue})
	if err != nil {
		return err
	}
	out := workersJSON{Workers: make([]workerJSON, len(ws))}
	for i, wk := range ws {
		out.Workers[i] = workerJSON{ID: wk.ID, Host: wk.Host, PID: wk.PID, Version: wk.Version,
			Mode: wk.Mode, Queues: wk.Queues, Kinds: wk.Kinds, Concurrency: wk.Concurrency,
			Running: wk.Running, StartedAt: wk.StartedAt.UTC(), LastSeenAt: wk.LastSeenAt.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// createWarnings returns the warnings of a create answer. The task is created whatever
// this says; a failed lookup is logged and gives no warning.
func (s *Server) createWarnings(ctx context.Context, params []store.CreateParams) []string {
	pairs := make([]workers.QueueKind, len(params))
	for i, p := range params {
		pairs[i] = workers.QueueKind{Queue: cmpQueue(p.Queue), Kind: p.Kind}
	}
	warnings, err := s.cfg.Workers.Warnings(ctx, pairs)
	if err != nil {
		s.cfg.Logger.Warn("create warnings: could not read the live workers", "error", err)
	}
	return warnings
}

func cmpQueue(q string) string {
	if q == "" {
		return store.DefaultQueue
	}
	return q
}

// registerHTTPWorker records the claiming worker in the registry (throttled per worker
// id and queue by HTTPPresence). A failure is logged, never fails the claim.
func (s *Server) registerHTTPWorker(r *http.Request, workerID, queue string) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if err := s.presence.Claimed(r.Context(), workerID, queue, host); err != nil && r.Context().Err() == nil {
		s.cfg.Logger.Warn("could not register an HTTP-protocol worker", "worker_id", workerID, "error", err)
	}
}
