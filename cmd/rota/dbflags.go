package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store/postgres"
)

// Connection budgets of the long-running commands (--db-max-conns 0). Each process also
// opens one LISTEN connection of its own, outside the pool.
const (
	// A worker's statements are batched: one committer write, one heartbeat batch, one
	// reaper pass, and per queue its claims (two in flight in poll mode while claims are
	// small: runtime.Config.FetchLoops). More connections only sit idle.
	workerBaseConns     = 4
	workerConnsPerQueue = 2
	// In SQS mode a worker also reads the task of each message its claim did not take
	// (a duplicate, a task not due), up to 16 at once in the background; a few more
	// connections keep those reads from queueing the claims and outcome writes.
	sqsWorkerExtraConns = 4
	// maxDefaultConns caps a derived budget (a worker of many queues): past it, claims of
	// different queues wait briefly for each other instead of taking more of the server.
	maxDefaultConns = 20
	// A server runs the API (a statement per request), the reaper, retention, the
	// schedule loop and, in SQS mode, the enqueuer (up to sqsmode.DefaultRoundsPerQueue
	// rounds per queue under a backlog, each holding a connection while it sends).
	serveBaseConns = 10
)

// workerDefaultConns is a worker's pool size for its number of queues and its mode.
func workerDefaultConns(queues int, sqsMode bool) int {
	n := workerBaseConns + workerConnsPerQueue*queues
	if sqsMode {
		n += sqsWorkerExtraConns
	}
	return min(maxDefaultConns, n)
}

// dbFlags are the database settings of serve and worker.
type dbFlags struct {
	url       *string
	maxConns  *int
	listenURL *string
}

func registerDBFlags(fs *flag.FlagSet) dbFlags {
	return dbFlags{
		url: databaseURLFlag(fs),
		maxConns: fs.Int("db-max-conns", envInt("ROTA_DB_MAX_CONNS", 0),
			"most pooled PostgreSQL connections this process opens, plus one for LISTEN; 0 = derived from the work: "+
				"a worker 4 + one per queue (+4 in SQS mode; at most 20), a server 10 (ROTA_DB_MAX_CONNS)"),
		listenURL: fs.String("db-listen-url", envOr("ROTA_DB_LISTEN_URL", ""),
			"PostgreSQL URL of the LISTEN connection (wake-ups on insert), for a pool behind PgBouncer in transaction mode, "+
				"which cannot carry LISTEN; empty = --database-url (ROTA_DB_LISTEN_URL)"),
	}
}

func (f dbFlags) check() error {
	if *f.maxConns < 0 {
		return usagef("--db-max-conns must be 0 (derived) or more")
	}
	if *f.listenURL != "" {
		if _, err := pgx.ParseConfig(*f.listenURL); err != nil {
			return usagef("--db-listen-url: %v", err)
		}
	}
	return nil
}

// open connects a pool of at most --db-max-conns connections (when set; else the URL's
// pool_max_conns; else def), waiting out a server that refuses connections
// (see waitForDatabase), and returns a store on it that listens through --db-listen-url
// when set. The caller closes both: the store first.
func (f dbFlags) open(ctx context.Context, def int, logger *slog.Logger) (*pgxpool.Pool, *postgres.Store, error) {
	pool, err := newPool(*f.url, f.poolSize(def))
	if err != nil {
		return nil, nil, err
	}
	if err := waitForDatabase(ctx, logger, "connect to database", func(ctx context.Context) error { return pool.Ping(ctx) }); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("connect to database: %w", err)
	}
	st := postgres.New(pool)
	if *f.listenURL != "" {
		cfg, err := pgx.ParseConfig(*f.listenURL)
		if err != nil { // check() has reported it already
			st.Close()
			pool.Close()
			return nil, nil, usagef("--db-listen-url: %v", err)
		}
		st.ListenWith(cfg)
	}
	return pool, st, nil
}

// poolSize is --db-max-conns when set, else 0 when the URL sets pool_max_conns (newPool
// keeps it), else def.
func (f dbFlags) poolSize(def int) int {
	if *f.maxConns == 0 && !urlSetsMaxConns(*f.url) {
		return def
	}
	return *f.maxConns
}

// urlSetsMaxConns reports whether dbURL carries pgxpool's own pool_max_conns, which wins
// over a derived default (not over --db-max-conns).
func urlSetsMaxConns(dbURL string) bool {
	return strings.Contains(dbURL, "pool_max_conns")
}

// newPool parses dbURL into a pool config of at most maxConns connections; 0 keeps the
// URL's pool_max_conns, or the old default of 20. It connects nothing yet.
func newPool(dbURL string, maxConns int) (*pgxpool.Pool, error) {
	if dbURL == "" {
		return nil, usagef("no database: set --database-url or ROTA_DATABASE_URL")
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, usagef("--database-url: %v", err)
	}
	// pgxpool's own default (4 connections on this machine's 2 cores) starves a worker whose
	// fetchers, committer and heartbeats run at once.
	switch {
	case maxConns > 0:
		cfg.MaxConns = int32(maxConns)
	case !urlSetsMaxConns(dbURL):
		cfg.MaxConns = maxDefaultConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// Backoff of waitForDatabase.
const (
	refusedRetryMin = 100 * time.Millisecond
	refusedRetryMax = 5 * time.Second
)

// waitForDatabase runs fn until it succeeds, ctx ends, or it fails other than with the
// server refusing a connection for now (refusedForNow): a database whose
// max_connections is used up must not make a process exit at start, only wait, with
// backoff, and say so.
func waitForDatabase(ctx context.Context, logger *slog.Logger, what string, fn func(context.Context) error) error {
	delay := refusedRetryMin
	for failures := 1; ; failures++ {
		err := fn(ctx)
		if err == nil || !refusedForNow(err) || ctx.Err() != nil {
			if err == nil && failures > 1 {
				logger.Info("database accepts connections again", "what", what, "after_failures", failures-1)
			}
			return err
		}
		logger.Warn("database refuses connections for now; retrying", "what", what, "failures", failures,
			"retry_in", delay.String(), "error", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, refusedRetryMax)
	}
}

// refusedForNow reports whether err is the server refusing a connection for a reason
// that passes: too many connections (SQLSTATE 53300: max_connections, a role's or a
// database's connection limit) or a server still starting up or shutting down (57P03).
func refusedForNow(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "53300" || pgErr.Code == "57P03")
}
