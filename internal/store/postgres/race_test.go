package postgres_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// These tests pin down what a statement sees when another transaction commits a change
// to a row it is about to write, while it waits (READ COMMITTED). The interleaving is made
// deterministic: the other transaction is held open until the statement is seen waiting
// on it in pg_locks, then committed.

// TestRecordOutcomesAfterConcurrentWrite: an outcome that waited for another write to its
// task is decided on the version that write committed. A heartbeat (which keeps running
// while the outcome waits in the committer) or a cancel request must not make the outcome
// look like a lost lease; a reaped lease must.
func TestRecordOutcomesAfterConcurrentWrite(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()

	cases := []struct {
		name string
		kind store.OutcomeKind
		// concurrent is the write committed while the outcome waits.
		concurrent func(task *store.Task) (sql string, args []any)
		// prepare runs before the concurrent write (nil: nothing).
		prepare     func(task *store.Task)
		wantStatus  store.Status         // the task's status afterwards
		wantLost    bool                 // the outcome reports ErrLeaseLost
		wantAttempt store.AttemptOutcome // the attempt's outcome afterwards
	}{
		{
			name: "heartbeat extends the lease",
			kind: store.Succeed,
			concurrent: func(task *store.Task) (string, []any) {
				return querySQL(t, "heartbeat.sql"), []any{task.ID, task.LeaseToken, time.Minute}
			},
			wantStatus: store.StatusSucceeded, wantAttempt: store.OutcomeSucceeded,
		},
		{
			name: "cancel requested",
			kind: store.Retry,
			concurrent: func(task *store.Task) (string, []any) {
				return querySQL(t, "cancel_task.sql"), []any{task.ID}
			},
			wantStatus: store.StatusCanceled, wantAttempt: store.OutcomeCanceled,
		},
		{
			name:    "lease reaped",
			kind:    store.Succeed,
			prepare: func(task *store.Task) { expireLease(t, pool, task.ID) },
			concurrent: func(*store.Task) (string, []any) {
				return querySQL(t, "reap_expired_leases.sql"), []any{10, 0.0, 0.0, []uuid.UUID{}, 0.0}
			},
			wantStatus: store.StatusPending, wantLost: true, wantAttempt: store.OutcomeLeaseExpired,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := claimOnly(t, st, store.CreateParams{Kind: "noop"})
			if tc.prepare != nil {
				tc.prepare(task)
			}
			sql, args := tc.concurrent(task)
			tx, holder := beginHolding(t, pool, sql, args...)

			type result struct {
				res []store.OutcomeResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: tc.kind}})
				done <- result{res, err}
			}()
			waitForLockWaiter(t, pool, holder, done)
			if err := tx.Commit(ctx); err != nil {
				t.Fatalf("commit the concurrent write: %v", err)
			}

			r := <-done
			if r.err != nil || len(r.res) != 1 {
				t.Fatalf("RecordOutcomes: %v, %v", r.res, r.err)
			}
			switch got := r.res[0]; {
			case tc.wantLost && !errors.Is(got.Err, store.ErrLeaseLost):
				t.Errorf("outcome %+v, want ErrLeaseLost", got)
			case !tc.wantLost && (got.Err != nil || got.Status != tc.wantStatus):
				t.Errorf("outcome %+v, want status %s", got, tc.wantStatus)
			}
			if got := mustGet(t, st, task.ID); got.Status != tc.wantStatus {
				t.Errorf("task is %s, want %s", got.Status, tc.wantStatus)
			}
			attempts := mustAttempts(t, st, task.ID)
			if len(attempts) != 1 || attempts[0].Outcome != tc.wantAttempt {
				t.Errorf("attempts %+v, want one %s", attempts, tc.wantAttempt)
			}
		})
	}
}

