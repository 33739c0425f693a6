package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store/postgres"
)

// Database is where a benchmark runs: its own database (CreateDatabase) or the caller's
// (OpenInPlace).
type Database struct {
	// Name is the database's name.
	Name string
	// Pool is open on it, with the schema migrated.
	Pool *pgxpool.Pool
	// admin connects to the server's original database, to drop Name; nil in place.
	admin *pgx.ConnConfig
}

// poolConns is the pool size unless the URL sets pool_max_conns: the worker's fetcher,
// committer, heartbeats and reaper run at once with up to 8 inserting goroutines.
const poolConns = 20

// CreateDatabase creates a database rota_bench_<random> on the server of serverURL,
// applies every migration to it and returns it with a pool open. The role needs the
// CREATEDB privilege; without it the error wraps ErrCreateDatabase and says what to do.
func CreateDatabase(ctx context.Context, serverURL string) (*Database, error) {
	cfg, err := poolConfig(serverURL)
	if err != nil {
		return nil, err
	}
	admin := cfg.ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	name := "rota_bench_" + randomHex(4)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
			return nil, fmt.Errorf("%w: role %q may not create databases (%s): grant it CREATEDB, "+
				"or pass --in-place to run in this database's rota schema", ErrCreateDatabase, admin.User, pgErr.Message)
		}
		return nil, fmt.Errorf("%w: %w", ErrCreateDatabase, err)
	}
	db := &Database{Name: name, admin: admin}
	cfg.ConnConfig.Database = name
	db.Pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		_, err = postgres.MigrateUp(ctx, db.Pool)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("migrate database %s: %w", name, err), db.Close(context.WithoutCancel(ctx), nil, false))
	}
	return db, nil
}

// OpenInPlace opens the database of databaseURL itself. Its rota schema must be up to
// date (rota migrate up): a benchmark changes no schema it did not create.
func OpenInPlace(ctx context.Context, databaseURL string) (*Database, error) {
	cfg, err := poolConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	db := &Database{Pool: pool}
	err = pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db.Name)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	statuses, err := postgres.MigrationStatuses(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("read the schema's migrations: %w", err)
	}
	for _, s := range statuses {
		if s.AppliedAt == nil {
			pool.Close()
			return nil, fmt.Errorf("the rota schema of database %s is not up to date (migration %04d_%s is pending): run 'rota migrate up' first",
				db.Name, s.Version, s.Name)
		}
	}
	return db, nil
}

// Close closes the pool and cleans up: a created database is dropped, unless keep; in
// place, the tasks of target's queue are deleted, unless keep. target may be nil.
func (db *Database) Close(ctx context.Context, target *Target, keep bool) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var err error
	if db.admin == nil && target != nil && !keep {
		err = target.deleteQueue(ctx)
	}
	if db.Pool != nil {
		db.Pool.Close()
	}
	if db.admin == nil || keep {
		return err
	}
	conn, cerr := pgx.ConnectConfig(ctx, db.admin)
	if cerr != nil {
		return fmt.Errorf("drop database %s: %w", db.Name, cerr)
	}
	defer conn.Close(ctx)
	if _, cerr := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+db.Name+` WITH (FORCE)`); cerr != nil {
		return fmt.Errorf("drop database %s: %w", db.Name, cerr)
	}
	return nil
}

// poolConfig parses a URL (or key=value string) the way `rota` does everywhere.
func poolConfig(databaseURL string) (*pgxpool.Config, error) {
	if databaseURL == "" {
		return nil, errors.New("no database URL")
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = poolConns
	}
	return cfg, nil
}
