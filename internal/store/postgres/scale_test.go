package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// The scale workload: what a busy Rota database looks like in its steady state with the
// default retention (succeeded and canceled tasks kept 7 days, dead and failed ones 30),
// loaded straight into the tables with INSERT ... SELECT generate_series. Triggers are
// bypassed for the load only (session_replication_role = replica): they would only
// NOTIFY and check transitions that a fresh INSERT does not make, and dead letters and
// attempt rows are inserted explicitly below.
//
// Shares of the table: 89% SUCCEEDED (over the last 7.05 days, so a little is past
// retention), 3% DEAD and 1% FAILED (over 30.05 days: the retained ones from day 7 to
// 30 match the succeeded cut-off), 1% CANCELED, 5% PENDING (half due, half delayed up
// to a day), 1% ENQUEUED (sent lately, and sent long ago), one task in 5,000 PROCESSING
// (a tenth of them with expired leases). 50 queues with a skewed load (q0 busiest),
// 20 kinds; noop tasks never die, so status=DEAD&queue=q2&kind=noop matches nothing.
// One attempt row per attempt of a finished task, one dead letter per DEAD or FAILED.
// Queues q3 and q6 spread their tasks over 1,000 groups (group_key tenant-0 to -999).
const scaleLoadTasks = `
INSERT INTO rota.tasks (id, queue, kind, payload, status, priority, scheduled_for, attempt_count,
    max_attempts, idempotency_key, worker_id, lease_token, lease_expires_at, enqueued_at,
    processing_started_at, completed_at, last_error, created_at, updated_at, group_key)
SELECT (lpad(to_hex((extract(epoch FROM created) * 1000)::bigint), 12, '0') || '7'
        || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
       queue,
       CASE WHEN status IN ('DEAD', 'FAILED') THEN 'k' || (4 + (g % 16))
            WHEN g % 10 < 3 THEN 'noop' ELSE 'k' || (1 + (g % 19)) END,
       jsonb_build_object('n', g, 'note', 'scale'),
       status,
       CASE WHEN g % 10 = 0 THEN 5 ELSE 0 END,
       CASE WHEN status = 'PENDING' AND g % 2 = 0 THEN now() + random() * interval '1 day'
            ELSE created END,
       CASE WHEN status IN ('DEAD', 'FAILED') THEN 3 WHEN status IN ('PENDING', 'ENQUEUED') THEN 0
            WHEN g % 10 = 1 THEN 2 ELSE 1 END,
       3,
       CASE WHEN g % 1000 = 7 THEN 'schedule:scale-' || (g / 1000 % 10) || ':' || g
            WHEN g % 10 = 7 THEN 'scale-' || g END,
       CASE WHEN status = 'PROCESSING' THEN 'scale-worker' END,
       CASE WHEN status = 'PROCESSING' THEN gen_random_uuid() END,
       CASE WHEN status = 'PROCESSING' THEN now() + CASE WHEN g % 10 = 0 THEN interval '-1 minute' ELSE interval '1 minute' END END,
       CASE WHEN status = 'ENQUEUED' THEN CASE g % 2 WHEN 0 THEN now() - interval '10 seconds' ELSE now() - interval '1 hour' END END,
       CASE WHEN status = 'PROCESSING' THEN now() - interval '10 seconds' END,
       CASE WHEN status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED') THEN created + interval '2 seconds' END,
       CASE WHEN status IN ('DEAD', 'FAILED') THEN 'scale: handler failed' END,
       created, created,
       CASE WHEN queue IN ('q3', 'q6') THEN 'tenant-' || (g % 1000) END
FROM (
    SELECT g, u, md5(g::text || random()::text) AS h,
           'q' || floor(50 * u2 * u2)::int AS queue,
           s.status,
           CASE WHEN s.status IN ('SUCCEEDED', 'CANCELED') THEN now() - random() * interval '7.05 days'
                WHEN s.status IN ('DEAD', 'FAILED') THEN now() - random() * interval '30.05 days'
                ELSE now() - random() * interval '1 hour' END AS created
    FROM (SELECT g, random() AS u, random() AS u2 FROM generate_series($1::bigint, $2::bigint) AS g) r,
         LATERAL (SELECT CASE WHEN g % 5000 = 0 THEN 'PROCESSING'
                              WHEN u < 0.05 THEN 'PENDING'
                              WHEN u < 0.06 THEN 'ENQUEUED'
                              WHEN u < 0.09 THEN 'DEAD'
                              WHEN u < 0.10 THEN 'FAILED'
                              WHEN u < 0.11 THEN 'CANCELED'
                              ELSE 'SUCCEEDED' END AS status) s
) t`

