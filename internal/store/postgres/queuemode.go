package postgres

import (
	"context"
	"fmt"

	"github.com/rotaqueue/rota/internal/store"
)

// ServeQueues records (or, with For = 0, withdraws) an SQS enqueuer's queues.
func (s *Store) ServeQueues(ctx context.Context, params store.ServeParams) error {
	if err := params.Normalize(); err != nil {
		return fmt.Errorf("serve queues: %w", err)
	}
	_, err := s.pool.Exec(ctx, sqlServeQueues, params.EnqueuerID, params.Queues, params.For.Seconds())
	return translate("serve queues", err)
}

// RequeueUnserved returns ENQUEUED tasks of queues no enqueuer serves to PENDING. It is
// planned per call, like the reaper that runs it on every process.
func (s *Store) RequeueUnserved(ctx context.Context, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("requeue unserved: %w: limit must be at least 1, got %d", store.ErrInvalid, limit)
	}
	var n, queues int
	if err := s.pool.QueryRow(ctx, sqlRequeueUnserved, planPerCall, limit).Scan(&n, &queues); err != nil {
		return 0, translate("requeue unserved", err)
	}
	return n, nil
}
