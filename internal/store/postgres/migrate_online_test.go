package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// writeLoad enqueues and claims through plain SQL that every schema version accepts,
// one statement at a time on each of two connections, and keeps the longest time one
// statement took (the longest stall a migration caused).
type writeLoad struct {
	claims, enqueues atomic.Int64
	mu               sync.Mutex
	longest          time.Duration
	longestWhat      string
	errs             []error
}

const (
	loadEnqueue = `INSERT INTO rota.tasks (id, queue, kind) VALUES (gen_random_uuid(), 'default', 'noop')`
	loadClaim   = `UPDATE rota.tasks SET status = 'PROCESSING', worker_id = 'w', lease_token = gen_random_uuid(),
		lease_expires_at = now() + interval '1 minute', attempt_count = attempt_count + 1
		WHERE id = (SELECT id FROM rota.tasks WHERE status = 'PENDING' AND queue = 'default' AND scheduled_for <= now()
		            ORDER BY priority DESC, scheduled_for, id LIMIT 1 FOR UPDATE SKIP LOCKED)`
)

func (l *writeLoad) run(ctx context.Context, pool *pgxpool.Pool, what, sql string, count *atomic.Int64) {
	for ctx.Err() == nil {
		start := time.Now()
		_, err := pool.Exec(ctx, sql)
		took := time.Since(start)
		l.mu.Lock()
		if err != nil && ctx.Err() == nil {
			l.errs = append(l.errs, err)
		}
		if took > l.longest && ctx.Err() == nil {
			l.longest, l.longestWhat = took, what
		}
		l.mu.Unlock()
		count.Add(1)
	}
}

func startWriteLoad(t *testing.T, pool *pgxpool.Pool) (*writeLoad, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &writeLoad{}
	var wg sync.WaitGroup
	wg.Go(func() { l.run(ctx, pool, "enqueue", loadEnqueue, &l.enqueues) })
	wg.Go(func() { l.run(ctx, pool, "claim", loadClaim, &l.claims) })
	return l, func() {
		cancel()
		wg.Wait()
		for _, err := range l.errs {
			t.Errorf("write during the migration: %v", err)
		}
	}
}

// TestMigrationsRunBesideWrites (item 6 of issue 12): every migration, run against a
// loaded table while enqueues and claims go on, lets them go on. An index build is made
// slow by a transaction holding an old snapshot (a concurrent build waits for it);
// claims and enqueues must continue while it waits: a build inside the version's
// transaction would hold writes off for its whole length. The longest stall of any
// enqueue or claim over all the migrations is reported.
func TestMigrationsRunBesideWrites(t *testing.T) {
	ctx := context.Background()
	pool := emptyPool(t)
	if _, err := postgres.MigrateUp(ctx, pool); err != nil {
		t.Fatal(err)
	}
	migs, _ := postgres.Migrations()
	if _, err := postgres.MigrateDown(ctx, pool, len(migs)-1); err != nil {
		t.Fatal(err)
	}
	// 200,000 tasks, most of them finished, as version 1 has them.
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, status, attempt_count, completed_at, created_at)
		SELECT gen_random_uuid(), 'q' || (g % 20), 'k' || (g % 7), CASE WHEN g % 10 = 0 THEN 'PENDING' ELSE 'SUCCEEDED' END,
		       CASE WHEN g % 10 = 0 THEN 0 ELSE 1 END, CASE WHEN g % 10 = 0 THEN NULL ELSE now() - (g % 1000) * interval '1 minute' END,
		       now() - (g % 1000) * interval '1 minute'
		FROM generate_series(1, 200000) AS g`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)

	// The snapshot that a concurrent index build must wait for.
	blocker, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Release()
	if _, err := blocker.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1`); err != nil {
		t.Fatal(err)
	}

	load, stop := startWriteLoad(t, pool)
	migrated := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := postgres.MigrateUp(ctx, pool)
		migrated <- err
	}()
	// A concurrent build is waiting for the old snapshot: claims and enqueues go on.
	poll.Until(t, "a concurrent index build waiting for the old snapshot", time.Minute, 10*time.Millisecond, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE query ILIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock')`).Scan(&waiting)
		return err == nil && waiting
	})
	claims, enqueues := load.claims.Load(), load.enqueues.Load()
	poll.Until(t, "50 claims and 50 enqueues while the index build waits", 30*time.Second, 10*time.Millisecond, func() bool {
		return load.claims.Load() >= claims+50 && load.enqueues.Load() >= enqueues+50
	})
	if _, err := blocker.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-migrated; err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	took := time.Since(start)
	stop()
	if err := postgres.CheckSchema(ctx, pool); err != nil {
		t.Fatal(err)
	}
	t.Logf("migrations 2-%d on 200,000 tasks took %s beside %d claims and %d enqueues; longest stall: %s (%s)",
		migs[len(migs)-1].Version, took.Round(time.Millisecond), load.claims.Load(), load.enqueues.Load(),
		load.longest.Round(time.Millisecond), load.longestWhat)
}

