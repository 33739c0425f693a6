package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

// Flows (store.FlowStore). The database moves a flow forward: migration 0019's trigger
// on rota.tasks and its PL/pgSQL functions; this file only creates, reads, cancels and
// replays flows.

var (
	sqlFlowCreate       = query("flow_create.sql")
	sqlFlowByKey        = query("flow_by_key.sql")
	sqlFlowCreateSteps  = query("flow_create_steps.sql")
	sqlFlowGet          = query("flow_get.sql")
	sqlFlowGetSteps     = query("flow_get_steps.sql")
	sqlFlowGetTasks     = query("flow_get_tasks.sql")
	sqlFlowList         = query("flow_list.sql")
	sqlFlowListFiltered = query("flow_list_filtered.sql")
	sqlFlowCancel       = query("flow_cancel.sql")
	sqlFlowReplay       = query("flow_replay.sql")
	sqlFlowStart        = "SELECT rota.flow_start($1)"
)

// maxFlowCreateAttempts bounds CreateFlow's loop, which inserts again when the flow its
// idempotency key named ended FAILED or CANCELED (freeing the key) between the insert
// and the look-up.
const maxFlowCreateAttempts = 5

// CreateFlow inserts a flow, its steps and its first tasks in one transaction; see
// store.FlowStore.
func (s *Store) CreateFlow(ctx context.Context, params store.FlowParams) (store.FlowCreateResult, error) {
	var res store.FlowCreateResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		res, err = createFlow(ctx, tx, params)
		return err
	})
	return res, err
}

// CreateFlowTx is CreateFlow inside the caller's transaction: the flow and its first
// tasks exist only if the caller commits. An error leaves tx aborted, as any failed
// statement does.
func (s *Store) CreateFlowTx(ctx context.Context, tx pgx.Tx, params store.FlowParams) (store.FlowCreateResult, error) {
	return createFlow(ctx, tx, params)
}

func createFlow(ctx context.Context, q querier, p store.FlowParams) (store.FlowCreateResult, error) {
	return insertFlow(ctx, q, p, true)
}

// insertFlow is createFlow; with start false the flow is created but not started (no
// rota.flow_start: every step WAITING, no task), as a schedule's held flow is
// (buffer_one), which rota.schedule_flow_ended (migration 0029) starts later.
func insertFlow(ctx context.Context, q querier, p store.FlowParams, start bool) (store.FlowCreateResult, error) {
	if err := p.Normalize(); err != nil {
		return store.FlowCreateResult{}, fmt.Errorf("create flow: %w", err)
	}
	for range maxFlowCreateAttempts {
		var id uuid.UUID
		err := q.QueryRow(ctx, sqlFlowCreate, p.ID, nullText(p.Name), p.Queue, nullText(p.IdempotencyKey)).Scan(&id)
		if err == nil {
			if err := insertSteps(ctx, q, p); err != nil {
				return store.FlowCreateResult{}, translate("create flow", err)
			}
			if start {
				if _, err := q.Exec(ctx, sqlFlowStart, p.ID); err != nil {
					return store.FlowCreateResult{}, translate("create flow", err)
				}
			}
			f, err := getFlow(ctx, q, p.ID)
			return store.FlowCreateResult{Flow: f}, translateFlow("create flow", p.ID, err)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.FlowCreateResult{}, translate("create flow", err)
		}
		// The key names a live flow: return it. It may have ended FAILED or CANCELED
		// since (the key is then free): insert again.
		err = q.QueryRow(ctx, sqlFlowByKey, p.IdempotencyKey).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return store.FlowCreateResult{}, translate("create flow", err)
		}
		f, err := getFlow(ctx, q, id)
		return store.FlowCreateResult{Flow: f, Existing: true}, translateFlow("create flow", id, err)
	}
	return store.FlowCreateResult{}, fmt.Errorf("create flow: the flow holding idempotency key %q keeps changing; try again", p.IdempotencyKey)
}

