package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
)

var _ store.ScheduleStore = (*Store)(nil)

// The schedule statements (queries/schedule_*.sql). Every next_run_at the adapter writes
// is computed by the database (rota.next_cron_tick), never by this process's clock.
var (
	sqlCreateSchedule        = query("schedule_create.sql")
	sqlGetSchedule           = query("schedule_get.sql")
	sqlListSchedules         = query("schedule_list.sql")
	sqlUpdateSchedule        = query("schedule_update.sql")
	sqlDeleteSchedule        = query("schedule_delete.sql")
	sqlPauseSchedule         = query("schedule_pause.sql")
	sqlResumeSchedule        = query("schedule_resume.sql")
	sqlRescheduleSchedule    = query("schedule_reschedule.sql")
	sqlScheduleTemplate      = query("schedule_template.sql")
	sqlScheduleExists        = query("schedule_exists.sql")
	sqlListScheduleRuns      = query("schedule_runs.sql")
	sqlScheduleSetCurrentRun = query("schedule_set_current_run.sql")
	sqlClaimSchedules        = strings.NewReplacer(
		"{{max_runs}}", strconv.Itoa(store.MaxCatchUpRuns),
		"{{scan_limit}}", strconv.Itoa(store.CatchUpScanLimit)).Replace(query("schedule_claim.sql"))
	sqlClaimSchedulesLock = query("schedule_claim_lock.sql")
)

// scheduleClaimStripes is how many stripes (id % scheduleClaimStripes) the claim walks
// due schedules in (queries/schedule_claim_lock.sql); the expression of the index
// schedules_due_stripes (migration 0026) must be the same.
const scheduleClaimStripes = 64

// scheduleClaimRowsInFlight bounds the schedules that the claims of one database lock
// at once: a claim needs one of scheduleClaimSlots(limit) slots (an advisory lock,
// queries/schedule_claim_lock.sql), and returns nothing while all are held. Claims past
// that bound only queued for the CPU beside the others, and each lasted as long as all
// of them together.
const scheduleClaimRowsInFlight = 200

// scheduleClaimSlots is how many claims of limit schedules work at once: at least one,
// and enough that small batches keep their commits' flushes grouped (200 at batch 1).
func scheduleClaimSlots(limit int) int {
	return max(1, (scheduleClaimRowsInFlight+limit-1)/limit)
}

// claimSchedulesLockSQL is step 1 of the claim for a limit (see
// queries/schedule_claim.sql for why the limit is in the text); sqlClaimSchedules is
// step 2. The text is made once per limit (a scheduler uses one): building a replacer
// per call was a twentieth of BenchmarkClaimSchedules' client CPU.
func claimSchedulesLockSQL(limit int) string {
	if sql, ok := claimLockSQLByLimit.Load(limit); ok {
		return sql.(string)
	}
	sql := strings.NewReplacer("{{limit}}", strconv.Itoa(limit),
		"{{stripes}}", strconv.Itoa(scheduleClaimStripes),
		"{{slots}}", strconv.Itoa(scheduleClaimSlots(limit))).Replace(sqlClaimSchedulesLock)
	claimLockSQLByLimit.Store(limit, sql)
	return sql
}

// claimLockSQLByLimit caches claimSchedulesLockSQL; limits are 1 to store.MaxListLimit.
var claimLockSQLByLimit sync.Map

// SQLSTATE invalid_parameter_value: what rota.next_cron_tick raises, naming the field,
// for a bad cron spec or time zone.
const invalidParameterValue = "22023"

// translateSchedule is translate plus the errors only schedule statements produce: a
// rejected spec or zone is ErrInvalid with the database's message.
func translateSchedule(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == invalidParameterValue {
		return fmt.Errorf("%s: %w: %s", op, store.ErrInvalid, pgErr.Message)
	}
	return translate(op, err)
}

