package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// TestHotPathNeverScansTasks: statistics gathered while rota.tasks was empty (retention
// emptied it, then autovacuum analyzed it) must not turn the claim and outcome statements
// into sequential scans once the table fills again. PostgreSQL would happily cache such a
// generic plan for a prepared statement; the hot statements are planned per call instead.
// The proof is the table's own seq_scan counter, read on the store's only connection.
func TestHotPathNeverScansTasks(t *testing.T) {
	ctx := context.Background()
	pool, st := emptyTableStore(t)
	exec(t, pool, `VACUUM ANALYZE rota.task_attempts`)
	claim := store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w", Limit: 50, LeaseDuration: time.Minute}
	// Enough executions on the empty table for PostgreSQL to settle on a cached plan.
	for range 10 {
		if _, err := st.ClaimTasks(ctx, claim); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: store.NewID(), LeaseToken: store.NewID(), Kind: store.Succeed}}); err != nil {
			t.Fatal(err)
		}
	}
	createNoop(t, st, 20000)

	// Neither scan the table nor walk a whole index of it: a plan that put the table
	// outside the outcome batch's join read all 20,000 primary-key entries per batch
	// (migration 0027). 250 tasks claimed and completed read a few entries each (the
	// claims also step over the entries of the tasks claimed before them, not yet
	// vacuumed).
	assertIndexBound(t, pool, "claiming and completing 250 of 20,000 tasks", 5000, func() {
		for range 5 {
			tasks, err := st.ClaimTasks(ctx, claim)
			if err != nil || len(tasks) != 50 {
				t.Fatalf("claim: %d tasks, %v", len(tasks), err)
			}
			outcomes := make([]store.Outcome, len(tasks))
			for i, task := range tasks {
				outcomes[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
			}
			if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestSmallOutcomeBatchesNeverWalkTheTable: a batch of at most 64 outcomes runs
// rota.record_outcomes' plan made once per session (migration 0050). Made while rota.tasks
// was empty, that plan must still reach the batch's rows through the primary key once the
// table holds 20,000 tasks: without the batch's ids as an index condition it walked the
// whole primary key for every batch.
func TestSmallOutcomeBatchesNeverWalkTheTable(t *testing.T) {
	ctx := context.Background()
	pool, st := emptyTableStore(t)
	exec(t, pool, `VACUUM ANALYZE rota.task_attempts`)
	for range 10 { // on the empty table: the session's plan is made now
		if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: store.NewID(), LeaseToken: store.NewID(), Kind: store.Succeed}}); err != nil {
			t.Fatal(err)
		}
	}
	createNoop(t, st, 20000)
	claim := store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w", Limit: 48, LeaseDuration: time.Minute}
	var outcomes []store.Outcome
	for range 5 {
		tasks, err := st.ClaimTasks(ctx, claim)
		if err != nil || len(tasks) != claim.Limit {
			t.Fatalf("claim: %d tasks, %v", len(tasks), err)
		}
		for _, task := range tasks {
			outcomes = append(outcomes, store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed})
		}
	}

	// 240 outcomes in batches of 64, 16 and 1: a few entries each; the walk read 20,000
	// per batch.
	assertIndexBound(t, pool, "completing 240 of 20,000 tasks in small batches", 2000, func() {
		for len(outcomes) > 0 {
			n := min(len(outcomes), []int{64, 16, 1}[len(outcomes)%3])
			results, err := st.RecordOutcomes(ctx, outcomes[:n])
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if r.Err != nil || r.Status != store.StatusSucceeded {
					t.Fatalf("outcome: %s, %v", r.Status, r.Err)
				}
			}
			outcomes = outcomes[n:]
		}
	})
}