// scaleLoadFlows adds $1 flows of the shape a -> b (for_each over a's two elements) -> c,
// with their steps and tasks: 80% SUCCEEDED within the last 7 days, 10% FAILED within
// 30 days (b's first element failed, c never ran), 10% RUNNING (b's elements pending).
// The failed flows' succeeded tasks lie past the 7-day cut-off: plain retention must not
// walk them (they go with their flow).
const scaleLoadFlows = `
WITH f AS (
    SELECT g, md5(g::text || random()::text) AS h,
           CASE g % 10 WHEN 0 THEN 'RUNNING' WHEN 1 THEN 'FAILED' ELSE 'SUCCEEDED' END AS status,
           CASE g % 10 WHEN 0 THEN now() - random() * interval '1 hour'
                       WHEN 1 THEN now() - random() * interval '30.05 days'
                       ELSE now() - random() * interval '7.05 days' END AS created
    FROM generate_series(1, $1::bigint) AS g
), flows AS (
    INSERT INTO rota.flows (id, name, queue, status, steps_left, created_at, updated_at, completed_at)
    SELECT (lpad(to_hex((extract(epoch FROM created) * 1000)::bigint), 12, '0') || '7'
            || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
           'scale-flow-' || (g % 10), 'q' || (g % 50), status,
           CASE status WHEN 'SUCCEEDED' THEN 0 ELSE 2 END, created, created,
           CASE WHEN status <> 'RUNNING' THEN created + interval '5 seconds' END
    FROM f
    RETURNING id, queue, status, created_at
), steps AS (
    INSERT INTO rota.flow_steps (flow_id, name, position, kind, queue, payload, depends_on, for_each,
                                 max_attempts, priority, timeout_seconds, state, deps_left, tasks_left, task_count, inputs, output)
    SELECT fl.id, s.name, s.pos, 'k_' || s.name, fl.queue, '{}', s.deps, s.fe, 3, 0, 0,
           CASE WHEN fl.status = 'SUCCEEDED' OR s.name = 'a' THEN 'SUCCEEDED'
                WHEN s.name = 'b' THEN 'STARTED'
                WHEN fl.status = 'FAILED' THEN 'CANCELED' ELSE 'WAITING' END,
           CASE WHEN s.name = 'c' AND fl.status <> 'SUCCEEDED' THEN 1 ELSE 0 END,
           CASE WHEN s.name = 'b' AND fl.status = 'RUNNING' THEN 2 WHEN s.name = 'b' AND fl.status = 'FAILED' THEN 1
                WHEN s.name = 'c' AND fl.status <> 'SUCCEEDED' THEN NULL ELSE 0 END,
           CASE WHEN s.name = 'b' THEN 2 WHEN s.name = 'c' AND fl.status <> 'SUCCEEDED' THEN NULL ELSE 1 END,
           CASE WHEN s.name = 'a' THEN '{}'::jsonb WHEN s.name = 'b' THEN '{"a": [1, 2]}'::jsonb
                WHEN fl.status = 'SUCCEEDED' THEN '{"b": ["out", "out"]}'::jsonb END,
           CASE WHEN s.name = 'a' THEN '[1, 2]'::jsonb WHEN fl.status = 'SUCCEEDED' THEN '"done"'::jsonb END
    FROM flows fl,
         (VALUES ('a', 0, '{}'::text[], NULL), ('b', 1, '{a}', 'a'), ('c', 2, '{b}', NULL)) AS s (name, pos, deps, fe)
)
INSERT INTO rota.tasks (id, queue, kind, payload, status, scheduled_for, attempt_count, max_attempts,
                        completed_at, last_error, created_at, updated_at,
                        flow_id, flow_step, flow_index, flow_item, output)
SELECT rota.new_task_id(t.n), fl.queue, 'k_' || t.step, '{}', t.status, fl.created_at,
       CASE WHEN t.status = 'PENDING' THEN 0 ELSE 1 END, 3,
       CASE WHEN t.status <> 'PENDING' THEN fl.created_at + interval '1 second' END,
       CASE WHEN t.status = 'FAILED' THEN 'scale: step failed' END,
       fl.created_at, fl.created_at,
       fl.id, t.step, t.idx, t.item, CASE WHEN t.status = 'SUCCEEDED' THEN '"out"'::jsonb END
FROM flows fl
CROSS JOIN LATERAL (VALUES
    (1, 'a', 0, NULL::jsonb, 'SUCCEEDED'),
    (2, 'b', 0, '1'::jsonb,
        CASE fl.status WHEN 'RUNNING' THEN 'PENDING' WHEN 'FAILED' THEN 'FAILED' ELSE 'SUCCEEDED' END),
    (3, 'b', 1, '2'::jsonb,
        CASE fl.status WHEN 'RUNNING' THEN 'PENDING' ELSE 'SUCCEEDED' END),
    (4, 'c', 0, NULL::jsonb, 'SUCCEEDED')
) AS t (n, step, idx, item, status)
WHERE t.step <> 'c' OR fl.status = 'SUCCEEDED'`