// TestMigrationLockWaitDoesNotQueueWrites: DDL that needs a strong lock (0007 replaces
// a trigger of rota.tasks) waits for a long reader; every write that arrives meanwhile
// would queue behind it for as long as the reader runs. With lock_timeout the
// migration gives up after a moment and tries again, so writes get through, and it
// succeeds once the reader is gone.
func TestMigrationLockWaitDoesNotQueueWrites(t *testing.T) {
	defer postgres.SetMigrationLockTimeout(100 * time.Millisecond)()
	ctx := context.Background()
	pool := emptyPool(t)
	if _, err := postgres.MigrateUp(ctx, pool); err != nil {
		t.Fatal(err)
	}
	migs, _ := postgres.Migrations()
	if _, err := postgres.MigrateDown(ctx, pool, len(migs)-6); err != nil { // back to 0006
		t.Fatal(err)
	}
	reader, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Release()
	if _, err := reader.Exec(ctx, `BEGIN; SELECT count(*) FROM rota.tasks`); err != nil {
		t.Fatal(err)
	}
	migrated := make(chan error, 1)
	go func() {
		_, err := postgres.MigrateUp(ctx, pool)
		migrated <- err
	}()
	poll.Until(t, "the migration waiting for its lock", 30*time.Second, 5*time.Millisecond, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE NOT granted AND relation = 'rota.tasks'::regclass)`).Scan(&waiting)
		return err == nil && waiting
	})
	// Enqueues get through while the reader still holds its lock (without lock_timeout
	// they would wait for the reader's end, which comes only after them).
	writeCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for range 5 {
		if _, err := pool.Exec(writeCtx, loadEnqueue); err != nil {
			t.Fatalf("an enqueue while the migration waits for its lock: %v", err)
		}
	}
	if _, err := reader.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-migrated; err != nil {
		t.Fatalf("migrate up after the reader ended: %v", err)
	}
	if err := postgres.CheckSchema(ctx, pool); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptedConcurrentIndexIsRebuilt: CREATE INDEX CONCURRENTLY that is interrupted
// leaves an invalid index behind, which IF NOT EXISTS would keep (never used for reads,
// still paid for by every write). Running the migration again drops and rebuilds it.
func TestInterruptedConcurrentIndexIsRebuilt(t *testing.T) {
	ctx := context.Background()
	pool := emptyPool(t)
	if _, err := postgres.MigrateUp(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// 0010 and its indexes go, with every later migration.
	migs, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	since0010 := len(slices.DeleteFunc(migs, func(m postgres.Migration) bool { return m.Version < 10 }))
	if _, err := postgres.MigrateDown(ctx, pool, since0010); err != nil {
		t.Fatal(err)
	}
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind) SELECT gen_random_uuid(), 'q', 'k' FROM generate_series(1, 10)`)
	// An interrupted build: a unique index that fails on the duplicates leaves an
	// invalid index of the name 0010 creates.
	_, err = pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY tasks_list ON rota.tasks (queue)`)
	if err == nil {
		t.Fatal("the failing build succeeded")
	}
	if valid := indexValid(t, pool, "rota.tasks_list"); valid == nil || *valid {
		t.Fatalf("want an invalid index rota.tasks_list left behind, got valid=%v", valid)
	}
	if _, err := postgres.MigrateUp(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if valid := indexValid(t, pool, "rota.tasks_list"); valid == nil || !*valid {
		t.Fatalf("rota.tasks_list after migrate up: valid=%v, want valid", valid)
	}
	var def string
	if err := pool.QueryRow(ctx, `SELECT pg_get_indexdef('rota.tasks_list'::regclass)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	// 0010 rebuilt it (id DESC), then 0030 replaced it with its ascending form.
	if want := "CREATE INDEX tasks_list ON rota.tasks USING btree (queue, kind, status, id) WHERE (status <> 'PROCESSING'::text)"; def != want {
		t.Fatalf("rota.tasks_list is\n%s\nwant\n%s", def, want)
	}
}

// indexValid reports whether the index exists (nil = no) and is valid.
func indexValid(t *testing.T, pool *pgxpool.Pool, name string) *bool {
	t.Helper()
	var valid *bool
	err := pool.QueryRow(context.Background(), `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, name).Scan(&valid)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return valid
}
