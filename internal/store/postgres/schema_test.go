package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// emptyPool is a pool on a new database with no schema at all (not cloned from the
// migrated template).
func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	admin := pgtest.AdminURL(t)
	ctx := context.Background()
	name := fmt.Sprintf("rota_test_empty_%d", time.Now().UnixNano())
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), admin); err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			c.Close(context.Background())
		}
	})
	pool, err := pgxpool.New(ctx, pgtest.WithDatabase(t, admin, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	pool := emptyPool(t)
	ctx := context.Background()
	migs, err := postgres.Migrations()
	if err != nil || len(migs) == 0 {
		t.Fatalf("migrations: %v, %v", migs, err)
	}

	statuses, err := postgres.MigrationStatuses(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range statuses {
		if s.AppliedAt != nil {
			t.Errorf("migration %d applied on an empty database", s.Version)
		}
	}
	applied, err := postgres.MigrateUp(ctx, pool)
	if err != nil || len(applied) != len(migs) {
		t.Fatalf("up: %v, %v", applied, err)
	}
	if again, err := postgres.MigrateUp(ctx, pool); err != nil || len(again) != 0 {
		t.Errorf("second up: %v, %v; want a no-op", again, err)
	}
	statuses, err = postgres.MigrationStatuses(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range statuses {
		if s.AppliedAt == nil {
			t.Errorf("migration %d not applied after up", s.Version)
		}
	}
	// The schema works.
	st := postgres.New(pool)
	defer st.Close()
	mustCreate(t, st, store.CreateParams{Kind: "noop"})

	reverted, err := postgres.MigrateDown(ctx, pool, 0)
	if err != nil || len(reverted) != len(migs) {
		t.Fatalf("down: %v, %v", reverted, err)
	}
	for _, table := range []string{"rota.tasks", "rota.task_attempts", "rota.dead_letters"} {
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil || exists {
			t.Errorf("%s exists after down (%v)", table, err)
		}
	}
	var functions int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_proc WHERE pronamespace = 'rota'::regnamespace`).Scan(&functions); err != nil || functions != 0 {
		t.Errorf("%d functions left in schema rota after down (%v)", functions, err)
	}
	statuses, err = postgres.MigrationStatuses(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range statuses {
		if s.AppliedAt != nil {
			t.Errorf("migration %d still applied after down", s.Version)
		}
	}
	if again, err := postgres.MigrateDown(ctx, pool, 0); err != nil || len(again) != 0 {
		t.Errorf("second down: %v, %v; want a no-op", again, err)
	}
	if applied, err := postgres.MigrateUp(ctx, pool); err != nil || len(applied) != len(migs) {
		t.Errorf("up after down: %v, %v", applied, err)
	}
}

// TestCheckSchema: a process starts only on the schema it was built for: not on an empty
// or partly migrated database, nor on one a newer release migrated.
func TestCheckSchema(t *testing.T) {
	t.Parallel()
	pool := emptyPool(t)
	ctx := context.Background()
	if err := postgres.CheckSchema(ctx, pool); !errors.Is(err, postgres.ErrSchemaBehind) {
		t.Fatalf("empty database: %v, want ErrSchemaBehind", err)
	}
	if _, err := postgres.MigrateUp(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, pool); err != nil {
		t.Fatalf("migrated database: %v", err)
	}
	if _, err := postgres.MigrateDown(ctx, pool, 1); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, pool); !errors.Is(err, postgres.ErrSchemaBehind) || !strings.Contains(err.Error(), "pending") {
		t.Fatalf("one migration down: %v, want ErrSchemaBehind naming the pending one", err)
	}
	if _, err := postgres.MigrateUp(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO rota.schema_migrations (version, name) VALUES (9999, 'from_the_future')`); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, pool); !errors.Is(err, postgres.ErrSchemaAhead) || !strings.Contains(err.Error(), "9999") {
		t.Fatalf("a newer release's migration applied: %v, want ErrSchemaAhead naming it", err)
	}
}

// TestDatabaseEnforcesStateMachine: hand-written SQL cannot make an illegal transition.
func TestDatabaseEnforcesStateMachine(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	pending := mustCreate(t, st, store.CreateParams{Kind: "noop"})[0]
	running := claimOnly(t, st, store.CreateParams{Kind: "noop"})
	done := claimOnly(t, st, store.CreateParams{Kind: "noop"})
	if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: done.ID, LeaseToken: done.LeaseToken, Kind: store.Succeed}}); err != nil {
		t.Fatal(err)
	}
	future := mustCreate(t, st, store.CreateParams{Kind: "noop", ScheduledFor: time.Now().Add(time.Hour)})[0]

	for _, tc := range []struct {
		name, sql string
		args      []any
	}{
		{"PENDING -> SUCCEEDED", `UPDATE rota.tasks SET status = 'SUCCEEDED', completed_at = now() WHERE id = $1`, []any{pending.ID}},
		{"PENDING -> DEAD", `UPDATE rota.tasks SET status = 'DEAD' WHERE id = $1`, []any{pending.ID}},
		{"SUCCEEDED -> PENDING", `UPDATE rota.tasks SET status = 'PENDING' WHERE id = $1`, []any{done.ID}},
		{"SUCCEEDED -> PROCESSING", `UPDATE rota.tasks SET status = 'PROCESSING', worker_id = 'w', lease_token = gen_random_uuid(),
			lease_expires_at = now(), attempt_count = attempt_count + 1 WHERE id = $1`, []any{done.ID}},
		{"new lease token while PROCESSING", `UPDATE rota.tasks SET lease_token = gen_random_uuid() WHERE id = $1`, []any{running.ID}},
		{"claim without counting the attempt", `UPDATE rota.tasks SET status = 'PROCESSING', worker_id = 'w', lease_token = gen_random_uuid(),
			lease_expires_at = now() WHERE id = $1`, []any{pending.ID}},
		{"claim before due", `UPDATE rota.tasks SET status = 'PROCESSING', worker_id = 'w', lease_token = gen_random_uuid(),
			lease_expires_at = now(), attempt_count = 1 WHERE id = $1`, []any{future.ID}},
	} {
		_, err := pool.Exec(ctx, tc.sql, tc.args...)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != "tasks_status_transition" {
			t.Errorf("%s: %v, want a check_violation of tasks_status_transition", tc.name, err)
			continue
		}
		if err := postgres.Translate("op", err); !errors.Is(err, store.ErrIllegalTransition) {
			t.Errorf("%s: translated to %v, want ErrIllegalTransition", tc.name, err)
		}
	}
	// The rows are untouched.
	for id, want := range map[any]store.Status{pending.ID: store.StatusPending, running.ID: store.StatusProcessing, done.ID: store.StatusSucceeded} {
		var status string
		if err := pool.QueryRow(ctx, `SELECT status FROM rota.tasks WHERE id = $1`, id).Scan(&status); err != nil || store.Status(status) != want {
			t.Errorf("task %v is %s (%v), want %s", id, status, err, want)
		}
	}
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want error
	}{
		{pgx.ErrNoRows, store.ErrNotFound},
		{fmt.Errorf("wrapped: %w", pgx.ErrNoRows), store.ErrNotFound},
		{&pgconn.PgError{Code: "23514", ConstraintName: "tasks_status_transition"}, store.ErrIllegalTransition},
		{&pgconn.PgError{Code: "23505", ConstraintName: "tasks_idempotency_key"}, store.ErrConflict},
		{&pgconn.PgError{Code: "22021", Message: `invalid byte sequence for encoding "UTF8": 0x00`}, store.ErrInvalid},
		{&pgconn.PgError{Code: "22P05", Message: "unsupported Unicode escape sequence"}, store.ErrInvalid},
	} {
		err := postgres.Translate("do thing", tc.err)
		if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), "do thing: ") {
			t.Errorf("translate(%v) = %v, want %v", tc.err, err, tc.want)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			t.Errorf("translate(%v) leaks the pgx error", tc.err)
		}
	}
	other := &pgconn.PgError{Code: "23514", ConstraintName: "tasks_attempts_bounded"}
	if err := postgres.Translate("x", other); errors.Is(err, store.ErrIllegalTransition) || !errors.Is(err, other) {
		t.Errorf("other check violation translated to %v", err)
	}
	if postgres.Translate("x", nil) != nil {
		t.Error("translate(nil) != nil")
	}
}

