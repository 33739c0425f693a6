package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// fillEnqueueBacklog inserts, in queue q, finished tasks and tasks ENQUEUED within the
// last minute (their messages are in SQS: the set the enqueuer must never walk), plus
// not-yet-due retries waiting for a new message.
func fillEnqueueBacklog(tb testing.TB, pool *pgxpool.Pool, q string, finished, sent, waiting int) {
	tb.Helper()
	execTB(tb, pool, `
		INSERT INTO rota.tasks (id, queue, kind, status, attempt_count, scheduled_for, completed_at)
		SELECT gen_random_uuid(), $1, 'k', 'SUCCEEDED', 1, now() - interval '1 hour', now() - interval '30 minutes'
		FROM generate_series(1, $2::int)`, q, finished)
	execTB(tb, pool, `
		INSERT INTO rota.tasks (id, queue, kind, status, priority, scheduled_for, enqueued_at)
		SELECT gen_random_uuid(), $1, 'k', 'ENQUEUED', g % 5, now() - interval '2 minutes',
		       now() - make_interval(secs => (g % 50000) / 1000.0)
		FROM generate_series(1, $2::int) AS g`, q, sent)
	execTB(tb, pool, `
		INSERT INTO rota.tasks (id, queue, kind, status, attempt_count, scheduled_for)
		SELECT gen_random_uuid(), $1, 'k', 'PENDING', 1, now() + interval '10 minutes'
		FROM generate_series(1, $2::int)`, q, waiting)
}

// addDue inserts n tasks of each kind that needs a message: due PENDING, due retries
// (PENDING again after an attempt), and ENQUEUED tasks whose message looks lost (sent an
// hour ago).
func addDue(tb testing.TB, pool *pgxpool.Pool, q string, n int) {
	tb.Helper()
	execTB(tb, pool, `
		INSERT INTO rota.tasks (id, queue, kind, status, scheduled_for)
		SELECT gen_random_uuid(), $1, 'k', 'PENDING', now() - interval '1 second' FROM generate_series(1, $2::int)`, q, n)
	execTB(tb, pool, `
		INSERT INTO rota.tasks (id, queue, kind, status, attempt_count, scheduled_for)
		SELECT gen_random_uuid(), $1, 'k', 'PENDING', 1, now() - interval '1 second' FROM generate_series(1, $2::int)`, q, n)
	execTB(tb, pool, `
		INSERT INTO rota.tasks (id, queue, kind, status, scheduled_for, enqueued_at)
		SELECT gen_random_uuid(), $1, 'k', 'ENQUEUED', now() - interval '2 hours', now() - interval '1 hour'
		FROM generate_series(1, $2::int)`, q, n)
}

func execTB(tb testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	tb.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// planNode is the part of EXPLAIN (FORMAT JSON) the plan test reads.
type planNode struct {
	NodeType   string     `json:"Node Type"`
	IndexName  string     `json:"Index Name"`
	SharedHit  int64      `json:"Shared Hit Blocks"`
	SharedRead int64      `json:"Shared Read Blocks"`
	Plans      []planNode `json:"Plans"`
}

func (n planNode) walk(visit func(planNode)) {
	visit(n)
	for _, c := range n.Plans {
		c.walk(visit)
	}
}

// TestEnqueueDueReadsOnlyCandidates: the enqueuer runs every few hundred milliseconds on
// every server, so a round must read the rows it returns and not the ENQUEUED tasks
// whose message is in SQS right now (most of a busy table). Statistics are gathered
// while the table is empty, the worst case for the planner, as in
// TestHotPathNeverScansTasks. The proof is the buffers the statement touches.
func TestEnqueueDueReadsOnlyCandidates(t *testing.T) {
	ctx := context.Background()
	st, pool := newStore(t)
	exec(t, pool, `ALTER TABLE rota.tasks SET (autovacuum_enabled = false)`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)
	noSend := func(context.Context, []uuid.UUID) ([]uuid.UUID, error) { return nil, nil }
	p := store.EnqueueParams{Queue: "q", Limit: 100, RedeliverAfter: 5 * time.Minute}
	for range 10 { // on the empty table, as a server idling before the load arrives
		if _, err := st.EnqueueDue(ctx, p, noSend); err != nil {
			t.Fatal(err)
		}
	}

	const sent, due = 100_000, 5
	fillEnqueueBacklog(t, pool, "q", 20_000, sent, 2_000)
	addDue(t, pool, "q", due)

	plan := explainEnqueue(t, pool, p)
	plan.walk(func(n planNode) {
		switch {
		case n.NodeType == "Seq Scan":
			t.Errorf("the enqueue statement scans rota.tasks sequentially")
		case n.IndexName == "tasks_claim_enqueued" || n.IndexName == "tasks_status_id":
			t.Errorf("the enqueue statement walks index %s, which holds every ENQUEUED task", n.IndexName)
		}
	})
	touched := plan.SharedHit + plan.SharedRead
	// 3 x 5 rows, a few index pages each; walking the 100,000 sent tasks would touch
	// hundreds (their index alone has over 300 pages).
	if touched > 200 {
		t.Errorf("one round touched %d buffers to find %d tasks among %d sent", touched, 3*due, sent)
	}

	var handed []uuid.UUID
	n, err := st.EnqueueDue(ctx, p, func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
		handed = ids
		return ids, nil
	})
	if err != nil || n != 3*due || len(handed) != 3*due {
		t.Fatalf("EnqueueDue: handed %d, marked %d, %v; want %d", len(handed), n, err, 3*due)
	}
}

// explainEnqueue runs the enqueue statement under EXPLAIN ANALYZE (it takes row locks,
// so in a transaction rolled back afterwards) and returns the plan's root.
func explainEnqueue(t *testing.T, pool *pgxpool.Pool, p store.EnqueueParams) planNode {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)\n"+postgres.EnqueueDueSQL,
		p.Queue, p.Limit, p.RedeliverAfter).Scan(&raw); err != nil {
		t.Fatalf("explain: %v", err)
	}
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("explain output %s: %v", raw, err)
	}
	return out[0].Plan
}
