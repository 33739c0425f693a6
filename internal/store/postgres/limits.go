package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

// Flow control (DESIGN.md section 11, docs/architecture.md "Flow control"). The plain
// claim statements (claim_tasks.sql, claim_tasks_by_id.sql) claim nothing for a queue
// whose settings hold claims back or, walking a queue, whose tasks carry group keys;
// ClaimTasks then calls rota.claim_limited (migration 0022), which obeys the settings
// under the queue's lock and takes the groups in turn.

// rota.claim_limited is one function per status claimed from (migration 0022: the
// status is a literal in its statements, whose plans are made once per session).
const (
	sqlClaimLimitedPending  = `SELECT * FROM rota.claim_limited_pending($1, $2, $3, $4, $5)`
	sqlClaimLimitedEnqueued = `SELECT * FROM rota.claim_limited_enqueued($1, $2, $3, $4, $5)`
	// The lock rota.claim_limited_* takes first, on the queues it serialises (same
	// predicate, same mode): claimWithOutcomes takes it before its outcomes' rows.
	sqlLockLimitedQueue = `SELECT FROM rota.queues q
WHERE q.name = $1 AND NOT q.paused
  AND (q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL
       OR q.group_concurrency IS NOT NULL OR q.group_rate_limit IS NOT NULL)
FOR NO KEY UPDATE OF q`
)

// claimLimited claims through rota.claim_limited and fills params.Report from its
// report row (the row whose task columns are NULL).
func (s *Store) claimLimited(ctx context.Context, queue string, limit int, params store.ClaimParams) ([]*store.Task, error) {
	sql, args := limitedClaimArgs(queue, limit, params)
	rows, err := s.pool.Query(ctx, sql, append([]any{planPerCall}, args...)...)
	if err != nil {
		return nil, translate("claim tasks", err)
	}
	var report store.ClaimReport
	tasks, err := collectLimitedClaim(rows, &report)
	if err != nil {
		return nil, translate("claim tasks", err)
	}
	return s.limitedClaimDone(queue, params, tasks, report), nil
}

// limitedClaimArgs is the rota.claim_limited call for a claim.
func limitedClaimArgs(queue string, limit int, params store.ClaimParams) (string, []any) {
	var ids []pgtype.UUID // NULL unless the claim is by id
	if params.TaskIDs != nil {
		ids = uuidArgs(params.TaskIDs)
	}
	sql := sqlClaimLimitedEnqueued
	if params.From == store.StatusPending {
		sql = sqlClaimLimitedPending
	}
	return sql, []any{queue, limit, params.WorkerID, params.LeaseDuration, ids}
}

// claimWithOutcomes writes params.Outcomes and claims through rota.claim_limited in one
// transaction and one round trip: the two statements go as one pipeline, which
// PostgreSQL runs as one implicit transaction (pgx's SendBatch), so the claim counts
// the outcomes' tasks as ended, and a failure writes neither. The store goes straight
// to rota.claim_limited, as for a queue found flow controlled: the caller hands in
// outcomes only while a concurrency limit holds its claims back.
func (s *Store) claimWithOutcomes(ctx context.Context, queue string, limit int, params store.ClaimParams) ([]*store.Task, error) {
	b, err := prepareOutcomes(params.Outcomes)
	if err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	sql, args := limitedClaimArgs(queue, limit, params)
	var tasks []*store.Task
	var report store.ClaimReport
	err = retryDeadlock(func() error { // as RecordOutcomes: a deadlock wrote nothing
		batch := &pgx.Batch{}
		if len(b.sent) > 0 {
			// The queue's lock before the outcomes' task rows, the order of a claim by id
			// (queue, then the task it waits for): the other order deadlocked with one
			// whose task was among these outcomes (storetest's racing claimers).
			batch.Queue(sqlLockLimitedQueue, queue)
			batch.Queue(sqlRecordOutcomes, b.args()...)
		}
		batch.Queue(sql, args...)
		br := s.pool.SendBatch(ctx, batch)
		if len(b.sent) > 0 {
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return err
			}
			rows, err := br.Query()
			if err := b.read(rows, err); err != nil {
				_ = br.Close()
				return err
			}
		}
		rows, err := br.Query()
		if err != nil {
			_ = br.Close()
			return err
		}
		report = store.ClaimReport{}
		if tasks, err = collectLimitedClaim(rows, &report); err != nil {
			_ = br.Close()
			return err
		}
		return br.Close() // the commit
	})
	if err != nil {
		return nil, translate("claim tasks", err)
	}
	*params.OutcomeResults = b.finish()
	return s.limitedClaimDone(queue, params, tasks, report), nil
}

// limitedClaimDone reports a claim of rota.claim_limited to params.Report and
// remembers whether its queue is flow controlled.
func (s *Store) limitedClaimDone(queue string, params store.ClaimParams, tasks []*store.Task, report store.ClaimReport) []*store.Task {
	if params.Report != nil {
		*params.Report = report
	}
	// Tasks the plain statement left, or a setting that held the claim back: the queue
	// is flow controlled, and its next claims skip the plain statement for a while.
	// Nothing claimed and nothing held back: an empty queue, which may well be plain.
	s.flowControlled.mark(queue, len(tasks) > 0 || report.HeldBack != "")
	return tasks
}

// flowControlRecheck is how long the claims of a queue found flow controlled go
// straight to rota.claim_limited. Only the path is remembered, never the settings
// (every claim reads them): a queue whose limits were removed and whose grouped tasks
// are gone claims through the plain statement again at most this long after.
const flowControlRecheck = time.Second

// flowControlledQueues remembers the queues recently found flow controlled.
type flowControlledQueues struct{ until sync.Map } // queue -> time.Time

func (f *flowControlledQueues) recently(queue string) bool {
	until, ok := f.until.Load(queue)
	return ok && time.Now().Before(until.(time.Time))
}

func (f *flowControlledQueues) mark(queue string, controlled bool) {
	if controlled {
		f.until.Store(queue, time.Now().Add(flowControlRecheck))
	} else {
		f.until.Delete(queue)
	}
}

// collectLimitedClaim reads rota.claim_limited's rows: (held, retry_ms, the task's
// columns, trace_context, its flow step's columns); a row with held set carries the report and no task.
func collectLimitedClaim(rows pgx.Rows, report *store.ClaimReport) ([]*store.Task, error) {
	defer rows.Close()
	tasks := []*store.Task{}
	for rows.Next() {
		var held pgtype.Text
		var retryMS pgtype.Float8
		if raw := rows.RawValues(); len(raw) > 2 && raw[2] == nil { // no task: the report
			dst := make([]any, len(rows.FieldDescriptions())) // nil: the task's columns, skipped
			dst[0], dst[1] = &held, &retryMS
			if err := rows.Scan(dst...); err != nil {
				return nil, err
			}
			report.Hold(store.HoldBack(held.String), time.Duration(retryMS.Float64*float64(time.Millisecond)))
			continue
		}
		var ts taskScan
		var trace []byte
		var fs flowScan
		dst := append(append([]any{&held, &retryMS}, ts.dest()...), &trace)
		if err := rows.Scan(append(dst, fs.dest()...)...); err != nil {
			return nil, err
		}
		t := ts.result()
		fs.apply(t)
		if err := decodeTraceContext(t, trace); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	shareStepInputs(tasks)
	return tasks, nil
}