// TestTranslateUnstorableText: text PostgreSQL cannot store is the caller's input, so it
// is ErrInvalid (a 400), whichever statement meets it first.
func TestTranslateUnstorableText(t *testing.T) {
	t.Parallel()
	_, pool := newStore(t)
	for _, tc := range []struct {
		sql  string
		args []any
	}{
		{"SELECT $1::text", []any{"\x00"}},
		{"SELECT $1::text", []any{"\xff"}},
		{`SELECT '"\u0000"'::jsonb`, nil},
	} {
		_, err := pool.Exec(context.Background(), tc.sql, tc.args...)
		if err == nil {
			t.Fatalf("%s %q: no error", tc.sql, tc.args)
		}
		if err := postgres.Translate("op", err); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s %q: translated to %v, want ErrInvalid", tc.sql, tc.args, err)
		}
	}
}

// TestClaimUsesPartialIndex: the claim statement walks tasks_claim_pending (or
// tasks_claim_enqueued) in claim order, with a custom plan and with the generic plan that
// PostgreSQL caches for prepared statements, on a table mostly full of finished tasks.
func TestClaimUsesPartialIndex(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	exec(t, pool, `INSERT INTO rota.tasks (id, queue, kind, status, completed_at)
		SELECT gen_random_uuid(), 'q' || (i % 4), 'k', 'PENDING', NULL FROM generate_series(1, 20000) i`)
	exec(t, pool, `UPDATE rota.tasks SET status = 'CANCELED', completed_at = now() WHERE random() < 0.9`)
	// A backlog in both claimable statuses (with none, any index is as good as another).
	exec(t, pool, `UPDATE rota.tasks SET status = 'ENQUEUED', enqueued_at = now() WHERE status = 'PENDING' AND random() < 0.5`)
	exec(t, pool, `ANALYZE rota.tasks`)

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The claim is a function (migration 0027) that plans its statement once per session,
	// generic, with enable_seqscan = off: that plan, and a custom one, must walk the index.
	for _, tc := range []struct{ function, index string }{
		{"claim_tasks_pending", "tasks_claim_pending"},
		{"claim_tasks_enqueued", "tasks_claim_enqueued"},
	} {
		sql := functionQuery(t, conn.Conn(), tc.function)
		if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		custom := explain(t, conn.Conn(), "EXPLAIN "+sql, "q1", 10, "w", time.Minute, nil, nil, nil)
		if !strings.Contains(custom, "Index Scan using "+tc.index) {
			t.Errorf("custom plan does not use %s:\n%s", tc.index, custom)
		}
		if _, err := conn.Exec(ctx, `PREPARE claim AS `+sql); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
			t.Fatal(err)
		}
		generic := explain(t, conn.Conn(), `EXPLAIN EXECUTE claim('q1', 10, 'w', '1 minute', NULL, NULL, NULL)`)
		if !strings.Contains(generic, "Index Scan using "+tc.index) {
			t.Errorf("generic plan does not use %s:\n%s", tc.index, generic)
		}
		if _, err := conn.Exec(ctx, `DEALLOCATE claim; RESET plan_cache_mode; RESET enable_seqscan`); err != nil {
			t.Fatal(err)
		}
	}
	// And the statement does claim from the big table.
	if got := mustClaim(t, st, store.ClaimParams{Queue: "q1", Limit: 10}); len(got) != 10 {
		t.Errorf("claimed %d, want 10", len(got))
	}
}

