package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

// Flow control (DESIGN.md section 11, docs/architecture.md "Flow control"). The plain
// claim statements (claim_tasks.sql, claim_tasks_by_id.sql) claim nothing for a queue
// whose settings hold claims back or, walking a queue, whose tasks carry group keys;
// ClaimTasks then calls rota.claim_limited (migration 0022), which obeys the settings
// under the queue's lock and takes the groups in turn.

// rota.claim_limited is one function per status claimed from (migration 0022: the
// status is a literal in its statements, whose plans are made once per session). Its
// last argument (migration 0036) serialises a claim of a concurrency-only queue from its
// start, under the queue's lock, instead of taking the lock last.
const (
	sqlClaimLimitedPending  = `SELECT * FROM rota.claim_limited_pending($1, $2, $3, $4, $5, $6)`
	sqlClaimLimitedEnqueued = `SELECT * FROM rota.claim_limited_enqueued($1, $2, $3, $4, $5, $6)`
)

// sqlStateClaimRaced is rota.claim_limited's error when a claim of a concurrency-only
// queue, counting again under the queue's lock, found that concurrent claims had taken
// the room it counted on without the lock (migration 0036): it wrote nothing, and is run
// again serialised.
const sqlStateClaimRaced = "RT409"

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
	run := func(serialise bool) ([]*store.Task, store.ClaimReport, error) {
		var report store.ClaimReport
		rows, err := s.pool.Query(ctx, sql, planPerCall, queue, limit, params.WorkerID, params.LeaseDuration, ids, serialise)
		if err != nil {
			return nil, report, err
		}
		tasks, err := collectLimitedClaim(rows, &report)
		return tasks, report, err
	}
	tasks, report, err := run(s.flowControlled.contended(queue))
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == sqlStateClaimRaced {
		// Another claim took the room this one counted on: claim again serialised (and,
		// when claims race again soon, serialise them for a while).
		s.flowControlled.raced(queue)
		tasks, report, err = run(true)
	}
	if err != nil {
		return nil, translate("claim tasks", err)
	}
	if params.Report != nil {
		*params.Report = report
	}
	// Tasks the plain statement left, or a setting that held the claim back: the queue
	// is flow controlled, and its next claims skip the plain statement for a while.
	// Nothing claimed and nothing held back: an empty queue, which may well be plain.
	s.flowControlled.mark(queue, len(tasks) > 0 || report.HeldBack != "")
	return tasks, nil
}

// flowControlRecheck is how long the claims of a queue found flow controlled go
// straight to rota.claim_limited. Only the path is remembered, never the settings
// (every claim reads them): a queue whose limits were removed and whose grouped tasks
// are gone claims through the plain statement again at most this long after.
const flowControlRecheck = time.Second

// flowControlledQueues remembers the queues recently found flow controlled, and those
// whose claims race at a concurrency limit (sqlStateClaimRaced).
type flowControlledQueues struct {
	until          sync.Map // queue -> time.Time
	lastRace       sync.Map // queue -> time.Time
	contendedUntil sync.Map // queue -> time.Time
}

// contended reports whether the queue's claims are serialised from their start for a
// while, after racing twice within flowControlRecheck (claims of several workers at one
// limit). A single race is expected now and then: a worker claims for every free slot
// until a claim of the queue is held back again (internal/runtime, roomForClaim), and
// its two claiming loops may then count the same room.
func (f *flowControlledQueues) contended(queue string) bool {
	until, ok := f.contendedUntil.Load(queue)
	return ok && time.Now().Before(until.(time.Time))
}

// raced notes that a claim of the queue raced.
func (f *flowControlledQueues) raced(queue string) {
	now := time.Now()
	if last, ok := f.lastRace.Swap(queue, now); ok && now.Sub(last.(time.Time)) < flowControlRecheck {
		f.contendedUntil.Store(queue, now.Add(flowControlRecheck))
	}
}

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