// TestClaimByIDsNeverScansTasks is TestHotPathNeverScansTasks for the SQS worker's claim
// by id (rota.claim_tasks_by_ids, migration 0032), whose plan is made once per session:
// made while rota.tasks was empty, it must still reach the named rows through the primary
// key once the table holds 20,000 sent tasks.
func TestClaimByIDsNeverScansTasks(t *testing.T) {
	ctx := context.Background()
	pool, st := emptyTableStore(t)
	claimByIDs := func(ids []uuid.UUID) []*store.Task {
		t.Helper()
		tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusEnqueued, TaskIDs: ids,
			WorkerID: "w", Limit: len(ids), LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return tasks
	}
	for range 10 { // on the empty table: the session's plan is made now
		claimByIDs([]uuid.UUID{store.NewID(), store.NewID()})
	}
	createNoop(t, st, 20000)
	exec(t, pool, `UPDATE rota.tasks SET status = 'ENQUEUED', enqueued_at = now()`)
	var sent []uuid.UUID
	rows, err := pool.Query(ctx, `SELECT id FROM rota.tasks ORDER BY random() LIMIT 200`)
	if err != nil {
		t.Fatal(err)
	}
	if sent, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
		t.Fatal(err)
	}

	assertIndexBound(t, pool, "claiming 200 of 20,000 tasks by id", 2000, func() {
		for batch := range slices.Chunk(sent, 40) {
			if got := claimByIDs(batch); len(got) != len(batch) {
				t.Fatalf("claim by id: %d of %d tasks", len(got), len(batch))
			}
		}
	})
}

// TestEnqueueNeverScansTasks is TestHotPathNeverScansTasks for the SQS enqueuer's lock and
// mark (rota.enqueue_due and rota.enqueue_mark, migration 0033), whose plans are made once
// per session: made while rota.tasks was empty, they must still read only the tasks a
// round takes once the table holds 20,000 due tasks and 20,000 sent ones.
func TestEnqueueNeverScansTasks(t *testing.T) {
	ctx := context.Background()
	pool, st := emptyTableStore(t)
	round := func() int {
		t.Helper()
		n, err := st.EnqueueDue(ctx, store.EnqueueParams{Queue: "default", Limit: 250, RedeliverAfter: time.Minute},
			func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) { return ids, nil })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 10 { // on the empty table: the session's plans are made now
		round()
	}
	createNoop(t, st, 20000)
	// The first 20,000 are sent (recently: not presumed lost).
	exec(t, pool, `UPDATE rota.tasks SET status = 'ENQUEUED', enqueued_at = now()`)
	createNoop(t, st, 20000)
	// Without their dead PENDING entries (no statistics: the plans stay the empty table's).
	exec(t, pool, `VACUUM rota.tasks`)

	// A quiet run reads 2,934 entries; runs on a loaded machine have read 5,004 (not
	// explained: the same code passed 12 of 12 runs on a quiet one). The plans this test
	// guards against read 164,000 and more, so the bound leaves room for that noise.
	assertIndexBound(t, pool, "4 enqueue rounds of 250 beside 40,000 tasks", 10000, func() {
		for range 4 {
			if n := round(); n != 250 {
				t.Fatalf("a round marked %d tasks, want 250", n)
			}
		}
	})
}

// emptyTableStore is a store on one connection (one plan cache, one statistics
// backend) whose rota.tasks is analyzed empty and never autovacuumed: the plans the
// tests make next are made from an empty table's statistics.
func emptyTableStore(t *testing.T) (*pgxpool.Pool, *postgres.Store) {
	t.Helper()
	pool := pgtest.NewPoolConns(t, 1)
	st := postgres.New(pool)
	t.Cleanup(st.Close)
	exec(t, pool, `ALTER TABLE rota.tasks SET (autovacuum_enabled = false)`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)
	return pool, st
}

// createNoop creates n due noop tasks in the default queue, 5,000 per statement.
func createNoop(t testing.TB, st *postgres.Store, n int) {
	t.Helper()
	params := make([]store.CreateParams, 5000)
	for done := 0; done < n; done += len(params) {
		batch := params[:min(len(params), n-done)]
		for i := range batch {
			batch[i] = store.CreateParams{Kind: "noop"}
		}
		mustCreate(t, st, batch...)
	}
}

// assertIndexBound runs what and fails the test if it scanned rota.tasks sequentially
// or read more than maxRead entries of its indexes.
func assertIndexBound(t *testing.T, pool *pgxpool.Pool, what string, maxRead int64, run func()) {
	t.Helper()
	before, readBefore := seqScans(t, pool), indexTuplesRead(t, pool)
	run()
	if after := seqScans(t, pool); after != before {
		t.Fatalf("%s scanned rota.tasks sequentially %d times", what, after-before)
	}
	if read := indexTuplesRead(t, pool) - readBefore; read > maxRead {
		t.Fatalf("%s read %d index entries of rota.tasks", what, read)
	}
}