// functionQuery returns the statement that PL/pgSQL function rota.<name> returns (its
// RETURN QUERY), with its parameters as $1..$n of their declared types, so that a test
// can EXPLAIN it as the function runs it.
func functionQuery(t *testing.T, conn *pgx.Conn, name string) string {
	t.Helper()
	var src string
	var args, types []string
	if err := conn.QueryRow(context.Background(), `
		SELECT p.prosrc, p.proargnames[1:p.pronargs],
		       ARRAY(SELECT format_type(a.t, NULL) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY a (t, n) ORDER BY a.n)
		FROM pg_proc p WHERE p.proname = $1 AND p.pronamespace = 'rota'::regnamespace`, name).Scan(&src, &args, &types); err != nil {
		t.Fatalf("function rota.%s: %v", name, err)
	}
	start := strings.Index(src, "RETURN QUERY")
	end := strings.LastIndex(src, ";")
	if start < 0 || end < start {
		t.Fatalf("function rota.%s has no RETURN QUERY statement", name)
	}
	sql := src[start+len("RETURN QUERY") : end]
	// Longest names first, so that no name is replaced inside a longer one.
	order := make([]int, len(args))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return len(args[b]) - len(args[a]) })
	for _, i := range order {
		sql = strings.ReplaceAll(sql, args[i], fmt.Sprintf("$%d::%s", i+1, types[i]))
	}
	return sql
}

func explain(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