const scaleLoadAttempts = `
INSERT INTO rota.task_attempts (task_id, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT t.id, a, 'scale-worker', t.completed_at - interval '1 second', t.completed_at,
       CASE WHEN a < t.attempt_count THEN 'RETRIED' WHEN t.status = 'CANCELED' THEN 'CANCELED' ELSE t.status END,
       CASE WHEN a < t.attempt_count OR t.status IN ('DEAD', 'FAILED') THEN 'scale: handler failed' END
FROM rota.tasks t, generate_series(1, t.attempt_count) AS a
WHERE t.status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED')`

const scaleLoadDeadLetters = `
INSERT INTO rota.dead_letters (task_id, kind, queue, worker_id, attempt_count, max_attempts, error, reason, created_at)
SELECT id, kind, queue, 'scale-worker', attempt_count, max_attempts, last_error, status, completed_at
FROM rota.tasks
WHERE status IN ('DEAD', 'FAILED')
ORDER BY completed_at`

// loadScale fills an empty, migrated database with n tasks (see scaleLoadTasks) in
// chunks, then vacuums and analyzes, as autovacuum would have done on a live database.
func loadScale(t testing.TB, pool *pgxpool.Pool, n int64, logf func(string, ...any)) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	run := func(what, sql string, args ...any) {
		start := time.Now()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("load %s: %v", what, err)
		}
		logf("load: %s in %s", what, time.Since(start).Round(time.Millisecond))
	}
	run("replica role", `SET session_replication_role = replica`)
	const chunk = 1_000_000
	for from := int64(1); from <= n; from += chunk {
		run(fmt.Sprintf("tasks %d-%d", from, min(from+chunk-1, n)), scaleLoadTasks, from, min(from+chunk-1, n))
	}
	run("flows", scaleLoadFlows, max(n/100, 10))
	run("attempts", scaleLoadAttempts)
	run("dead letters", scaleLoadDeadLetters)
	run("origin role", `SET session_replication_role = origin`)
	// A few schedules, due now, so the schedule claim has work; of every overlap policy,
	// with a current run (running for skip and buffer_one, finished for cancel_other) so
	// that the claim looks runs up.
	for i := range 10 {
		overlap := []string{"allow", "skip", "buffer_one", "cancel_other"}[i%4]
		run("schedule", `INSERT INTO rota.schedules (name, cron_spec, task_kind, task_queue, next_run_at, overlap, current_run_id)
			VALUES ($1, '* * * * *', 'noop', 'q1', now() - interval '30 seconds', $2::text,
			        (SELECT id FROM rota.tasks WHERE status = CASE WHEN $2::text = 'cancel_other' THEN 'SUCCEEDED' ELSE 'PROCESSING' END
			         LIMIT 1))`, fmt.Sprintf("scale-%d", i), overlap)
	}
	// Schedules of kind flow (migrations 0021, 0029), each with a RUNNING flow of its own
	// as its current run: allow starts a flow in the claim's transaction; skip finds its
	// current flow RUNNING (the claim's rota.flows probe); buffer_one creates a held flow;
	// cancel_other locks its running flow's live tasks and row and cancels it.
	for i, overlap := range []string{"allow", "skip", "buffer_one", "cancel_other"} {
		run("flow schedule", `INSERT INTO rota.schedules (name, kind, cron_spec, task_kind, task_queue, next_run_at, overlap,
			                            flow_template, current_run_id)
			VALUES ($1, 'flow', '* * * * *', 'flow', 'q1', now() - interval '30 seconds', $2::text,
			        '{"queue": "q1", "steps": [{"name": "a", "kind": "noop", "queue": "q1", "payload": {}, "max_attempts": 3}]}',
			        (SELECT id FROM rota.flows WHERE status = 'RUNNING' ORDER BY id OFFSET $3 LIMIT 1))`,
			fmt.Sprintf("scale-flow-%d", i), overlap, i)
	}
	run("vacuum analyze tasks", `VACUUM ANALYZE rota.tasks`)
	run("vacuum analyze attempts", `VACUUM ANALYZE rota.task_attempts`)
	run("vacuum analyze dead letters", `VACUUM ANALYZE rota.dead_letters`)
	run("vacuum analyze flows", `VACUUM ANALYZE rota.flows, rota.flow_steps`)
}