// indexTuplesRead is how many index entries of rota.tasks's indexes scans have read so far.
func indexTuplesRead(t *testing.T, pool *pgxpool.Pool) int64 {
	return tasksStat(t, pool, `SELECT coalesce(sum(idx_tup_read), 0)::bigint FROM pg_stat_user_indexes
		WHERE schemaname = 'rota' AND relname = 'tasks'`)
}

// TestFlowControlledClaimsNeverScanTasks is TestHotPathNeverScansTasks for the claims of
// flow control (rota.claim_limited, migration 0022): a queue with limits, and queues
// whose tasks carry group keys (with group limits, group_concurrency alone, and without
// settings: fairness only),
// with statistics gathered while the table was empty, then while most tasks are grouped
// (the planner then liked a sequential scan to find "a grouped task").
func TestFlowControlledClaimsNeverScanTasks(t *testing.T) {
	ctx := context.Background()
	pool, st := emptyTableStore(t)
	ten, hundred := 10, 100
	for queue, patch := range map[string]store.QueuePatch{
		"limited": {Concurrency: &store.Change[int]{To: &hundred}, Rate: &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: 100000, PerSeconds: 60}}},
		"groups":  {GroupConcurrency: &store.Change[int]{To: &ten}, GroupRate: &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: 1000, PerSeconds: 60}}},
		// group_concurrency alone: group locks and a second count (migration 0036)
		"gonly": {GroupConcurrency: &store.Change[int]{To: &ten}},
	} {
		if _, err := st.UpdateQueueSettings(ctx, queue, patch); err != nil {
			t.Fatal(err)
		}
	}
	queues := []string{"limited", "groups", "gonly", "fair", "default"}
	claimAll := func(want int) {
		t.Helper()
		for _, q := range queues {
			tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: q, From: store.StatusPending, WorkerID: "w", Limit: 50,
				LeaseDuration: time.Minute, Report: &store.ClaimReport{}})
			if err != nil || len(tasks) != want {
				t.Fatalf("claim %s: %d tasks, %v; want %d", q, len(tasks), err, want)
			}
			outcomes := make([]store.Outcome, len(tasks))
			for i, task := range tasks {
				outcomes[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
			}
			if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 10 { // plans settled on the empty table
		claimAll(0)
	}
	for _, q := range queues {
		params := make([]store.CreateParams, 5000)
		for i := range params {
			params[i] = store.CreateParams{Queue: q, Kind: "noop"}
			if q != "limited" && q != "default" {
				params[i].GroupKey = fmt.Sprintf("tenant-%d", i%500)
			}
		}
		mustCreate(t, st, params...)
	}
	before := seqScans(t, pool)
	for range 3 {
		claimAll(50)
	}
	exec(t, pool, `ANALYZE rota.tasks`) // statistics that say half the tasks are grouped
	for range 3 {
		claimAll(50)
	}
	if after := seqScans(t, pool); after != before {
		t.Fatalf("flow-controlled claims scanned rota.tasks sequentially %d times", after-before)
	}
}

// seqScans returns rota.tasks' sequential-scan count, after flushing this backend's
// pending statistics.
func seqScans(t *testing.T, pool *pgxpool.Pool) int64 {
	return tasksStat(t, pool, `SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = 'rota' AND relname = 'tasks'`)
}

