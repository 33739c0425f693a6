package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// How migrations run without stopping a live database (docs/architecture.md, "Online
// migrations"):
//
//   - A migration file whose first line is outsideTxDirective runs outside any
//     transaction, one statement at a time: that is how CREATE INDEX CONCURRENTLY and
//     DROP INDEX CONCURRENTLY must run, and they do not block writes while they build.
//     Its version is recorded after its last statement, so an interrupted run is resumed
//     by running it again: each statement must be safe to repeat (IF NOT EXISTS, IF
//     EXISTS), and an invalid index that an interrupted CREATE INDEX CONCURRENTLY left
//     behind is dropped (concurrently) and built again rather than kept by IF NOT EXISTS.
//   - Every other migration runs in one transaction with lock_timeout set: DDL that
//     needs a strong lock on a busy table (ALTER TABLE, CREATE TRIGGER) gives up after
//     migrationLockTimeout instead of queueing every enqueue and claim behind it while
//     it waits for a long transaction, and is tried again (migrationLockRetries times).
//   - A session-level advisory lock, held on one connection for the whole run,
//     serialises migrators (two servers starting at once).

// outsideTxDirective marks a migration file (its first line) whose statements run one
// by one outside a transaction. Its statements end with a semicolon at the end of a
// line and hold no dollar-quoted bodies.
const outsideTxDirective = "-- rota:no-transaction"

// Lock waits of migration DDL: how long one attempt waits for a lock, and how many
// attempts a migration gets. Variables so that tests can shorten them.
// A write that arrives while DDL waits for its lock queues behind it, so the timeout is
// also the longest stall a waiting migration can cause; the retries (with backoff up to
// a second) give a busy table about two minutes to let the migration in.
var (
	migrationLockTimeout = time.Second
	migrationLockRetries = 60
)

// withMigrationLock runs fn on one connection that holds the migration lock.
func withMigrationLock(ctx context.Context, pool *pgxpool.Pool, fn func(*pgx.Conn) error) error {
	if _, err := pool.Exec(ctx, migrationsTable); err != nil && !isUniqueViolation(err) {
		// Two migrators creating the schema at once may race on the catalog; the loser's
		// unique violation is harmless because the winner created the same objects.
		return fmt.Errorf("create migrations table: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		// Session state is unknown (the lock may be held): do not give the connection back.
		_ = conn.Conn().Close(context.Background())
		return fmt.Errorf("migration lock: %w", err)
	}
	fnErr := fn(conn.Conn())
	// Leave the session as it was found: unlocked, default lock_timeout. If that fails,
	// close the connection, which releases the lock too.
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1); RESET lock_timeout`, migrationLockKey); err != nil {
		_ = conn.Conn().Close(context.Background())
	}
	return fnErr
}

func isApplied(ctx context.Context, conn *pgx.Conn, version int) (bool, error) {
	var done bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM rota.schema_migrations WHERE version = $1)`, version).Scan(&done)
	return done, err
}

// applyMigration runs one migration file's SQL and then record (which writes or deletes
// its version row), in one transaction or, for a file marked outsideTxDirective,
// statement by statement.
func applyMigration(ctx context.Context, conn *pgx.Conn, sql string, record func(context.Context, querier) error) error {
	if !isOutsideTx(sql) {
		return retryOnLockTimeout(ctx, func() error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, migrationLockTimeout.Milliseconds())); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
				return record(ctx, tx)
			})
		})
	}
	stmts, err := splitStatements(sql)
	if err != nil {
		return err
	}
	for _, stmt := range stmts {
		if err := retryOnLockTimeout(ctx, func() error { return execOutsideTx(ctx, conn, stmt) }); err != nil {
			return fmt.Errorf("%w\nin statement: %s", err, stmt)
		}
	}
	return retryOnLockTimeout(ctx, func() error {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`SET lock_timeout = %d`, migrationLockTimeout.Milliseconds())); err != nil {
			return err
		}
		return record(ctx, conn)
	})
}

// execOutsideTx runs one statement of an outsideTxDirective file. A concurrent index
// build waits for older transactions but blocks no writer, so it runs without a lock
// timeout; anything else gets migrationLockTimeout. Before CREATE INDEX CONCURRENTLY, an
// invalid index of the same name (a build that was interrupted) is dropped.
func execOutsideTx(ctx context.Context, conn *pgx.Conn, stmt string) error {
	timeout := migrationLockTimeout.Milliseconds()
	if concurrently.MatchString(stmt) {
		timeout = 0
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`SET lock_timeout = %d`, timeout)); err != nil {
		return err
	}
	if m := createIndexConcurrently.FindStringSubmatch(stmt); m != nil {
		if err := dropInvalidIndex(ctx, conn, m[2]+"."+m[1]); err != nil {
			return err
		}
	}
	_, err := conn.Exec(ctx, stmt)
	return err
}

var (
	concurrently = regexp.MustCompile(`(?i)\bCONCURRENTLY\b`)
	// CREATE [UNIQUE] INDEX CONCURRENTLY [IF NOT EXISTS] name ON schema.table: the name
	// and the schema (an index lives in its table's schema).
	createIndexConcurrently = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)\s+ON\s+(?:ONLY\s+)?([a-z_][a-z0-9_]*)\.`)
)

// dropInvalidIndex drops the index name (schema-qualified) if it exists but is invalid,
// which is what an interrupted CREATE INDEX CONCURRENTLY leaves behind: IF NOT EXISTS
// would keep it, and an invalid index is never used for reads but still costs writes.
func dropInvalidIndex(ctx context.Context, conn *pgx.Conn, name string) error {
	var invalid bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_index WHERE indexrelid = to_regclass($1) AND NOT indisvalid)`, name).Scan(&invalid)
	if err != nil || !invalid {
		return err
	}
	if _, err := conn.Exec(ctx, `SET lock_timeout = 0`); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+name)
	return err
}

// retryOnLockTimeout runs fn again while it fails only because a lock wait timed out.
func retryOnLockTimeout(ctx context.Context, fn func() error) error {
	var err error
	for attempt := range migrationLockRetries {
		if err = fn(); !isLockTimeout(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(attempt+1)*100*time.Millisecond, time.Second)):
		}
	}
	return fmt.Errorf("gave up after %d lock timeouts of %s (a long transaction holds a lock on the table; end it and run again): %w",
		migrationLockRetries, migrationLockTimeout, err)
}

func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

func isOutsideTx(sql string) bool {
	first, _, _ := strings.Cut(sql, "\n")
	return strings.TrimSpace(first) == outsideTxDirective
}

// splitStatements cuts an outsideTxDirective file into statements: each ends with a
// semicolon at the end of a line. Whole-line comments are dropped.
func splitStatements(sql string) ([]string, error) {
	if strings.Contains(sql, "$$") {
		return nil, errors.New("a " + outsideTxDirective + " migration cannot hold dollar-quoted bodies")
	}
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(sql) {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue // whole-line comments go, so that a statement starts with its verb
		}
		cur.WriteString(line)
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		return nil, errors.New("the last statement does not end with a semicolon")
	}
	return out, nil
}
