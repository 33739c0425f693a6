package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

var (
	sqlReplayTasks         = query("replay_tasks.sql")
	sqlCountReplayable     = query("count_replayable.sql")
	sqlDeleteFinishedTasks = query("delete_finished_tasks.sql")
	sqlDeleteFinishedFlows = query("delete_finished_flows.sql")
)

// ReplayTasks replays matching DEAD and FAILED tasks in one statement.
func (s *Store) ReplayTasks(ctx context.Context, params store.ReplayParams) ([]*store.Task, error) {
	if err := params.Validate(); err != nil {
		return nil, fmt.Errorf("replay tasks: %w", err)
	}
	var ids []uuid.UUID
	if len(params.TaskIDs) > 0 {
		ids = params.TaskIDs
	}
	// Planned per call: its optional filters (NULL or '' = any) make a generic plan a
	// sequential scan.
	tasks, err := collectTasks(s.pool.Query(ctx, sqlReplayTasks, planPerCall, ids, params.Queue, params.Kind, string(params.Reason), params.Limit))
	if err != nil {
		return nil, translate("replay tasks", err)
	}
	return tasks, nil
}

// CountReplayable counts matching DEAD and FAILED tasks up to atMost; see store.Store.
func (s *Store) CountReplayable(ctx context.Context, params store.ReplayParams, atMost int) (int, error) {
	if err := params.ValidateCount(atMost); err != nil {
		return 0, fmt.Errorf("count replayable: %w", err)
	}
	// Planned per call, as the replay itself: with its filters known the planner walks
	// tasks_status_id or tasks_list, not the table.
	var n int
	if err := s.pool.QueryRow(ctx, sqlCountReplayable, planPerCall, params.Queue, params.Kind, string(params.Reason), atMost).Scan(&n); err != nil {
		return 0, translate("count replayable", err)
	}
	return n, nil
}

// DeleteFinishedTasks deletes one batch of finished tasks past retention.
func (s *Store) DeleteFinishedTasks(ctx context.Context, params store.RetentionParams) (int, error) {
	if params.Limit < 1 {
		return 0, fmt.Errorf("delete finished tasks: %w: limit must be at least 1", store.ErrInvalid)
	}
	// Planned per call: a generic plan cached while the table was empty walks every
	// finished task and hash-joins a sequential scan (TestRetentionIsPlannedPerCall).
	tag, err := s.pool.Exec(ctx, sqlDeleteFinishedTasks, planPerCall, cutoff(params.SucceededBefore), cutoff(params.FailedBefore), params.Limit)
	if err != nil {
		return 0, translate("delete finished tasks", err)
	}
	// Then whole flows, each with its tasks in one statement (never half a flow).
	flowTasks, err := s.deleteFinishedFlows(ctx, params)
	if err != nil {
		return 0, translate("delete finished flows", err)
	}
	return int(tag.RowsAffected()) + flowTasks, nil
}

// deleteFinishedFlows deletes one batch of ended flows with their tasks, in a transaction
// that is rolled back when a task it deleted had come back to life meanwhile (replayed on
// its own after the statement chose its flow): the flow is kept, and the next pass, which
// sees the live task, leaves it alone (delete_finished_flows.sql).
func (s *Store) deleteFinishedFlows(ctx context.Context, params store.RetentionParams) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	var n int
	var live bool
	if err := tx.QueryRow(ctx, sqlDeleteFinishedFlows, planPerCall, cutoff(params.SucceededBefore), cutoff(params.FailedBefore), params.Limit).Scan(&n, &live); err != nil {
		return 0, err
	}
	if live {
		return 0, nil // rolled back by the deferred call
	}
	return n, tx.Commit(ctx)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// cutoff turns a zero time ("keep forever") into SQL NULL, which no comparison matches.
func cutoff(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}