// insertSteps writes the steps of a normalized flow, one array element per step.
func insertSteps(ctx context.Context, q querier, p store.FlowParams) error {
	n := len(p.Steps)
	var (
		names    = make([]string, n)
		deps     = make([][]byte, n)
		kinds    = make([]string, n)
		queues   = make([]string, n)
		payloads = make([][]byte, n)
		forEach  = make([]string, n)
		maxes    = make([]int32, n)
		prios    = make([]int16, n)
		timeouts = make([]int32, n)
		groups   = make([]string, n)
	)
	for i, st := range p.Steps {
		d := st.DependsOn
		if d == nil {
			d = []string{}
		}
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		names[i], deps[i], kinds[i], queues[i] = st.Name, b, st.Kind, st.Queue
		payloads[i], forEach[i] = st.Payload, st.ForEach
		maxes[i], prios[i], timeouts[i] = int32(st.MaxAttempts), int16(st.Priority), int32(st.TimeoutSeconds)
		groups[i] = st.GroupKey
	}
	_, err := q.Exec(ctx, sqlFlowCreateSteps, p.ID, names, deps, kinds, queues, payloads, forEach, maxes, prios, timeouts, groups)
	return err
}

// GetFlow reads a flow with its steps; see store.FlowStore.
func (s *Store) GetFlow(ctx context.Context, id uuid.UUID) (*store.Flow, error) {
	var f *store.Flow
	// One snapshot for the three reads: a step and its tasks as of one moment.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		f, err = getFlow(ctx, tx, id)
		return err
	})
	return f, translateFlow("get flow", id, err)
}

// getFlow reads a flow, its steps and its tasks' ids and statuses: three index-bound
// statements, which the caller runs in one snapshot. Errors untranslated.
func getFlow(ctx context.Context, q querier, id uuid.UUID) (*store.Flow, error) {
	f, err := scanFlow(q.QueryRow(ctx, sqlFlowGet, id))
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, sqlFlowGetSteps, id)
	if err != nil {
		return nil, err
	}
	f.Steps, err = pgx.CollectRows(rows, scanFlowStep)
	if err != nil {
		return nil, err
	}
	type stepTasks struct {
		ids      []uuid.UUID
		statuses []store.Status
	}
	tasks := map[string]*stepTasks{}
	rows, err = q.Query(ctx, sqlFlowGetTasks, id)
	if err != nil {
		return nil, err
	}
	var step, status string
	var tid uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&step, &tid, &status}, func() error {
		st := tasks[step]
		if st == nil {
			st = &stepTasks{}
			tasks[step] = st
		}
		st.ids = append(st.ids, tid)
		st.statuses = append(st.statuses, store.Status(status))
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range f.Steps {
		st := &f.Steps[i]
		if t := tasks[st.Name]; t != nil {
			st.TaskIDs, st.TaskStatuses = t.ids, t.statuses
			st.Status = store.StepStatusOf(st.State, st.ForEach != "", t.statuses)
		} else {
			st.TaskIDs, st.TaskStatuses = []uuid.UUID{}, []store.Status{}
			st.Status = store.StepStatusOf(st.State, st.ForEach != "", nil)
		}
	}
	return f, nil
}

// translateFlow is translate with "no row" reported as the flow not found.
func translateFlow(op string, id uuid.UUID, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s %s: %w", op, id, store.ErrFlowNotFound)
	}
	return translate(op, err)
}

func scanFlow(row pgx.Row) (*store.Flow, error) {
	var f store.Flow
	var name, key pgtype.Text
	var status string
	var completed pgtype.Timestamptz
	if err := row.Scan(&f.ID, &name, &f.Queue, &status, &key, &f.CreatedAt, &f.UpdatedAt, &completed); err != nil {
		return nil, err
	}
	f.Name, f.IdempotencyKey, f.Status = name.String, key.String, store.FlowStatus(status)
	f.CreatedAt, f.UpdatedAt, f.CompletedAt = f.CreatedAt.UTC(), f.UpdatedAt.UTC(), timePtr(completed)
	return &f, nil
}

func scanFlowStep(row pgx.CollectableRow) (store.FlowStep, error) {
	var st store.FlowStep
	var forEach, errText, group pgtype.Text
	var state string
	var output []byte
	if err := row.Scan(&st.Name, &st.Kind, &st.Queue, &st.DependsOn, &forEach, &state, &output,
		&errText, (*[]byte)(&st.Payload), &st.MaxAttempts, &st.Priority, &st.TimeoutSeconds, &group); err != nil {
		return st, err
	}
	st.GroupKey = group.String
	if st.DependsOn == nil {
		st.DependsOn = []string{}
	}
	st.ForEach, st.Error, st.State = forEach.String, errText.String, store.StepState(state)
	if output != nil {
		st.Output = json.RawMessage(output)
	}
	return st, nil
}

