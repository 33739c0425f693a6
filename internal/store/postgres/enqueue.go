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

// The statements of EnqueueDue (queries/enqueue_*.sql) and PublishDeadLetters
// (queries/dlq_*.sql).
var (
	sqlEnqueueDue  = query("enqueue_due.sql")
	sqlEnqueueMark = query("enqueue_mark.sql")
	sqlDLQPending  = query("dlq_pending.sql")
	sqlDLQMark     = query("dlq_mark.sql")
)

// EnqueueDue locks the tasks that need an SQS message, hands their ids to send while the
// locks are held, and marks the ids send reports, all in one transaction; see
// store.EnqueueParams. Both statements are functions planned once per session (migration
// 0033), whose settings keep a plan made while the table looked empty from scanning it
// (TestEnqueueNeverScansTasks).
func (s *Store) EnqueueDue(ctx context.Context, params store.EnqueueParams,
	send func(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error)) (int, error) {
	if err := params.Normalize(); err != nil {
		return 0, fmt.Errorf("enqueue due: %w", err)
	}
	if send == nil {
		return 0, fmt.Errorf("enqueue due: %w: send is required", store.ErrInvalid)
	}
	return handOut(ctx, s, "enqueue due", "send",
		func(tx pgx.Tx) ([]uuid.UUID, error) {
			rows, err := tx.Query(ctx, sqlEnqueueDue, planPerCall, params.Queue, params.Limit, params.RedeliverAfter)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		},
		func(id uuid.UUID) uuid.UUID { return id },
		send,
		func(tx pgx.Tx, ids []uuid.UUID) (int, error) {
			var marked int
			err := tx.QueryRow(ctx, sqlEnqueueMark, planPerCall, uuidArgs(ids)).Scan(&marked)
			return marked, err
		})
}

// PublishDeadLetters is the dead-letter outbox: it locks the dead letters awaiting
// publication, hands them to publish while the locks are held, and marks the ones
// publish reports, in one transaction; see store.Store.
func (s *Store) PublishDeadLetters(ctx context.Context, params store.PublishParams,
	publish func(ctx context.Context, events []store.DeadLetter) ([]int64, error)) (int, error) {
	if err := params.Validate(); err != nil {
		return 0, fmt.Errorf("publish dead letters: %w", err)
	}
	if publish == nil {
		return 0, fmt.Errorf("publish dead letters: %w: publish is required", store.ErrInvalid)
	}
	return handOut(ctx, s, "publish dead letters", "publish",
		func(tx pgx.Tx) ([]store.DeadLetter, error) {
			rows, err := tx.Query(ctx, sqlDLQPending, planPerCall, params.Queues, params.Limit)
			if err != nil {
				return nil, err
			}
			return collectDeadLetters(rows)
		},
		func(d store.DeadLetter) int64 { return d.ID },
		publish,
		func(tx pgx.Tx, ids []int64) (int, error) {
			tag, err := tx.Exec(ctx, sqlDLQMark, planPerCall, ids)
			return int(tag.RowsAffected()), err
		})
}

// handOut is the transaction of EnqueueDue and PublishDeadLetters: lock rows, hand them
// to hand while the locks are held, mark the ones hand reports (by key), commit. Only
// keys this call locked are marked, each once. hand's error is returned (prefixed with
// op and handName) after the reported rows are marked and committed; a database failure after hand
// is returned together with it. No rows: hand is not called.
func handOut[R any, K comparable](ctx context.Context, s *Store, op, handName string,
	lock func(pgx.Tx) ([]R, error), key func(R) K,
	hand func(context.Context, []R) ([]K, error),
	mark func(pgx.Tx, []K) (int, error)) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, translate(op, err)
	}
	// Ends the transaction on every early return (a no-op after Commit). It must run even
	// when ctx has ended (the usual reason to get here): rolled back on a cancelled
	// context, pgx would drop the connection instead, and the server would keep the row
	// locks, hiding the rows from every other caller, until it noticed.
	defer func() {
		rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rbCtx)
	}()

	locked, err := lock(tx)
	if err != nil {
		return 0, translate(op, err)
	}
	if len(locked) == 0 {
		return 0, nil
	}

	reported, handErr := hand(ctx, locked)
	if handErr != nil {
		handErr = fmt.Errorf("%s: %s: %w", op, handName, handErr)
	}
	failed := func(step string, err error) (int, error) {
		return 0, errors.Join(translate(op+": "+step, err), handErr)
	}
	held := make(map[K]bool, len(locked))
	for _, r := range locked {
		held[key(r)] = true
	}
	toMark := make([]K, 0, len(reported))
	for _, k := range reported {
		if held[k] {
			toMark = append(toMark, k)
			delete(held, k)
		}
	}

	marked := 0
	if len(toMark) > 0 {
		n, err := mark(tx, toMark)
		if err != nil {
			return failed("mark", err)
		}
		marked = n
	}
	if err := tx.Commit(ctx); err != nil {
		return failed("commit", err)
	}
	return marked, handErr
}

var sqlCountSent = query("count_sent.sql")

// CountSent counts the ENQUEUED tasks of each queue that SQS should hold a message for;
// see store.Store. Planned per call, like the enqueuer's statements it runs beside.
func (s *Store) CountSent(ctx context.Context, params store.CountSentParams) (map[string]int, error) {
	if err := params.Validate(); err != nil {
		return nil, fmt.Errorf("count sent: %w", err)
	}
	rows, err := s.pool.Query(ctx, sqlCountSent, planPerCall, params.Queues, params.OlderThan, params.Limit)
	if err != nil {
		return nil, translate("count sent", err)
	}
	out := make(map[string]int, len(params.Queues))
	var queue string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&queue, &n}, func() error {
		out[queue] = n
		return nil
	})
	if err != nil {
		return nil, translate("count sent", err)
	}
	return out, nil
}
