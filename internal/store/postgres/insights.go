package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
)

var (
	sqlThroughput     = query("insights_throughput.sql")
	sqlStuckTasks     = query("insights_stuck_tasks.sql")
	sqlRunningByGroup = query("insights_running_by_group.sql")
)

// Throughput counts finished tasks per bucket; see store.Insights.
func (s *Store) Throughput(ctx context.Context, since time.Time, bucket time.Duration) ([]store.ThroughputBucket, error) {
	if err := store.ValidateThroughput(since, bucket); err != nil {
		return nil, fmt.Errorf("throughput: %w", err)
	}
	// Planned per call: a generic plan made while the table was small would scan it.
	rows, err := s.pool.Query(ctx, sqlThroughput, planPerCall, since, bucket.Microseconds())
	if err != nil {
		return nil, translate("throughput", err)
	}
	out := []store.ThroughputBucket{}
	var b store.ThroughputBucket
	_, err = pgx.ForEachRow(rows, []any{&b.Start, &b.Succeeded, &b.Failed}, func() error {
		b.Start = b.Start.UTC()
		out = append(out, b)
		return nil
	})
	if err != nil {
		return nil, translate("throughput", err)
	}
	return out, nil
}

// StuckTasks returns PROCESSING tasks past their lease; see store.Insights.
func (s *Store) StuckTasks(ctx context.Context, limit int) ([]*store.Task, error) {
	if err := store.ValidateStuckLimit(limit); err != nil {
		return nil, fmt.Errorf("stuck tasks: %w", err)
	}
	tasks, err := collectTasks(s.pool.Query(ctx, sqlStuckTasks, planPerCall, limit))
	if err != nil {
		return nil, translate("stuck tasks", err)
	}
	return tasks, nil
}

// RunningByGroup counts PROCESSING tasks per group; see store.Insights.
func (s *Store) RunningByGroup(ctx context.Context, queues []string) ([]store.GroupRunning, error) {
	if err := store.ValidateQueues(queues); err != nil {
		return nil, fmt.Errorf("running by group: %w", err)
	}
	out := []store.GroupRunning{}
	if len(queues) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, sqlRunningByGroup, planPerCall, queues)
	if err != nil {
		return nil, translate("running by group", err)
	}
	var g store.GroupRunning
	_, err = pgx.ForEachRow(rows, []any{&g.Queue, &g.GroupKey, &g.Running}, func() error {
		out = append(out, g)
		return nil
	})
	if err != nil {
		return nil, translate("running by group", err)
	}
	return out, nil
}