// explained is what auto_explain reported for one statement Rota ran.
type explained struct {
	Name     string
	Duration time.Duration // wall clock seen by the caller, all its statements
	Plans    []string      // every statement's EXPLAIN (ANALYZE, BUFFERS) output
}

var (
	autoExplainDuration = regexp.MustCompile(`duration: ([0-9.]+) ms`)
	scanNode            = regexp.MustCompile(`(Seq Scan|Parallel Seq Scan|Index Only Scan(?: Backward)?|Index Scan(?: Backward)?|Bitmap Index Scan) (?:using (\S+) )?on (\S+)`)
	sharedBuffers       = regexp.MustCompile(`Buffers: shared((?: \w+=\d+)+)`)
	rowsRemoved         = regexp.MustCompile(`Rows Removed by (?:Filter|Index Recheck): (\d+)`)
)

// MaxRowsRemoved is the most rows one plan node read and threw away: a walk that is not
// a sequential scan (an index read in id order, filtered) shows here.
func (e explained) MaxRowsRemoved() int64 {
	var most int64
	for _, p := range e.Plans {
		for _, m := range rowsRemoved.FindAllStringSubmatch(p, -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			most = max(most, n)
		}
	}
	return most
}

// SeqScansTasks reports whether any plan reads rota.tasks sequentially.
func (e explained) SeqScansTasks() bool {
	for _, p := range e.Plans {
		for _, m := range scanNode.FindAllStringSubmatch(p, -1) {
			if strings.Contains(m[1], "Seq Scan") && (m[3] == "tasks" || m[3] == "rota.tasks") {
				return true
			}
		}
	}
	return false
}