// TestReapAfterConcurrentWrite: a task whose expired lease was written by another
// transaction after the reaper's statement began (here a cancel request) is reaped, not
// locked and then left alone. The reaper never waits for a row lock (SKIP LOCKED), so the
// window is the time between its snapshot and its lock on that row: a trigger holds the
// reaper inside its first update (the earlier-expired task) while the cancel commits.
func TestReapAfterConcurrentWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	// The plan a real table gets: the reaper locks and updates one expired row at a time
	// (a nested loop of lookups). On this tiny table the planner may prefer a hash join,
	// which locks every row before the first update and leaves no room for the trigger.
	cfg.ConnConfig.RuntimeParams["enable_hashjoin"] = "off"
	cfg.ConnConfig.RuntimeParams["enable_mergejoin"] = "off"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := postgres.New(pool)
	t.Cleanup(st.Close)

	first := claimOnly(t, st, store.CreateParams{Kind: "held"})
	second := claimOnly(t, st, store.CreateParams{Kind: "noop"})
	exec(t, pool, `UPDATE rota.tasks SET lease_expires_at = now() - interval '2 seconds' WHERE id = $1`, first.ID)
	exec(t, pool, `UPDATE rota.tasks SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, second.ID)
	exec(t, pool, `
CREATE FUNCTION public.hold_reaping() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(4242);
    RETURN NEW;
END
$$;
CREATE TRIGGER hold_reaping BEFORE UPDATE ON rota.tasks FOR EACH ROW
    WHEN (OLD.kind = 'held' AND NEW.status <> 'PROCESSING')
    EXECUTE FUNCTION public.hold_reaping();`)
	tx, holder := beginHolding(t, pool, `SELECT pg_advisory_xact_lock(4242)`)

	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10})
		done <- result{n, err}
	}()
	waitForLockWaiter(t, pool, holder, done)
	// The reaper has taken its snapshot and holds the first task; the second is not
	// locked yet (NOWAIT fails the test rather than hang if it were).
	exec(t, pool, `SELECT id FROM rota.tasks WHERE id = $1 FOR UPDATE NOWAIT`, second.ID)
	if _, err := st.CancelTask(ctx, second.ID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	r := <-done
	if r.err != nil || r.n != 2 {
		t.Errorf("reaped %d, %v; want 2", r.n, r.err)
	}
	for _, c := range []struct {
		id          uuid.UUID
		wantStatus  store.Status
		wantAttempt store.AttemptOutcome
	}{
		{first.ID, store.StatusPending, store.OutcomeLeaseExpired},
		{second.ID, store.StatusCanceled, store.OutcomeLeaseExpired},
	} {
		if got := mustGet(t, st, c.id); got.Status != c.wantStatus || got.LeaseToken != uuid.Nil {
			t.Errorf("task %s is %s (token %s), want %s without a lease", c.id, got.Status, got.LeaseToken, c.wantStatus)
		}
		if attempts := mustAttempts(t, st, c.id); len(attempts) != 1 || attempts[0].Outcome != c.wantAttempt {
			t.Errorf("task %s: attempts %+v, want one %s", c.id, attempts, c.wantAttempt)
		}
	}
}

// querySQL is the text of one of the store's statements, run here by hand inside a
// transaction the test controls.
func querySQL(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("queries", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// beginHolding runs sql in a new transaction and leaves it open (rolled back at the end
// of the test unless committed), returning it and its backend's pid.
func beginHolding(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) (pgx.Tx, uint32) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	rows, err := tx.Query(ctx, sql, args...)
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if rows.CommandTag().RowsAffected() == 0 {
		t.Fatalf("the concurrent statement touched no row: %s", sql)
	}
	return tx, tx.Conn().PgConn().PID()
}

// waitForLockWaiter returns once some backend waits for a lock that backend holder
// holds. It fails the test if done receives first (the statement did not wait).
func waitForLockWaiter[T any](t *testing.T, pool *pgxpool.Pool, holder uint32, done <-chan T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		err := pool.QueryRow(context.Background(),
			`SELECT EXISTS (SELECT FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)))`,
			int32(holder)).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("the statement finished without waiting for the concurrent transaction: %+v", r)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no statement waits for the concurrent transaction")
		}
	}
}

// succeedBehind records task's success while tx (on the connection with backend pid
// holder) is open, checks that the outcome waits for one of tx's locks, then commits tx
// and fails the test unless the outcome was written.
func succeedBehind(t *testing.T, st *postgres.Store, pool *pgxpool.Pool, tx pgx.Tx, holder uint32, task *store.Task) {
	t.Helper()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		res, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}})
		if err == nil && res[0].Err != nil {
			err = res[0].Err
		}
		done <- err
	}()
	waitForLockWaiter(t, pool, holder, done)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("RecordOutcomes: %v", err)
	}
}