// tasksStat reads one cumulative statistic (query) after flushing this backend's.
func tasksStat(t *testing.T, pool *pgxpool.Pool, query string) int64 {
	t.Helper()
	exec(t, pool, `SELECT pg_stat_force_next_flush()`)
	exec(t, pool, `SELECT 1`) // the flush happens at the end of the previous transaction
	var n int64
	if err := pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDueTasksAreFoundWithoutWalkingTheRest: tasks waiting for a later scheduled_for
// (delayed tasks, retries in backoff) sit in the claim and enqueue indexes among the due
// ones. The poll-mode claim and the SQS enqueuer must step over them level by level, not
// walk every one of them (an index scan with only the queue fixed) or the whole table
// (the sequential scan the planner chose when statistics said few tasks are due),
// whatever the statistics say. The proofs are the table's seq_scan counter and the
// indexes' block reads, on the store's only connection.
func TestDueTasksAreFoundWithoutWalkingTheRest(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// find returns the priorities of the due tasks it found, in its order.
		find func(t *testing.T, st *postgres.Store, pool *pgxpool.Pool) []int
	}{
		{"claim", func(t *testing.T, st *postgres.Store, _ *pgxpool.Pool) []int {
			tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending,
				WorkerID: "w", Limit: 50, LeaseDuration: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var priorities []int
			for _, task := range tasks {
				priorities = append(priorities, task.Priority)
			}
			return priorities
		}},
		{"enqueue", func(t *testing.T, st *postgres.Store, pool *pgxpool.Pool) []int {
			var priorities []int
			_, err := st.EnqueueDue(ctx, store.EnqueueParams{Queue: "default", Limit: 50, RedeliverAfter: time.Hour},
				func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
					for _, id := range ids {
						var p int
						if err := pool.QueryRow(ctx, `SELECT priority FROM rota.tasks WHERE id = $1`, id).Scan(&p); err != nil {
							return nil, err
						}
						priorities = append(priorities, p)
					}
					return ids, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			return priorities
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := pgtest.NewPoolConns(t, 2) // the store's, and one for the enqueuer's look-ups
			st := postgres.New(pool)
			defer st.Close()
			exec(t, pool, `ALTER TABLE rota.tasks SET (autovacuum_enabled = false)`)
			// 40,000 tasks due tomorrow at each of three priorities, PENDING (delayed tasks,
			// and retries in backoff of either mode); statistics that know it.
			exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, payload, status, priority, scheduled_for, max_attempts)
				SELECT gen_random_uuid(), 'default', 'noop', '{}', 'PENDING', p, now() + interval '1 day', 3
				FROM generate_series(1, 40000), unnest(ARRAY[-3, 0, 7]) AS p`)
			exec(t, pool, `VACUUM ANALYZE rota.tasks`)
			var due []store.CreateParams
			for _, p := range []int{0, 7, -3, 0, 2} {
				due = append(due, store.CreateParams{Kind: "noop", Priority: p})
			}
			mustCreate(t, st, due...)

			seqBefore, blocksBefore := seqScans(t, pool), dueIndexBlocks(t, pool)
			if got := tc.find(t, st, pool); fmt.Sprint(got) != "[7 2 0 0 -3]" {
				t.Fatalf("found priorities %v, want the five due tasks, highest first: [7 2 0 0 -3]", got)
			}
			if n := seqScans(t, pool) - seqBefore; n != 0 {
				t.Fatalf("rota.tasks was scanned sequentially %d times", n)
			}
			// Walking the 120,000 waiting entries of the index reads hundreds of blocks;
			// stepping over them a few per level.
			if n := dueIndexBlocks(t, pool) - blocksBefore; n > 60 {
				t.Fatalf("%d blocks of the claim and enqueue indexes were read: the tasks not yet due were walked", n)
			}
		})
	}
}

// dueIndexBlocks returns how many blocks of the indexes that find due tasks have been read
// (from shared buffers or not), after flushing this backend's pending statistics.
func dueIndexBlocks(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	exec(t, pool, `SELECT pg_stat_force_next_flush()`)
	exec(t, pool, `SELECT 1`)
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT sum(idx_blks_hit + idx_blks_read) FROM pg_statio_user_indexes
		WHERE schemaname = 'rota' AND indexrelname = 'tasks_claim_pending'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRetentionIsPlannedPerCall: the retention clean-up runs every minute with cutoffs as
// parameters. A generic plan cached while the table was empty walks every finished task
// (the whole tasks_finished index and its rows) and joins the batch to a sequential scan
// of the table; planned per call it reads only the tasks past the cutoffs.
func TestRetentionIsPlannedPerCall(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPoolConns(t, 1)
	st := postgres.New(pool)
	defer st.Close()
	exec(t, pool, `ALTER TABLE rota.tasks SET (autovacuum_enabled = false)`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)
	retain := func(limit int) int {
		t.Helper()
		n, err := st.DeleteFinishedTasks(ctx, store.RetentionParams{
			SucceededBefore: time.Now().Add(-24 * time.Hour), FailedBefore: time.Now().Add(-24 * time.Hour), Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 10 { // enough runs on the empty table for PostgreSQL to settle on a cached plan
		retain(100)
	}
	// 20,000 tasks finished an hour ago (kept) and 30 finished two days ago (past retention).
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, payload, status, scheduled_for, attempt_count, max_attempts, completed_at)
		SELECT gen_random_uuid(), 'default', 'noop', '{}', 'SUCCEEDED', now() - interval '3 days', 1, 3,
		       CASE WHEN g <= 30 THEN now() - interval '2 days' ELSE now() - interval '1 hour' END
		FROM generate_series(1, 20000) AS g`)
	before := seqScans(t, pool)
	deleted := 0
	for range 3 {
		deleted += retain(10)
	}
	if deleted != 30 {
		t.Fatalf("deleted %d tasks, want the 30 past retention", deleted)
	}
	if n := seqScans(t, pool) - before; n != 0 {
		t.Fatalf("retention scanned rota.tasks sequentially %d times", n)
	}
}

// TestClaimHintSkipsClaimedEntries: until a vacuum, the claim index keeps an entry for
// every task claimed from it, at the front of its level. A claim given the last task of
// the previous claim (ClaimParams.After) starts past them; one without walks them all.
func TestClaimHintSkipsClaimedEntries(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPoolConns(t, 1)
	st := postgres.New(pool)
	defer st.Close()
	exec(t, pool, `ALTER TABLE rota.tasks SET (autovacuum_enabled = false)`)
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, payload, status, scheduled_for, max_attempts)
		SELECT gen_random_uuid(), 'default', 'noop', '{}', 'PENDING', now() - interval '1 hour' + g * interval '1 millisecond', 3
		FROM generate_series(1, 20000) AS g`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)
	claim := func(limit int, after *store.ClaimKey) []*store.Task {
		t.Helper()
		tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w",
			Limit: limit, LeaseDuration: time.Minute, After: after})
		if err != nil || len(tasks) != limit {
			t.Fatalf("claim: %d tasks, %v; want %d", len(tasks), err, limit)
		}
		return tasks
	}
	var last *store.Task
	for range 19 { // 19,000 claimed: their entries stay until a vacuum
		tasks := claim(1000, nil)
		last = tasks[len(tasks)-1]
	}
	key := store.ClaimKeyOf(last)
	before := dueIndexBlocks(t, pool)
	hinted := claim(10, &key)
	withHint := dueIndexBlocks(t, pool) - before
	if hinted[0].ScheduledFor.Before(last.ScheduledFor) || hinted[0].ID == last.ID {
		t.Fatalf("the hinted claim returned %s, not a task past the hint", hinted[0].ID)
	}
	before = dueIndexBlocks(t, pool)
	claim(10, nil)
	without := dueIndexBlocks(t, pool) - before
	if withHint > 10 || without < 5*withHint {
		t.Fatalf("claim index blocks read: %d with the hint, %d without; want a few with it, many more without", withHint, without)
	}
}

// TestNextDueDoesNotWalkWaitingTasks: NextDue, which a worker runs for its idle queues
// every poll interval, finds each queue's earliest task through the claim index with a
// few probes per priority level, however many tasks wait (here 60,000 due tomorrow).
func TestNextDueDoesNotWalkWaitingTasks(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPoolConns(t, 1)
	st := postgres.New(pool)
	defer st.Close()
	exec(t, pool, `ALTER TABLE rota.tasks SET (autovacuum_enabled = false)`)
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, payload, status, priority, scheduled_for, max_attempts)
		SELECT gen_random_uuid(), q, 'noop', '{}', 'PENDING', p, now() + interval '1 day', 3
		FROM generate_series(1, 10000), unnest(ARRAY[-3, 0, 7]) AS p, unnest(ARRAY['waiting', 'mixed']) AS q`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)
	mustCreate(t, st, store.CreateParams{Queue: "mixed", Kind: "noop", Priority: -3})

	seqBefore, blocksBefore := seqScans(t, pool), dueIndexBlocks(t, pool)
	got, err := st.NextDue(ctx, []string{"waiting", "mixed", "empty"})
	if err != nil {
		t.Fatal(err)
	}
	if d := got["waiting"]; d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("waiting: due in %v, want about a day", d)
	}
	if d, ok := got["mixed"]; !ok || d > 0 {
		t.Errorf("mixed: due in %v (%v), want due now", d, ok)
	}
	if _, ok := got["empty"]; ok {
		t.Error("empty: reported")
	}
	if n := seqScans(t, pool) - seqBefore; n != 0 {
		t.Fatalf("rota.tasks was scanned sequentially %d times", n)
	}
	if n := dueIndexBlocks(t, pool) - blocksBefore; n > 60 {
		t.Fatalf("%d blocks of the claim index were read: the waiting tasks were walked", n)
	}
}