// Shape lists the scans of the plans: "Index Scan using tasks_claim_pending", ...
func (e explained) Shape() string {
	var nodes []string
	for _, p := range e.Plans {
		for _, m := range scanNode.FindAllStringSubmatch(p, -1) {
			n := m[1] + " " + m[3]
			if m[2] != "" {
				n = m[1] + " " + m[2]
			}
			if !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
	}
	return strings.Join(nodes, ", ")
}

// Buffers is the shared buffers (hit + read) the statements' top plan nodes touched.
func (e explained) Buffers() int64 {
	var total int64
	for _, p := range e.Plans {
		m := sharedBuffers.FindStringSubmatch(p)
		if m == nil {
			continue
		}
		for _, kv := range strings.Fields(m[1]) {
			k, v, _ := strings.Cut(kv, "=")
			if k == "hit" || k == "read" {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}

// ServerTime is the sum of the statements' execution times as auto_explain measured them.
func (e explained) ServerTime() time.Duration {
	var total time.Duration
	for _, p := range e.Plans {
		if m := autoExplainDuration.FindStringSubmatch(p); m != nil {
			ms, _ := strconv.ParseFloat(m[1], 64)
			total += time.Duration(ms * float64(time.Millisecond))
		}
	}
	return total
}

// explainingStore opens a one-connection store on url whose every statement is run with
// auto_explain (ANALYZE, BUFFERS) and its plan collected: the real statements with the
// real parameters, exactly as Rota sends them. LOAD 'auto_explain' needs a superuser
// (scripts/pg.sh connects as postgres) and PostgreSQL's contrib modules (in Debian's
// postgresql package).
func explainingStore(t testing.TB, url string) (*postgres.Store, *pgxpool.Pool, func() []string) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	var mu sync.Mutex
	var plans []string
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.HasPrefix(n.Message, "duration:") {
			mu.Lock()
			plans = append(plans, n.Message)
			mu.Unlock()
		}
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `LOAD 'auto_explain';
			SET auto_explain.log_min_duration = 0;
			SET auto_explain.log_analyze = on;
			SET auto_explain.log_buffers = on;
			SET auto_explain.log_timing = on;
			SET auto_explain.log_nested_statements = on;
			SET client_min_messages = log`)
		return err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := plans
		plans = nil
		return out
	}
	return postgres.New(pool), pool, take
}

// scaleStatement is one statement Rota runs on a schedule or per request.
type scaleStatement struct {
	Name string
	// Linear: it counts what it reports (Stats counts every task), so it is allowed to
	// read in proportion to the table, through an index; callers share one cached result.
	Linear bool
	Run    func(ctx context.Context, st *postgres.Store, w *scaleWork) error
}

// scaleWork carries ids between statements: the claim's tasks feed the heartbeat and
// the outcome.
type scaleWork struct {
	claimed         []*store.Task
	enqueued        []uuid.UUID
	enqueuedLimited []uuid.UUID // of q5, which has limits
	flow            *store.Flow // the flow "create flow" made
}

// limitedClaim sets queue's settings (an empty patch: as they are) and claims from it:
// rota.claim_limited's statements (auto_explain logs nested statements too). With ids,
// a claim by id from ENQUEUED.
func limitedClaim(ctx context.Context, st *postgres.Store, w *scaleWork, queue string, patch store.QueuePatch, ids []uuid.UUID) error {
	if _, err := st.UpdateQueueSettings(ctx, queue, patch); err != nil {
		return err
	}
	p := store.ClaimParams{Queue: queue, From: store.StatusPending, WorkerID: "bench", Limit: 50, LeaseDuration: time.Minute,
		Report: &store.ClaimReport{}}
	if ids != nil {
		p.From, p.TaskIDs, p.Limit = store.StatusEnqueued, ids, len(ids)
	}
	tasks, err := st.ClaimTasks(ctx, p)
	if err == nil && len(tasks) == 0 {
		err = fmt.Errorf("claimed nothing from %s (report %+v)", queue, *p.Report)
	}
	w.claimed = append(w.claimed, tasks...)
	return err
}

func listCase(statuses []store.Status, queue, kind string) scaleStatement {
	var parts []string
	if len(statuses) > 0 {
		var s []string
		for _, st := range statuses {
			s = append(s, string(st))
		}
		parts = append(parts, "status="+strings.Join(s, ","))
	}
	if queue != "" {
		parts = append(parts, "queue="+queue)
	}
	if kind != "" {
		parts = append(parts, "kind="+kind)
	}
	name := "list tasks"
	if len(parts) > 0 {
		name += " " + strings.Join(parts, "&")
	}
	return scaleStatement{Name: name, Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
		_, _, err := st.ListTasks(ctx, store.ListParams{Statuses: statuses, Queue: queue, Kind: kind, Limit: 50})
		return err
	}}
}

func deadLetterCase(queue, kind string, reason store.Status) scaleStatement {
	name := fmt.Sprintf("dead letters queue=%q kind=%q reason=%q", queue, kind, reason)
	return scaleStatement{Name: name, Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
		_, _, err := st.ListDeadLetters(ctx, store.DeadLetterParams{Queue: queue, Kind: kind, Reason: reason, Limit: 50})
		return err
	}}
}