// ListFlows pages through flows newest first; see store.FlowStore.
func (s *Store) ListFlows(ctx context.Context, params store.FlowListParams) ([]*store.Flow, string, error) {
	limit, err := params.Check()
	if err != nil {
		return nil, "", fmt.Errorf("list flows: %w", err)
	}
	var after pgtype.UUID
	if params.Cursor != "" {
		id, err := store.DecodeTaskCursor(params.Cursor)
		if err != nil {
			return nil, "", fmt.Errorf("list flows: %w", err)
		}
		after = nullUUID(id)
	}
	var rows pgx.Rows
	if len(params.Statuses) == 0 && params.Name == "" {
		rows, err = s.pool.Query(ctx, sqlFlowList, planPerCall, after, limit+1)
	} else {
		statuses := params.Statuses
		if len(statuses) == 0 {
			statuses = store.AllFlowStatuses
		}
		names := make([]string, 0, len(statuses))
		for _, st := range statuses {
			names = append(names, string(st))
		}
		// Planned per call: with the name known (or NULL), the planner picks
		// flows_name_status_id or flows_status_id.
		rows, err = s.pool.Query(ctx, sqlFlowListFiltered, planPerCall, after, limit+1, names, nullText(params.Name))
	}
	if err != nil {
		return nil, "", translate("list flows", err)
	}
	flows, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Flow, error) { return scanFlow(row) })
	if err != nil {
		return nil, "", translate("list flows", err)
	}
	next := ""
	if len(flows) > limit {
		flows = flows[:limit]
		next = store.EncodeTaskCursor(flows[limit-1].ID)
	}
	return flows, next, nil
}

// CancelFlow cancels a RUNNING flow; see store.FlowStore.
func (s *Store) CancelFlow(ctx context.Context, id uuid.UUID) (*store.Flow, error) {
	var after pgtype.Text
	if err := retryDeadlock(func() error { return s.pool.QueryRow(ctx, sqlFlowCancel, id).Scan(&after) }); err != nil {
		return nil, translate("cancel flow", err)
	}
	switch {
	case !after.Valid:
		return nil, fmt.Errorf("cancel flow %s: %w", id, store.ErrFlowNotFound)
	case store.FlowStatus(after.String) != store.FlowCanceled:
		return nil, fmt.Errorf("cancel flow %s: %w: the flow is %s", id, store.ErrIllegalTransition, after.String)
	}
	return s.GetFlow(ctx, id)
}

// ReplayFlow makes a FAILED or CANCELED flow RUNNING again; see store.FlowStore.
func (s *Store) ReplayFlow(ctx context.Context, id uuid.UUID) (*store.Flow, error) {
	var before pgtype.Text
	// Its walk starts steps and may stop the flow again (a for_each over a non-array),
	// which waits for the flow's live tasks: as for a cancel, a deadlock aborts the
	// statement whole and it runs again.
	if err := retryDeadlock(func() error { return s.pool.QueryRow(ctx, sqlFlowReplay, id).Scan(&before) }); err != nil {
		return nil, translate("replay flow", err)
	}
	switch before.String {
	case "":
		return nil, fmt.Errorf("replay flow %s: %w", id, store.ErrFlowNotFound)
	case string(store.FlowFailed), string(store.FlowCanceled):
		return s.GetFlow(ctx, id)
	case string(store.StatusProcessing):
		return nil, fmt.Errorf("replay flow %s: %w: a task of the flow still runs (a cancel request not answered yet); replay once it ended", id, store.ErrConflict)
	}
	return nil, fmt.Errorf("replay flow %s: %w: the flow is %s", id, store.ErrIllegalTransition, before.String)
}

// nullText is s as a query argument, NULL for "".
func nullText(s string) pgtype.Text {
	return pgtype.Text{String: s, Valid: s != ""}
}

// maxDeadlockRetries bounds retryDeadlock: n step tasks of one flow failing at once can
// deadlock n-1 times in a row, each time aborting one of the statements still waiting.
const maxDeadlockRetries = 10

// retryDeadlock runs one statement (fn) again when PostgreSQL aborted it to break a
// deadlock (SQLSTATE 40P01): the statement wrote nothing, and the transaction it waited
// for has committed by then. Flows make this possible, rarely: two step tasks of one flow
// failing at the same moment each lock the flow's live tasks (docs/architecture.md,
// "Flows").
func retryDeadlock(fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		var pgErr *pgconn.PgError
		if attempt == maxDeadlockRetries || !errors.As(err, &pgErr) || pgErr.Code != "40P01" {
			return err
		}
		// A short, random pause: the statements aborted together do not meet again.
		time.Sleep(time.Duration(rand.Int64N(int64(5 * time.Millisecond * time.Duration(attempt)))))
	}
}