// TestCountReplayableReadsAnIndex: the dashboard counts the tasks a replay of every dead
// task would move before asking to confirm it; the count stops at its cap and walks an
// index of DEAD and FAILED tasks, never the table of finished ones.
func TestCountReplayableReadsAnIndex(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPoolConns(t, 1)
	st := postgres.New(pool)
	defer st.Close()
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, payload, status, scheduled_for, attempt_count, max_attempts, completed_at, last_error)
		SELECT gen_random_uuid(), CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, 'noop', '{}',
		       CASE WHEN g <= 12000 THEN 'DEAD' ELSE 'SUCCEEDED' END, now() - interval '1 day', 3, 3, now() - interval '1 hour',
		       CASE WHEN g <= 12000 THEN 'boom' END
		FROM generate_series(1, 40000) AS g`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)
	before := seqScans(t, pool)
	for _, c := range []struct {
		p      store.ReplayParams
		atMost int
		want   int
	}{
		{store.ReplayParams{}, 10001, 10001},
		{store.ReplayParams{}, 20000, 12000},
		{store.ReplayParams{Queue: "a"}, 10001, 6000},
		{store.ReplayParams{Queue: "b", Kind: "noop", Reason: store.StatusDead}, 100, 100},
		{store.ReplayParams{Reason: store.StatusFailed}, 10001, 0},
	} {
		n, err := st.CountReplayable(ctx, c.p, c.atMost)
		if err != nil || n != c.want {
			t.Fatalf("CountReplayable(%+v, %d) = %d, %v; want %d", c.p, c.atMost, n, err, c.want)
		}
	}
	if n := seqScans(t, pool) - before; n != 0 {
		t.Fatalf("counting replayable tasks scanned rota.tasks sequentially %d times", n)
	}
}

// TestListByQueueDoesNotWalkThePrimaryKeyForRunningTasks: a list filtered by queue alone
// also wants the queue's running tasks, newest first. With statistics saying many tasks
// run (here 20,000, all in another queue), the planner would look for them by walking the
// primary key backwards until it had a page, and queue q2 has none running: the walk read
// every row (30 s at 10 million tasks). They are read whole from tasks_lease_expiry and
// sorted instead, so the list reads from the primary key only the page it returns.
func TestListByQueueDoesNotWalkThePrimaryKeyForRunningTasks(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPoolConns(t, 1)
	st := postgres.New(pool)
	defer st.Close()
	exec(t, pool, `ALTER TABLE rota.tasks SET (autovacuum_enabled = false)`)
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, status, attempt_count, worker_id, lease_token, lease_expires_at, processing_started_at)
		SELECT gen_random_uuid(), 'busy', 'k', 'PROCESSING', 1, 'w', gen_random_uuid(), now() + interval '1 hour', now()
		FROM generate_series(1, 20000)`)
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, status, attempt_count, completed_at)
		SELECT gen_random_uuid(), 'q2', 'k', 'SUCCEEDED', 1, now() FROM generate_series(1, 20000)`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)

	before := pkeyTuples(t, pool)
	tasks, _, err := st.ListTasks(ctx, store.ListParams{Queue: "q2", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 50 {
		t.Fatalf("listed %d tasks of q2, want a page of 50", len(tasks))
	}
	// The page is 50 lookups; a walk reads the 40,000 entries.
	if n := pkeyTuples(t, pool) - before; n > 1000 {
		t.Fatalf("listing queue q2 read %d entries of tasks_pkey: the running tasks were looked for by walking it", n)
	}
}

// pkeyTuples returns how many entries of tasks_pkey index scans have read, after
// flushing this backend's pending statistics.
func pkeyTuples(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	exec(t, pool, `SELECT pg_stat_force_next_flush()`)
	exec(t, pool, `SELECT 1`)
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT idx_tup_read FROM pg_stat_user_indexes
		WHERE schemaname = 'rota' AND indexrelname = 'tasks_pkey'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