// scheduleScan holds the scan targets of one schedule row (see queries/schedule_get.sql).
type scheduleScan struct {
	sc             store.Schedule
	payload        []byte
	maxAttempts    int32
	catchUp        string
	lastRunAt      pgtype.Timestamptz
	lastEnqueuedAt pgtype.Timestamptz
	overlap        string
	currentRunID   pgtype.UUID
	waitingRunID   pgtype.UUID
	lastSkippedAt  pgtype.Timestamptz
	flowTemplate   []byte
}

func uuidPtr(id pgtype.UUID) *uuid.UUID {
	if !id.Valid {
		return nil
	}
	u := uuid.UUID(id.Bytes)
	return &u
}

func scanSchedule(row pgx.Row) (*store.Schedule, error) {
	var s scheduleScan
	sc := &s.sc
	if err := row.Scan(&sc.Name, &sc.Kind, &sc.CronSpec, &sc.Timezone, &sc.Task.Kind, &sc.Task.Queue,
		&s.payload, &s.maxAttempts, &sc.Enabled, &s.catchUp, &sc.NextRunAt, &s.lastRunAt,
		&s.lastEnqueuedAt, &sc.CreatedAt, &sc.UpdatedAt, &s.overlap, &s.currentRunID, &s.waitingRunID,
		&sc.SkippedTicks, &s.lastSkippedAt, &s.flowTemplate); err != nil {
		return nil, err
	}
	if s.flowTemplate != nil {
		flow, err := store.DecodeFlowTemplate(s.flowTemplate)
		if err != nil {
			return nil, err
		}
		sc.Flow = flow
	}
	sc.Task.Payload = json.RawMessage(s.payload)
	sc.Task.MaxAttempts = int(s.maxAttempts)
	sc.CatchUp = store.CatchUp(s.catchUp)
	sc.NextRunAt = sc.NextRunAt.UTC()
	sc.LastRunAt = timePtr(s.lastRunAt)
	sc.LastEnqueuedAt = timePtr(s.lastEnqueuedAt)
	sc.Overlap = store.Overlap(s.overlap)
	sc.CurrentRunID = uuidPtr(s.currentRunID)
	sc.WaitingRunID = uuidPtr(s.waitingRunID)
	sc.LastSkippedAt = timePtr(s.lastSkippedAt)
	sc.CreatedAt = sc.CreatedAt.UTC()
	sc.UpdatedAt = sc.UpdatedAt.UTC()
	out := s.sc
	return &out, nil
}

// CreateSchedule inserts a schedule; its first run is the first tick after now.
func (s *Store) CreateSchedule(ctx context.Context, params store.ScheduleParams) (*store.Schedule, error) {
	p := params
	if err := p.Normalize(); err != nil {
		return nil, fmt.Errorf("create schedule: %w", err)
	}
	op := fmt.Sprintf("create schedule %q", p.Name)
	var flowTemplate []byte // NULL for kind task
	if p.Flow != nil {
		var err error
		if flowTemplate, err = store.EncodeFlowTemplate(p.Flow); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	sc, err := scanSchedule(s.pool.QueryRow(ctx, sqlCreateSchedule, p.Name, p.Kind, p.Task.Kind,
		p.Task.Queue, []byte(p.Task.Payload), p.Task.MaxAttempts, p.CronSpec, p.Timezone, *p.Enabled,
		string(p.CatchUp), string(p.Overlap), flowTemplate))
	if err != nil {
		return nil, translateSchedule(op, err)
	}
	return sc, nil
}

// GetSchedule returns one schedule, ErrNotFound when there is none.
func (s *Store) GetSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	sc, err := scanSchedule(s.pool.QueryRow(ctx, sqlGetSchedule, name))
	if err != nil {
		return nil, translateSchedule(fmt.Sprintf("get schedule %q", name), err)
	}
	return sc, nil
}

// ListSchedules returns every schedule ordered by name.
func (s *Store) ListSchedules(ctx context.Context) ([]*store.Schedule, error) {
	rows, err := s.pool.Query(ctx, sqlListSchedules)
	if err != nil {
		return nil, translateSchedule("list schedules", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Schedule, error) {
		return scanSchedule(row)
	})
	if err != nil {
		return nil, translateSchedule("list schedules", err)
	}
	return out, nil
}