// scaleStatements is every statement Rota issues on a schedule or per request, with the
// parameters the processes use (batch sizes of internal/maintenance, the dashboard's
// throughput window and stuck list).
func scaleStatements() []scaleStatement {
	pending, dead := []store.Status{store.StatusPending}, []store.Status{store.StatusDead}
	statements := []scaleStatement{
		{Name: "claim (poll, 50)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "q1", From: store.StatusPending, WorkerID: "bench", Limit: 50, LeaseDuration: time.Minute})
			w.claimed = append(w.claimed, tasks...)
			return err
		}},
		{Name: "enqueue_due (SQS, 50)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			_, err := st.EnqueueDue(ctx, store.EnqueueParams{Queue: "q2", Limit: 50, RedeliverAfter: 5 * time.Minute},
				func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
					w.enqueued = append(w.enqueued, ids...)
					return ids, nil
				})
			return err
		}},
		{Name: "claim by id (SQS, 10)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			ids := w.enqueued[:min(10, len(w.enqueued))]
			tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "q2", From: store.StatusEnqueued, TaskIDs: ids, WorkerID: "bench", Limit: 10, LeaseDuration: time.Minute})
			w.claimed = append(w.claimed, tasks...)
			return err
		}},
		{Name: "claim (poll, 50, limits: concurrency, rate)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			return limitedClaim(ctx, st, w, "q4", store.QueuePatch{Concurrency: &store.Change[int]{To: new(1000)},
				Rate: &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: 100_000, PerSeconds: 60}}}, nil)
		}},
		{Name: "claim (poll, 50, fair over 1,000 groups, group limits)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			return limitedClaim(ctx, st, w, "q3", store.QueuePatch{Concurrency: &store.Change[int]{To: new(1000)},
				GroupConcurrency: &store.Change[int]{To: new(10)},
				GroupRate:        &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: 1000, PerSeconds: 60}}}, nil)
		}},
		{Name: "claim (poll, 50, fair over 1,000 groups, no settings)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "q6", From: store.StatusPending, WorkerID: "bench", Limit: 50, LeaseDuration: time.Minute})
			w.claimed = append(w.claimed, tasks...)
			return err
		}},
		{Name: "enqueue_due (SQS, 50, limited queue)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			if _, err := st.UpdateQueueSettings(ctx, "q5", store.QueuePatch{Concurrency: &store.Change[int]{To: new(1000)},
				Rate: &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: 100_000, PerSeconds: 60}}}); err != nil {
				return err
			}
			w.enqueuedLimited = nil
			_, err := st.EnqueueDue(ctx, store.EnqueueParams{Queue: "q5", Limit: 50, RedeliverAfter: 5 * time.Minute},
				func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
					w.enqueuedLimited = append(w.enqueuedLimited, ids...)
					return ids, nil
				})
			return err
		}},
		{Name: "claim by id (SQS, 10, limited queue)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			ids := w.enqueuedLimited[:min(10, len(w.enqueuedLimited))]
			return limitedClaim(ctx, st, w, "q5", store.QueuePatch{}, ids)
		}},
		{Name: "heartbeat", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			if len(w.claimed) == 0 {
				return fmt.Errorf("nothing claimed")
			}
			_, err := st.Heartbeat(ctx, store.HeartbeatParams{TaskID: w.claimed[0].ID, LeaseToken: w.claimed[0].LeaseToken, LeaseDuration: time.Minute})
			return err
		}},
		{Name: "outcomes (batch of the claims)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			var outs []store.Outcome
			for i, task := range w.claimed {
				o := store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
				if i%5 == 0 {
					o.Kind, o.Error, o.RetryIn = store.Retry, "bench: retry", time.Minute
				}
				outs = append(outs, o)
			}
			_, err := st.RecordOutcomes(ctx, outs)
			return err
		}},
		{Name: "reaper (1000)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 1000, BackoffBase: time.Second, BackoffMax: time.Hour})
			return err
		}},
		{Name: "next due (a worker's 50 idle queues, each poll interval)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			queues := make([]string, 50)
			for i := range queues {
				queues[i] = fmt.Sprintf("q%d", i)
			}
			_, err := st.NextDue(ctx, queues)
			return err
		}},
		{Name: "serve queues (an SQS enqueuer's renewal, 25 queues)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			queues := make([]string, 25)
			for i := range queues {
				queues[i] = fmt.Sprintf("q%d", i)
			}
			return st.ServeQueues(ctx, store.ServeParams{EnqueuerID: "bench", Queues: queues, For: time.Minute})
		}},
		{Name: "requeue unserved (1000, each reaper pass)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, err := st.RequeueUnserved(ctx, 1000)
			return err
		}},
		{Name: "retention (1000, 7/30 days)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			now := time.Now()
			_, err := st.DeleteFinishedTasks(ctx, store.RetentionParams{SucceededBefore: now.Add(-7 * 24 * time.Hour), FailedBefore: now.Add(-30 * 24 * time.Hour), Limit: 1000})
			return err
		}},
		{Name: "schedule claim", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
			return err
		}},
		{Name: "get task", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			_, err := st.GetTask(ctx, w.claimed[0].ID)
			return err
		}},
		{Name: "list attempts", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			_, err := st.ListAttempts(ctx, w.claimed[0].ID)
			return err
		}},
		{Name: "stats (/api/stats, gauges)", Linear: true, Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, err := st.Stats(ctx)
			return err
		}},
		{Name: "insights: stuck tasks", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, err := st.StuckTasks(ctx, 10)
			return err
		}},
		{Name: "running by group (a scrape of rota_group_running, 5 queues)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, err := st.RunningByGroup(ctx, []string{"q1", "q2", "q3", "q4", "q5"})
			return err
		}},
		{Name: "insights: throughput (last hour)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, err := st.Throughput(ctx, time.Now().Add(-time.Hour).Truncate(time.Minute), time.Minute)
			return err
		}},
		{Name: "create flow (3 steps)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			res, err := st.CreateFlow(ctx, store.FlowParams{Name: "scale-flow-1", Queue: "flowq", Steps: []store.StepParams{
				{Name: "a", Kind: "k_a"},
				{Name: "b", Kind: "k_b", DependsOn: []string{"a"}, ForEach: "a"},
				{Name: "c", Kind: "k_c", DependsOn: []string{"b"}},
			}})
			w.flow = res.Flow
			return err
		}},
		{Name: "get flow", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			_, err := st.GetFlow(ctx, w.flow.ID)
			return err
		}},
		{Name: "flow step outcome (fan-out of 2)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			return flowStepOutcomes(ctx, st, w, `[1, 2]`)
		}},
		{Name: "flow step outcomes (fan-in, the flow's last step starts)", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			return flowStepOutcomes(ctx, st, w, `"out"`)
		}},
		{Name: "list flows", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, _, err := st.ListFlows(ctx, store.FlowListParams{})
			return err
		}},
		{Name: "list flows (FAILED)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, _, err := st.ListFlows(ctx, store.FlowListParams{Statuses: []store.FlowStatus{store.FlowFailed}})
			return err
		}},
		{Name: "list flows (by name)", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, _, err := st.ListFlows(ctx, store.FlowListParams{Name: "scale-flow-3"})
			return err
		}},
		{Name: "cancel flow", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			_, err := st.CancelFlow(ctx, w.flow.ID)
			return err
		}},
		{Name: "replay flow", Run: func(ctx context.Context, st *postgres.Store, w *scaleWork) error {
			_, err := st.ReplayFlow(ctx, w.flow.ID)
			return err
		}},
		{Name: "schedule runs", Run: func(ctx context.Context, st *postgres.Store, _ *scaleWork) error {
			_, _, err := st.ListScheduleRuns(ctx, store.ScheduleRunsParams{Name: "scale-1", Limit: 50})
			return err
		}},
	}
	for _, statuses := range [][]store.Status{nil, pending, dead, {store.StatusProcessing}, {store.StatusSucceeded, store.StatusDead, store.StatusFailed}} {
		for _, queue := range []string{"", "q2"} {
			for _, kind := range []string{"", "noop"} {
				statements = append(statements, listCase(statuses, queue, kind))
			}
		}
	}
	statements = append(statements, listCase(nil, "nosuchqueue", ""), listCase(nil, "", "nosuchkind"))
	for _, queue := range []string{"", "q2", "nosuchqueue"} {
		for _, kind := range []string{"", "k5", "noop"} {
			statements = append(statements, deadLetterCase(queue, kind, ""))
		}
	}
	statements = append(statements, deadLetterCase("q2", "", store.StatusFailed), deadLetterCase("", "", store.StatusFailed))
	return statements
}

