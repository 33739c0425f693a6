// Package pgtest gives each test its own PostgreSQL database, cloned from a migrated
// template, so tests run in parallel without seeing each other's rows.
//
// The server comes from ROTA_TEST_DATABASE_URL (scripts/pg.sh starts one). Without it a
// test is skipped on a developer's machine but fails when CI=true or
// ROTA_REQUIRE_INTEGRATION=1: CI must never pass by skipping the integration suites.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store/postgres"
)

// AdminURL returns the server URL, skipping or failing t when there is none.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("ROTA_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_INTEGRATION") != "" {
			t.Fatal("ROTA_TEST_DATABASE_URL is not set: integration tests must run in CI (use scripts/test.sh)")
		}
		t.Skip("ROTA_TEST_DATABASE_URL is not set; run scripts/test.sh to start PostgreSQL")
	}
	return u
}

// NewDatabase creates a fresh, migrated database for t, dropped when t ends, and
// returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: template database: %v", err)
	}
	name := "rota_test_" + randomSuffix()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if err := createFromTemplate(ctx, conn, name, tmpl); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = c.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
			c.Close(ctx)
		}
	})
	return WithDatabase(t, admin, name)
}

// NewPool is NewDatabase plus a pool closed when t ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return NewPoolConns(t, 0)
}

// NewPoolConns is NewPool with at most maxConns connections (0: pgxpool's default):
// one, for a test that reads its own backend's statistics; more, for a benchmark whose
// workers all hit the database at once.
func NewPoolConns(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(NewDatabase(t))
	if err != nil {
		t.Fatalf("pgtest: pool config: %v", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// WithDatabase returns admin with its database name replaced.
func WithDatabase(t testing.TB, admin, name string) string {
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("pgtest: parse %q: %v", admin, err)
	}
	u.Path = "/" + name
	return u.String()
}

// ensureTemplate creates (once per schema version, across test processes) a database
// with every migration applied, named after a hash of the migrations.
func ensureTemplate(ctx context.Context, admin string) (string, error) {
	migs, err := postgres.Migrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range migs {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", m.Version, m.Up, m.Down)
	}
	name := "rota_template_" + hex.EncodeToString(h.Sum(nil))[:12]

	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	// Session advisory lock: test binaries of several packages start at once.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7270617)`); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(7270617)`)

	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	// A build that died half-way may have left its database behind, maybe already marked
	// as a template (which DROP refuses).
	_, _ = conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s WITH IS_TEMPLATE false`, building))
	if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building)); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return "", err
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + building
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		return "", err
	}
	_, err = postgres.MigrateUp(ctx, pool)
	pool.Close()
	if err != nil {
		return "", err
	}
	// No session may be connected to a template while it is cloned, and autovacuum would
	// connect to a new database with tables: a template that allows no connections never
	// has one. Renaming last makes a half-built template impossible to pick up.
	if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`, building)); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, name)); err != nil {
		return "", err
	}
	return name, nil
}

// createFromTemplate clones tmpl into name. A session still leaving the template (one
// that connected before ALLOW_CONNECTIONS was turned off) makes PostgreSQL refuse with
// 55006 object_in_use: that is retried for a while, anything else is not.
func createFromTemplate(ctx context.Context, conn *pgx.Conn, name, tmpl string) error {
	for attempt := 1; ; attempt++ {
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmpl))
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || attempt == 50 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return strings.ToLower(hex.EncodeToString(b))
}
