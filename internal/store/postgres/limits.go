package postgres

import (
	"context"
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
)

// claimLimited claims through rota.claim_limited and fills params.Report from its
// report row (the row whose task columns are NULL).
func (s *Store) claimLimited(ctx context.Context, queue string, limit int, params store.ClaimParams) ([]*store.Task, error) {
	var ids []pgtype.UUID // NULL unless the claim is by id
	if params.TaskIDs != nil {
		ids = make([]pgtype.UUID, len(params.TaskIDs))
		for i, id := range params.TaskIDs {
			ids[i] = pgtype.UUID{Bytes: id, Valid: true}
		}
	}
	sql := sqlClaimLimitedEnqueued
	if params.From == store.StatusPending {
		sql = sqlClaimLimitedPending
	}
	rows, err := s.pool.Query(ctx, sql, planPerCall, queue, limit, params.WorkerID, params.LeaseDuration, ids)
	if err != nil {
		return nil, translate("claim tasks", err)
	}
	var report store.ClaimReport
	tasks, plain, err := collectLimitedClaim(rows, &report)
	if err != nil {
		return nil, translate("claim tasks", err)
	}
	if params.Report != nil {
		*params.Report = report
	}
	// The function says whether the queue is flow controlled (settings that limit or
	// pause it, or grouped tasks): if so, its next claims skip the plain statement for
	// a while. A plain queue gets here when the plain statement found nothing due and
	// a task came in before this call (another claimer's race): it stays on the plain
	// statement. Nothing claimed and nothing held back: an empty queue, which may well
	// be plain.
	s.flowControlled.mark(queue, !plain && (len(tasks) > 0 || report.HeldBack != ""))
	return tasks, nil
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

// collectLimitedClaim reads rota.claim_limited's rows: (held, retry_ms, plain, the
// task's columns, trace_context, its flow step's columns); a row without a task is the
// report: held set when a setting held the claim back, plain when the queue is not
// flow controlled at all.
func collectLimitedClaim(rows pgx.Rows, report *store.ClaimReport) (tasks []*store.Task, plain bool, err error) {
	defer rows.Close()
	tasks = []*store.Task{}
	var held pgtype.Text
	var retryMS pgtype.Float8
	var isPlain pgtype.Bool
	r := newClaimedReader(&held, &retryMS, &isPlain)
	for rows.Next() {
		if raw := rows.RawValues(); len(raw) > 3 && raw[3] == nil { // no task: the report
			dst := make([]any, len(rows.FieldDescriptions())) // nil: the task's columns, skipped
			dst[0], dst[1], dst[2] = &held, &retryMS, &isPlain
			if err := rows.Scan(dst...); err != nil {
				return nil, false, err
			}
			plain = isPlain.Bool
			if held.Valid {
				report.Hold(store.HoldBack(held.String), time.Duration(retryMS.Float64*float64(time.Millisecond)))
			}
			continue
		}
		t, err := r.read(rows)
		if err != nil {
			return nil, false, err
		}
		tasks = append(tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	shareStepInputs(tasks)
	return tasks, plain, nil
}
