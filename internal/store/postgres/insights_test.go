package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// TestInsightsNeverScanTasks: the chart's Throughput and the stuck-task list, which an
// open dashboard asks for every second, read the partial indexes tasks_finished and
// tasks_lease_expiry: their cost follows the hour's completions and the running tasks,
// not the size of rota.tasks. The proof is the table's seq_scan counter, read on the
// store's only connection. (Stats counts every task, so its plan is the planner's
// choice; BenchmarkPages1M in internal/dashboard measures it at a million tasks.)
func TestInsightsNeverScanTasks(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPoolConns(t, 1)
	st := postgres.New(pool)
	defer st.Close()

	// 30,000 tasks finished over the last two days (about 600 in the last hour) and 50
	// running tasks whose lease expired.
	exec(t, pool, `
INSERT INTO rota.tasks (id, queue, kind, payload, status, attempt_count, worker_id, lease_token,
    lease_expires_at, completed_at)
SELECT gen_random_uuid(), 'default', 'noop', jsonb_build_object('n', i), s.status, 1, 'w',
       CASE WHEN s.status = 'PROCESSING' THEN gen_random_uuid() END,
       CASE WHEN s.status = 'PROCESSING' THEN now() - interval '1 minute' END,
       CASE WHEN s.status <> 'PROCESSING' THEN now() - interval '48 hours' * (i / 30000.0) END
FROM generate_series(1, 30050) AS i,
     LATERAL (SELECT CASE WHEN i > 30000 THEN 'PROCESSING' WHEN i % 10 = 0 THEN 'DEAD'
                          ELSE 'SUCCEEDED' END) AS s(status)`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)

	before := seqScans(t, pool)
	for range 3 {
		buckets, err := st.Throughput(ctx, time.Now().Add(-time.Hour), time.Minute)
		if err != nil || len(buckets) == 0 {
			t.Fatalf("Throughput: %d buckets, %v", len(buckets), err)
		}
		if stuck, err := st.StuckTasks(ctx, 20); err != nil || len(stuck) != 20 {
			t.Fatalf("StuckTasks: %d, %v", len(stuck), err)
		}
	}
	if after := seqScans(t, pool); after != before {
		t.Fatalf("Throughput and StuckTasks scanned rota.tasks sequentially %d times", after-before)
	}
}