// UpdateSchedule changes the fields update sets. A new spec or time zone, or enabling a
// disabled schedule, recomputes NextRunAt from now.
func (s *Store) UpdateSchedule(ctx context.Context, name string, update store.ScheduleUpdate) (*store.Schedule, error) {
	op := fmt.Sprintf("update schedule %q", name)
	u := update
	if err := u.Normalize(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var (
		kind, queue  *string
		payload      []byte
		maxAttempts  *int
		catchUp      *string
		overlap      *string
		flowTemplate []byte
	)
	if u.Task != nil || u.Flow != nil || u.Overlap != nil {
		// A schedule's kind never changes, so reading it first cannot race.
		cur, err := s.GetSchedule(ctx, name)
		if err != nil {
			return nil, err
		}
		if err := u.CheckUpdateForKind(cur.Kind); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	if u.Flow != nil {
		var err error
		if flowTemplate, err = store.EncodeFlowTemplate(u.Flow); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		t := store.FlowPlaceholderTask(u.Flow)
		u.Task = &t
	}
	if u.Task != nil {
		kind, queue, maxAttempts = &u.Task.Kind, &u.Task.Queue, &u.Task.MaxAttempts
		payload = u.Task.Payload
	}
	if u.CatchUp != nil {
		c := string(*u.CatchUp)
		catchUp = &c
	}
	if u.Overlap != nil {
		o := string(*u.Overlap)
		overlap = &o
	}
	sc, err := scanSchedule(s.pool.QueryRow(ctx, sqlUpdateSchedule, name, u.CronSpec, u.Timezone,
		kind, queue, payload, maxAttempts, u.Enabled, catchUp, overlap, flowTemplate))
	if err != nil {
		return nil, translateSchedule(op, err)
	}
	return sc, nil
}

// DeleteSchedule removes a schedule; the tasks and flows it created stay, but a buffered
// run still held (a task or a flow) is canceled.
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	op := fmt.Sprintf("delete schedule %q", name)
	var (
		deleted  int64
		heldFlow pgtype.Text // the status of a held flow the delete canceled
	)
	if err := s.pool.QueryRow(ctx, sqlDeleteSchedule, name).Scan(&deleted, &heldFlow); err != nil {
		return translateSchedule(op, err)
	}
	if deleted == 0 {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return nil
}

// PauseSchedule disables a schedule.
func (s *Store) PauseSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	return s.scheduleWrite(ctx, fmt.Sprintf("pause schedule %q", name), sqlPauseSchedule, name)
}

// ResumeSchedule enables a disabled schedule from the first tick after now; an enabled
// schedule is returned unchanged.
func (s *Store) ResumeSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	return s.scheduleWrite(ctx, fmt.Sprintf("resume schedule %q", name), sqlResumeSchedule, name)
}

// RescheduleSchedule sets NextRunAt (a time in the past makes the schedule due now).
func (s *Store) RescheduleSchedule(ctx context.Context, name string, nextRunAt time.Time) (*store.Schedule, error) {
	op := fmt.Sprintf("reschedule schedule %q", name)
	if nextRunAt.IsZero() {
		return nil, fmt.Errorf("%s: %w: next_run_at is required", op, store.ErrInvalid)
	}
	return s.scheduleWrite(ctx, op, sqlRescheduleSchedule, name, nextRunAt)
}

func (s *Store) scheduleWrite(ctx context.Context, op, sql string, args ...any) (*store.Schedule, error) {
	sc, err := scanSchedule(s.pool.QueryRow(ctx, sql, args...))
	if err != nil {
		return nil, translateSchedule(op, err)
	}
	return sc, nil
}