// runScaleStatements runs every statement once (after one unmeasured warm-up run of the
// read-only ones, so that the table's pages are as cached as on a live server) and
// returns what auto_explain saw.
func runScaleStatements(t testing.TB, st *postgres.Store, take func() []string) []explained {
	t.Helper()
	ctx := context.Background()
	w := &scaleWork{}
	var out []explained
	for _, s := range scaleStatements() {
		take()
		start := time.Now()
		if err := s.Run(ctx, st, w); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		out = append(out, explained{Name: s.Name, Duration: time.Since(start), Plans: take()})
	}
	return out
}

// TestScale10M is the scale benchmark of docs/performance.md: it loads
// ROTA_SCALE_TASKS tasks (10,000,000 for the published table) into a database named
// rota_scale_<n> that it keeps (a later run reuses it; it migrates it up first, so a
// database loaded by an older release shows the migrations' cost), and prints every
// scheduled or per-request statement's time, buffers and plan shape. Not run without
// ROTA_SCALE_TASKS: CI runs TestStatementsAreIndexBound instead.
//
//	ROTA_PG_DIR=/tmp/rota-pg-scale ROTA_PG_PROFILE=stock scripts/pg.sh env  # a separate, stock cluster
//	ROTA_SCALE_TASKS=10000000 ROTA_TEST_DATABASE_URL=... go test -run TestScale10M -v -timeout 2h ./internal/store/postgres/
func TestScale10M(t *testing.T) {
	n, _ := strconv.ParseInt(os.Getenv("ROTA_SCALE_TASKS"), 10, 64)
	if n <= 0 {
		t.Skip("set ROTA_SCALE_TASKS (e.g. 10000000) to run the scale benchmark")
	}
	admin := pgtest.AdminURL(t)
	ctx := context.Background()
	name := fmt.Sprintf("rota_scale_%d", n)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	url := pgtest.WithDatabase(t, admin, name)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Pending migrations run beside a write load (enqueues and claims through plain SQL),
	// whose longest stall is reported: the migrations of a release on a loaded table.
	var loaded bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('rota.tasks') IS NOT NULL`).Scan(&loaded); err != nil {
		t.Fatal(err)
	}
	load, stop := &writeLoad{}, func() {}
	if loaded {
		load, stop = startWriteLoad(t, pool)
	}
	start := time.Now()
	applied, err := postgres.MigrateUp(ctx, pool)
	took := time.Since(start)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("migrate up: %v in %s beside %d claims and %d enqueues; longest stall %s (%s)", applied, took.Round(time.Millisecond),
		load.claims.Load(), load.enqueues.Load(), load.longest.Round(time.Millisecond), load.longestWhat)
	var have int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.tasks`).Scan(&have); err != nil {
		t.Fatal(err)
	}
	if have == 0 {
		loadScale(t, pool, n, t.Logf)
	} else {
		t.Logf("reusing %s: %d tasks", name, have)
	}

	st, _, take := explainingStore(t, url)
	runScaleStatements(t, st, take) // warm-up: caches as on a live server
	results := runScaleStatements(t, st, take)
	var b strings.Builder
	fmt.Fprintf(&b, "\n| statement | time (ms) | server (ms) | buffers | seq scan of tasks | scans |\n|---|---:|---:|---:|---|---|\n")
	for _, r := range results {
		seq := "no"
		if r.SeqScansTasks() {
			seq = "**yes**"
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %d | %s | %s |\n", r.Name, ms(r.Duration), ms(r.ServerTime()), r.Buffers(), seq, r.Shape())
	}
	t.Log(b.String())
	if os.Getenv("ROTA_SCALE_PLANS") != "" {
		for _, r := range results {
			t.Logf("== %s\n%s", r.Name, strings.Join(r.Plans, "\n"))
		}
	}
}

