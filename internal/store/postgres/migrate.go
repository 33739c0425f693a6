package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey serialises concurrent migrators (two servers starting at once) with an
// advisory lock, held by the session for the whole run (releases before 0010 took it per
// version transaction; the two kinds conflict, so old and new migrators still exclude
// each other). The value is arbitrary but fixed: "rota" in ASCII.
const migrationLockKey = 0x726f7461

// Migration is one schema version: NNNN_name.up.sql and NNNN_name.down.sql.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string
}

// MigrationStatus is a migration and when it was applied (nil = pending).
type MigrationStatus struct {
	Migration
	AppliedAt *time.Time
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.(up|down)\.sql$`)

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q: name must be NNNN_name.up.sql or .down.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2]}
			byVersion[v] = mig
		}
		if m[3] == "up" {
			mig.Up = string(body)
		} else {
			mig.Down = string(body)
		}
	}
	var out []Migration
	for _, m := range byVersion {
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migration %04d_%s needs both an up and a down file", m.Version, m.Name)
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	return out, nil
}

const migrationsTable = `
CREATE SCHEMA IF NOT EXISTS rota;
CREATE TABLE IF NOT EXISTS rota.schema_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// MigrateUp applies every pending migration, each in its own transaction (or, for a
// file marked outsideTxDirective, statement by statement), and returns the versions it
// applied. Running it again is a no-op; running it after an interrupted run resumes.
func MigrateUp(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	var applied []int
	err = withMigrationLock(ctx, pool, func(conn *pgx.Conn) error {
		for _, m := range migs {
			done, err := isApplied(ctx, conn, m.Version)
			if err != nil {
				return err
			}
			if done {
				continue
			}
			record := func(ctx context.Context, q querier) error {
				_, err := q.Exec(ctx, `INSERT INTO rota.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
				return err
			}
			if err := applyMigration(ctx, conn, m.Up, record); err != nil {
				return fmt.Errorf("migration %04d_%s up: %w", m.Version, m.Name, err)
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	return applied, err
}

// MigrateDown reverts the newest applied migration (steps times; steps <= 0 reverts
// all) and returns the versions it reverted.
func MigrateDown(ctx context.Context, pool *pgxpool.Pool, steps int) ([]int, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	var reverted []int
	err = withMigrationLock(ctx, pool, func(conn *pgx.Conn) error {
		for i := len(migs) - 1; i >= 0 && (steps <= 0 || len(reverted) < steps); i-- {
			m := migs[i]
			done, err := isApplied(ctx, conn, m.Version)
			if err != nil {
				return err
			}
			if !done {
				continue
			}
			unrecord := func(ctx context.Context, q querier) error {
				_, err := q.Exec(ctx, `DELETE FROM rota.schema_migrations WHERE version = $1`, m.Version)
				return err
			}
			if err := applyMigration(ctx, conn, m.Down, unrecord); err != nil {
				return fmt.Errorf("migration %04d_%s down: %w", m.Version, m.Name, err)
			}
			reverted = append(reverted, m.Version)
		}
		return nil
	})
	return reverted, err
}

// MigrationStatuses lists every known migration and whether it is applied.
func MigrationStatuses(ctx context.Context, pool *pgxpool.Pool) ([]MigrationStatus, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	applied, err := appliedVersions(ctx, pool)
	if err != nil {
		return nil, err
	}
	out := make([]MigrationStatus, len(migs))
	for i, m := range migs {
		out[i] = MigrationStatus{Migration: m}
		if at, ok := applied[m.Version]; ok {
			out[i].AppliedAt = &at
		}
	}
	return out, nil
}

// The ways the database's schema can differ from the one this binary was built for.
var (
	// ErrSchemaBehind: a migration this binary knows is not applied.
	ErrSchemaBehind = errors.New("the database schema is behind this rota binary")
	// ErrSchemaAhead: a migration this binary does not know is applied (a newer release
	// migrated the database).
	ErrSchemaAhead = errors.New("the database schema is ahead of this rota binary")
)

// CheckSchema returns nil when the database's schema is exactly this binary's, else an
// error wrapping ErrSchemaBehind or ErrSchemaAhead. Processes check it at
// start: statements written for another schema fail, or worse, half work (migration
// 0007 changed what a claim and an outcome write).
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) error {
	migs, err := Migrations()
	if err != nil {
		return err
	}
	applied, err := appliedVersions(ctx, pool)
	if err != nil {
		return err
	}
	known := make(map[int]bool, len(migs))
	for _, m := range migs {
		known[m.Version] = true
		if _, ok := applied[m.Version]; !ok {
			return fmt.Errorf("%w: migration %04d_%s is pending (run 'rota migrate up')", ErrSchemaBehind, m.Version, m.Name)
		}
	}
	var newer []int
	for v := range applied {
		if !known[v] {
			newer = append(newer, v)
		}
	}
	if len(newer) > 0 {
		slices.Sort(newer)
		return fmt.Errorf("%w: the database has migration %04d applied, which this binary does not know (its last is %04d): run the rota release that migrated it",
			ErrSchemaAhead, newer[len(newer)-1], migs[len(migs)-1].Version)
	}
	return nil
}

// appliedVersions reads rota.schema_migrations: version -> applied_at (empty when the
// table does not exist yet).
func appliedVersions(ctx context.Context, pool *pgxpool.Pool) (map[int]time.Time, error) {
	applied := map[int]time.Time{}
	rows, err := pool.Query(ctx, `SELECT version, applied_at FROM rota.schema_migrations`)
	if err == nil {
		for rows.Next() {
			var v int
			var at time.Time
			if err := rows.Scan(&v, &at); err != nil {
				rows.Close()
				return nil, err
			}
			applied[v] = at
		}
		rows.Close()
		err = rows.Err()
	}
	if err != nil && !isUndefinedTable(err) {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	return applied, nil
}

func isUndefinedTable(err error) bool {
	var pgErr interface{ SQLState() string }
	return errors.As(err, &pgErr) && (pgErr.SQLState() == "42P01" || pgErr.SQLState() == "3F000")
}

func isUniqueViolation(err error) bool {
	var pgErr interface{ SQLState() string }
	return errors.As(err, &pgErr) && pgErr.SQLState() == "23505"
}