// TriggerSchedule enqueues one run now, keyed by the database's clock, without moving
// NextRunAt. It works on a paused schedule too.
func (s *Store) TriggerSchedule(ctx context.Context, name string) (*store.Task, error) {
	op := fmt.Sprintf("trigger schedule %q", name)
	var (
		p           store.CreateParams
		payload     []byte
		maxAttempts int32
		now         time.Time
	)
	var (
		kind     string
		template []byte
	)
	err := s.pool.QueryRow(ctx, sqlScheduleTemplate, name).Scan(&p.Kind, &p.Queue, &payload, &maxAttempts, &now, &kind, &template)
	if err != nil {
		return nil, translateSchedule(op, err)
	}
	if kind == store.ScheduleKindFlow {
		return nil, fmt.Errorf("%s: %w", op, store.ErrScheduleOfKindFlow)
	}
	p.Payload, p.MaxAttempts = payload, int(maxAttempts)
	p.IdempotencyKey = store.ScheduleTriggerKey(name, now)
	res, err := createTasks(ctx, s.pool, s.inNewTx, []store.CreateParams{p}, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return res[0].Task, nil
}

// TriggerScheduleFlow starts one flow of a kind flow schedule now, keyed by the
// database's clock, without moving NextRunAt. It works on a paused schedule too.
func (s *Store) TriggerScheduleFlow(ctx context.Context, name string) (*store.Flow, error) {
	op := fmt.Sprintf("trigger schedule %q", name)
	var res store.FlowCreateResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			taskKind, queue, kind string
			payload, template     []byte
			maxAttempts           int32
			now                   time.Time
		)
		err := tx.QueryRow(ctx, sqlScheduleTemplate, name).Scan(&taskKind, &queue, &payload, &maxAttempts, &now, &kind, &template)
		if err != nil {
			return translateSchedule(op, err)
		}
		if kind != store.ScheduleKindFlow {
			return fmt.Errorf("%s: %w", op, store.ErrScheduleOfKindTask)
		}
		tmpl, err := store.DecodeFlowTemplate(template)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		tmpl.IdempotencyKey = store.ScheduleTriggerKey(name, now)
		res, err = createFlow(ctx, tx, *tmpl)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res.Flow, nil
}

// ClaimDueSchedules claims up to Limit due schedules in one transaction of two
// statements. Step 1 (queries/schedule_claim_lock.sql) locks them (stripe by stripe, SKIP
// LOCKED); step 2 (queries/schedule_claim.sql) plans their ticks in the database
// (catch-up, then overlap), advances next_run_at, cancels the runs cancel_other replaces
// and inserts the new tasks; a tick whose run exists (its idempotency key is held) is not
// inserted again. For kind flow schedules step 2 returns the planned ticks, and the same
// transaction starts their flows (startScheduledFlows): a flow exists if and only if its
// schedule's advance committed, and the row lock keeps every other claimer off the
// schedule until then.
//
// Two round trips when no flow is due: BEGIN goes with step 1, and COMMIT with step 2
// (or alone, when step 1 locked nothing).
func (s *Store) ClaimDueSchedules(ctx context.Context, params store.ClaimSchedulesParams) ([]store.ScheduleClaim, error) {
	const op = "claim due schedules"
	if params.Limit < 1 || params.Limit > store.MaxListLimit {
		return nil, fmt.Errorf("%s: %w: limit must be between 1 and %d, got %d", op, store.ErrInvalid, store.MaxListLimit, params.Limit)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, translateSchedule(op, err)
	}
	// A connection released inside a transaction (an error, a canceled ctx) is closed by
	// the pool, never reused.
	defer conn.Release()
	claims, wakeAfter, err := claimSchedulesTx(ctx, conn, params.Limit)
	if err != nil {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			rollbackCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, _ = conn.Exec(rollbackCtx, "ROLLBACK")
			cancel()
		}
		return nil, translateSchedule(op, err)
	}
	if wakeAfter {
		s.notifyClaimedRuns(claims)
	}
	return claims, nil
}

// notifyClaimedRuns wakes the workers of the queues that got a due run, after the claim
// committed, through the store's wake sender as CreateTasks does (notifyCreated): the
// claim's transaction set rota.notify_after_commit, so the insert trigger stayed silent.
// A notifying transaction holds PostgreSQL's one notify lock (for the whole cluster)
// through its commit's WAL flush, so concurrent claims, each inserting runs, committed
// one after another behind it. A held run (buffer_one) is not due and wakes nobody.
func (s *Store) notifyClaimedRuns(claims []store.ScheduleClaim) {
	s.wakeForDue(func(yield func(*store.Task) bool) {
		for _, c := range claims {
			for _, t := range c.Runs {
				if !yield(t) {
					return
				}
			}
		}
	})
}