// TestStatementsAreIndexBound: every statement Rota runs on a schedule or per request
// (the list of TestScale10M) reads rota.tasks through an index, on a table of 50,000
// tasks in the steady-state mix with fresh statistics; and none but the counting ones
// (Stats) reads and throws away more than 2% of the table in one plan node, which is
// how a walk of an index in id order that filters out nearly everything shows
// (status=DEAD&queue=q2&kind=noop walked the whole primary key backwards).
func TestStatementsAreIndexBound(t *testing.T) {
	const tasks = 50_000
	url := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	loadScale(t, pool, tasks, func(string, ...any) {})
	st, _, take := explainingStore(t, url)
	linear := map[string]bool{}
	for _, s := range scaleStatements() {
		linear[s.Name] = s.Linear
	}
	for _, r := range runScaleStatements(t, st, take) {
		if len(r.Plans) == 0 {
			t.Errorf("%s: no plan was reported", r.Name)
		}
		if r.SeqScansTasks() {
			t.Errorf("%s scans rota.tasks sequentially:\n%s", r.Name, strings.Join(r.Plans, "\n"))
		}
		if os.Getenv("ROTA_DEBUG_PLANS") != "" {
			t.Logf("%s: %d plans, %s, max rows removed %d", r.Name, len(r.Plans), r.Shape(), r.MaxRowsRemoved())
		}
		if n := r.MaxRowsRemoved(); !linear[r.Name] && n > tasks/50 {
			t.Errorf("%s read and threw away %d rows in one plan node:\n%s", r.Name, n, strings.Join(r.Plans, "\n"))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// flowStepOutcomes claims the PENDING tasks of the flow "create flow" made (queue flowq)
// and records their success with output: the flow trigger moves the flow on.
func flowStepOutcomes(ctx context.Context, st *postgres.Store, w *scaleWork, output string) error {
	tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "flowq", From: store.StatusPending, WorkerID: "bench", Limit: 10, LeaseDuration: time.Minute})
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return fmt.Errorf("no step task of flow %s to claim", w.flow.ID)
	}
	outs := make([]store.Outcome, len(tasks))
	for i, task := range tasks {
		outs[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed, Output: json.RawMessage(output)}
	}
	_, err = st.RecordOutcomes(ctx, outs)
	return err
}
