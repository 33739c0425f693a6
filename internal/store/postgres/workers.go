package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
)

var (
	sqlRegisterWorker = query("register_worker.sql")
	sqlListWorkers    = query("list_workers.sql")
)

// RegisterWorker upserts a worker's row; see store.WorkerRegistry.
func (s *Store) RegisterWorker(ctx context.Context, params store.RegisterParams) error {
	if err := params.Normalize(); err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	w := params.Worker
	queues := slices.Sorted(slices.Values(w.Queues))
	if queues == nil {
		queues = []string{} // NOT NULL
	}
	var kinds []string // nil is NULL: unknown
	if w.Kinds != nil {
		kinds = append([]string{}, w.Kinds...)
		slices.Sort(kinds)
	}
	_, err := s.pool.Exec(ctx, sqlRegisterWorker, w.ID, w.Host, w.PID, w.Version, w.Mode,
		queues, kinds, w.Concurrency, w.Running, params.MergeQueues,
		store.DefaultWorkerExpiry.Seconds(), store.WorkerPruneAfter.Seconds())
	return translate("register worker", err)
}

// DeregisterWorker deletes a worker's row; see store.WorkerRegistry.
func (s *Store) DeregisterWorker(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM rota.workers WHERE id = $1`, id)
	return translate("deregister worker", err)
}

// ListWorkers returns the live workers; see store.WorkerRegistry. Planned per call, so
// that a queue filter uses the workers_queues index.
func (s *Store) ListWorkers(ctx context.Context, params store.WorkerListParams) ([]store.Worker, error) {
	live := params.LiveWithin
	if live <= 0 {
		live = store.DefaultWorkerExpiry
	}
	rows, err := s.pool.Query(ctx, sqlListWorkers, planPerCall, params.Queue, live.Seconds())
	if err != nil {
		return nil, translate("list workers", err)
	}
	out := []store.Worker{}
	var w store.Worker
	_, err = pgx.ForEachRow(rows, []any{&w.ID, &w.Host, &w.PID, &w.Version, &w.Mode, &w.Queues,
		&w.Kinds, &w.Concurrency, &w.Running, &w.StartedAt, &w.LastSeenAt}, func() error {
		w.StartedAt, w.LastSeenAt = w.StartedAt.UTC(), w.LastSeenAt.UTC()
		out = append(out, w)
		w = store.Worker{}
		return nil
	})
	if err != nil {
		return nil, translate("list workers", err)
	}
	return out, nil
}