// claimSchedulesTx runs the claim's transaction on conn (errors untranslated; the caller
// rolls back). wakeAfter: the insert trigger did not wake the runs' workers, the caller
// does once the claim has committed (notifyClaimedRuns).
func claimSchedulesTx(ctx context.Context, conn *pgxpool.Conn, limit int) (claims []store.ScheduleClaim, wakeAfter bool, err error) {
	var (
		locked   int
		anyFlows bool
		ids      string
	)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(claimSchedulesLockSQL(limit)).QueryRow(func(row pgx.Row) error { return row.Scan(&ids, &locked, &anyFlows) })
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, err
	}
	if locked == 0 {
		_, err := conn.Exec(ctx, "COMMIT")
		return nil, false, err
	}
	if anyFlows {
		// The flows' tasks are woken by the insert trigger, at this commit.
		claims, flows, err := claimSchedules(ctx, conn)
		if err != nil {
			return nil, false, err
		}
		if err := startScheduledFlows(ctx, conn, claims, flows); err != nil {
			return nil, false, err
		}
		_, err = conn.Exec(ctx, "COMMIT")
		return claims, false, err
	}
	b = &pgx.Batch{}
	b.Queue(sqlNotifyAfterCommit)
	b.Queue(sqlClaimSchedules).Query(func(rows pgx.Rows) error {
		var err error
		claims, _, err = readScheduleClaims(rows)
		return err
	})
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, err
	}
	return claims, true, nil
}

// sqlNotifyAfterCommit silences the insert trigger's NOTIFY for the rest of the
// transaction (rota.notify_after_commit, migration 0027): the caller wakes the workers
// itself after the commit.
const sqlNotifyAfterCommit = `SELECT set_config('rota.notify_after_commit', 'on', true)`

// scheduledFlows are the ticks of a kind flow schedule a claim planned, with its
// template (claim is the index of its ScheduleClaim). The ticks from the heldFrom-th
// (1-based) on are held (buffer_one); cancel is the running flow cancel_other replaces,
// which the claim has locked (rota.schedule_lock_flow).
type scheduledFlows struct {
	claim    int
	ticks    []time.Time
	template []byte
	heldFrom int
	cancel   *uuid.UUID
}

// claimSchedules runs step 2 of the claim and reads its rows (errors untranslated).
func claimSchedules(ctx context.Context, q querier) ([]store.ScheduleClaim, []scheduledFlows, error) {
	rows, err := q.Query(ctx, sqlClaimSchedules)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	return readScheduleClaims(rows)
}

// readScheduleClaims reads the rows of step 2 of the claim: one per schedule and run,
// by schedule name.
func readScheduleClaims(rows pgx.Rows) ([]store.ScheduleClaim, []scheduledFlows, error) {
	var (
		claims []store.ScheduleClaim
		flows  []scheduledFlows
	)
	for rows.Next() {
		var (
			name      string
			skipped   int32
			next      time.Time
			hasRun    bool
			flowTicks []time.Time
			template  []byte
			heldFrom  int32
			cancel    pgtype.UUID
		)
		task, err := scanTask(rows, &name, &skipped, &next, &hasRun, &flowTicks, &template, &heldFrom, &cancel)
		if err != nil {
			return nil, nil, err
		}
		if n := len(claims); n == 0 || claims[n-1].Name != name {
			claims = append(claims, store.ScheduleClaim{Name: name, SkippedTicks: int(skipped), NextRunAt: next.UTC()})
			if len(flowTicks) > 0 {
				flows = append(flows, scheduledFlows{claim: len(claims) - 1, ticks: flowTicks, template: template,
					heldFrom: int(heldFrom), cancel: uuidPtr(cancel)})
			}
		}
		if hasRun {
			c := &claims[len(claims)-1]
			c.Runs = append(c.Runs, task)
		}
	}
	return claims, flows, rows.Err()
}

