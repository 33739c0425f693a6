package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

// ListAttempts returns a task's attempt history, oldest first; ErrNotFound for an
// unknown task.
func (s *Store) ListAttempts(ctx context.Context, taskID uuid.UUID) ([]store.Attempt, error) {
	// Unnamed statement: planned for this call (a cached plan made while task_attempts,
	// the fastest-growing table, was small would scan it).
	rows, err := s.pool.Query(ctx, sqlListAttempts, pgx.QueryExecModeCacheDescribe, taskID)
	if err != nil {
		return nil, translate("list attempts", err)
	}
	attempts := []store.Attempt{}
	found := false
	var (
		taskRef, token    pgtype.UUID
		attemptID         pgtype.Int8
		attempt           pgtype.Int4
		workerID, outcome pgtype.Text
		errText           pgtype.Text
		started, finished pgtype.Timestamptz
	)
	_, err = pgx.ForEachRow(rows, []any{&attemptID, &taskRef, &attempt, &workerID, &token,
		&started, &finished, &outcome, &errText}, func() error {
		found = true
		if !attemptID.Valid { // the task has no attempts yet
			return nil
		}
		a := store.Attempt{
			ID:         attemptID.Int64,
			TaskID:     uuid.UUID(taskRef.Bytes),
			Attempt:    int(attempt.Int32),
			WorkerID:   workerID.String,
			StartedAt:  started.Time.UTC(),
			FinishedAt: timePtr(finished),
			Outcome:    store.AttemptOutcome(outcome.String),
			Error:      errText.String,
		}
		if token.Valid {
			a.LeaseToken = uuid.UUID(token.Bytes)
		}
		attempts = append(attempts, a)
		return nil
	})
	if err != nil {
		return nil, translate("list attempts", err)
	}
	if !found {
		return nil, fmt.Errorf("list attempts: %w", store.ErrNotFound)
	}
	return attempts, nil
}

// ListDeadLetters pages through dead-letter events, newest first.
func (s *Store) ListDeadLetters(ctx context.Context, params store.DeadLetterParams) ([]store.DeadLetter, string, error) {
	limit, err := store.NormalizeLimit(params.Limit)
	if err == nil {
		err = params.Validate()
	}
	if err != nil {
		return nil, "", fmt.Errorf("list dead letters: %w", err)
	}
	var after int64
	if params.Cursor != "" {
		if after, err = store.DecodeDeadLetterCursor(params.Cursor); err != nil {
			return nil, "", fmt.Errorf("list dead letters: %w", err)
		}
	}
	var rows pgx.Rows
	if params.Queue == "" && params.Kind == "" {
		rows, err = s.pool.Query(ctx, sqlListDeadLettersAll, pgx.QueryExecModeCacheDescribe,
			"", "", string(params.Reason), after, limit+1)
	} else {
		reasons := []string{string(params.Reason)}
		if params.Reason == "" {
			reasons = []string{string(store.StatusDead), string(store.StatusFailed)}
		}
		rows, err = s.pool.Query(ctx, listDeadLettersFiltered(params.Queue, params.Kind), pgx.QueryExecModeCacheDescribe,
			params.Queue, params.Kind, reasons, after, limit+1)
	}
	if err != nil {
		return nil, "", translate("list dead letters", err)
	}
	events, err := collectDeadLetters(rows)
	if err != nil {
		return nil, "", translate("list dead letters", err)
	}
	var next string
	if len(events) > limit {
		events = events[:limit]
		next = store.EncodeDeadLetterCursor(events[limit-1].ID)
	}
	return events, next, nil
}

// collectDeadLetters reads rows of the columns of list_dead_letters.sql.
func collectDeadLetters(rows pgx.Rows) ([]store.DeadLetter, error) {
	events := []store.DeadLetter{}
	var (
		d                 store.DeadLetter
		taskID            pgtype.UUID
		workerID, errText pgtype.Text
		reason            string
		created           pgtype.Timestamptz
		replayed          pgtype.Timestamptz
	)
	_, err := pgx.ForEachRow(rows, []any{&d.ID, &taskID, &d.Kind, &d.Queue, &workerID,
		&d.AttemptCount, &d.MaxAttempts, &errText, &reason, &created, &replayed}, func() error {
		d.TaskID = uuid.UUID(taskID.Bytes)
		d.WorkerID = workerID.String
		d.Error = errText.String
		d.Reason = store.Status(reason)
		d.CreatedAt = created.Time.UTC()
		d.ReplayedAt = timePtr(replayed)
		events = append(events, d)
		return nil
	})
	return events, err
}

// Stats counts tasks per queue and status. Every status appears in Counts, zero or not.
func (s *Store) Stats(ctx context.Context) ([]store.QueueStats, error) {
	var out []store.QueueStats
	// It counts every finished task, so it is linear in the table whatever the plan; it
	// must read the narrow partial indexes rather than the heap, which the planner
	// prefers when the visibility map looks stale (right after a busy spell) or the
	// table is small. Callers share one cached result (docs/architecture.md).
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sqlStats)
		if err != nil {
			return err
		}
		out, err = collectStats(rows)
		return err
	})
	if err != nil {
		return nil, translate("stats", err)
	}
	return out, nil
}

// collectStats reads the rows of stats.sql.
func collectStats(rows pgx.Rows) ([]store.QueueStats, error) {
	out := []store.QueueStats{}
	var (
		queue, status  string
		count, expired int64
		oldest         pgtype.Timestamptz
	)
	_, err := pgx.ForEachRow(rows, []any{&queue, &status, &count, &oldest, &expired}, func() error {
		if len(out) == 0 || out[len(out)-1].Queue != queue {
			counts := make(map[store.Status]int64, len(store.AllStatuses))
			for _, st := range store.AllStatuses {
				counts[st] = 0
			}
			out = append(out, store.QueueStats{Queue: queue, Counts: counts})
		}
		qs := &out[len(out)-1]
		qs.Counts[store.Status(status)] = count
		qs.ExpiredLeases += expired
		if oldest.Valid {
			qs.OldestDueAt = timePtr(oldest)
		}
		return nil
	})
	return out, err
}

// listDeadLettersFiltered is list_dead_letters.sql for a queue and kind filter (one of
// them at least; "" = any), as listTasksFiltered.
func listDeadLettersFiltered(queue, kind string) string {
	pairs := sqlDeadLetterPairsBoth
	switch {
	case kind == "":
		pairs = sqlDeadLetterPairsKinds
	case queue == "":
		pairs = sqlDeadLetterPairsQueues
	}
	return strings.Replace(sqlListDeadLetters, "{{pairs}}", pairs, 1)
}
