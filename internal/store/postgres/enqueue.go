package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
)

// rollbackTimeout bounds the rollback of an EnqueueDue that failed; a server that does
// not answer by then loses the connection, which ends the transaction too.
const rollbackTimeout = 5 * time.Second

// The two statements of EnqueueDue (queries/enqueue_*.sql).
var (
	sqlEnqueueDue  = query("enqueue_due.sql")
	sqlEnqueueMark = query("enqueue_mark.sql")
)

// EnqueueDue locks the tasks that need an SQS message, hands their ids to send while the
// locks are held, and marks the ids send reports, all in one transaction; see
// store.EnqueueParams. Both statements are planned per call: the first runs every few
// hundred milliseconds on every server, and a generic plan made while the table looked
// empty would scan it.
func (s *Store) EnqueueDue(ctx context.Context, params store.EnqueueParams,
	send func(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error)) (int, error) {
	if err := params.Normalize(); err != nil {
		return 0, fmt.Errorf("enqueue due: %w", err)
	}
	if send == nil {
		return 0, fmt.Errorf("enqueue due: %w: send is required", store.ErrInvalid)
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, translate("enqueue due", err)
	}
	// Ends the transaction on every early return (a no-op after Commit). It must run even
	// when ctx has ended (the usual reason to get here): rolled back on a cancelled
	// context, pgx would drop the connection instead, and the server would keep the row
	// locks, hiding the tasks from every enqueuer, until it noticed.
	defer func() {
		rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rbCtx)
	}()

	rows, err := tx.Query(ctx, sqlEnqueueDue, planPerCall, params.Queue, params.Limit, params.RedeliverAfter)
	if err != nil {
		return 0, translate("enqueue due", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return 0, translate("enqueue due", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}

	sent, sendErr := send(ctx, ids)
	if sendErr != nil {
		sendErr = fmt.Errorf("enqueue due: send: %w", sendErr)
	}
	// A database failure after send is returned together with send's own error.
	failed := func(op string, err error) (int, error) {
		return 0, errors.Join(translate(op, err), sendErr)
	}
	// Mark only what this call locked and send reported, each id once.
	locked := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		locked[id] = true
	}
	mark := make([]uuid.UUID, 0, len(sent))
	for _, id := range sent {
		if locked[id] {
			mark = append(mark, id)
			delete(locked, id)
		}
	}

	marked := 0
	if len(mark) > 0 {
		tag, err := tx.Exec(ctx, sqlEnqueueMark, planPerCall, mark)
		if err != nil {
			return failed("enqueue due: mark sent", err)
		}
		marked = int(tag.RowsAffected())
	}
	if err := tx.Commit(ctx); err != nil {
		return failed("enqueue due: commit", err)
	}
	return marked, sendErr
}