// startScheduledFlows starts one flow per planned tick of the kind flow schedules, keyed
// schedule:<name>:<unix of the tick> (a tick whose flow exists starts nothing), names the
// newest flow started the schedule's current run (overlap reads it) and a held one
// (buffer_one: created, not started) its waiting run, and cancels the flow cancel_other
// replaced (rota.flow_cancel, as CancelFlow; the claim holds its live tasks and row, so
// nothing is waited for). A flow is canceled only when a new one became current, as the
// task trigger schedules_cancel_replaced does for tasks.
func startScheduledFlows(ctx context.Context, tx querier, claims []store.ScheduleClaim, flows []scheduledFlows) error {
	for _, sf := range flows {
		c := &claims[sf.claim]
		tmpl, err := store.DecodeFlowTemplate(sf.template)
		if err != nil {
			return fmt.Errorf("schedule %q: %w", c.Name, err)
		}
		var current, waiting uuid.UUID // uuid.Nil: none started
		for i, tick := range sf.ticks {
			// buffer_one holds the tick after one that runs (heldFrom 2); when that one
			// started nothing (its flow existed: a restore), nothing would ever release
			// the held flow, so it runs instead.
			held := i+1 >= sf.heldFrom && !(sf.heldFrom >= 2 && current == uuid.Nil)
			p := *store.CloneFlowParams(tmpl)
			p.IdempotencyKey = store.ScheduleRunKey(c.Name, tick)
			res, err := insertFlow(ctx, tx, p, !held)
			if err != nil {
				return fmt.Errorf("schedule %q: %w", c.Name, err)
			}
			if res.Existing {
				continue
			}
			c.Flows = append(c.Flows, res.Flow)
			if held {
				waiting = res.Flow.ID
			} else {
				current = res.Flow.ID
			}
		}
		if current == uuid.Nil && waiting == uuid.Nil {
			continue
		}
		if _, err := tx.Exec(ctx, sqlScheduleSetCurrentRun, c.Name, nullUUID(current), nullUUID(waiting)); err != nil {
			return err
		}
		if sf.cancel != nil && current != uuid.Nil {
			if _, err := tx.Exec(ctx, sqlFlowCancel, *sf.cancel); err != nil {
				return fmt.Errorf("schedule %q: cancel flow %s: %w", c.Name, *sf.cancel, err)
			}
		}
	}
	return nil
}

// ListScheduleRuns pages through the tasks a schedule created (claims and triggers),
// newest first. ErrNotFound when no schedule has the name.
func (s *Store) ListScheduleRuns(ctx context.Context, params store.ScheduleRunsParams) ([]*store.Task, string, error) {
	op := fmt.Sprintf("list runs of schedule %q", params.Name)
	if err := store.ValidateScheduleName(params.Name); err != nil {
		return nil, "", fmt.Errorf("%s: %w", op, err)
	}
	limit, err := store.NormalizeLimit(params.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", op, err)
	}
	var after pgtype.UUID
	if params.Cursor != "" {
		id, err := store.DecodeTaskCursor(params.Cursor)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", op, err)
		}
		after = nullUUID(id)
	}
	tasks, err := collectTasks(s.pool.Query(ctx, sqlListScheduleRuns, params.Name, after, limit+1))
	if err != nil {
		return nil, "", translateSchedule(op, err)
	}
	if len(tasks) == 0 && params.Cursor == "" {
		var exists bool
		if err := s.pool.QueryRow(ctx, sqlScheduleExists, params.Name).Scan(&exists); err != nil {
			return nil, "", translateSchedule(op, err)
		}
		if !exists {
			return nil, "", fmt.Errorf("%s: %w", op, store.ErrNotFound)
		}
	}
	var next string
	if len(tasks) > limit {
		tasks = tasks[:limit]
		next = store.EncodeTaskCursor(tasks[limit-1].ID)
	}
	return tasks, next, nil
}
