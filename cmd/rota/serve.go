package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/api"
	"github.com/rotaqueue/rota/internal/authlimit"
	"github.com/rotaqueue/rota/internal/dashboard"
	"github.com/rotaqueue/rota/internal/maintenance"
	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/schedule"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/store/statscache"
	"github.com/rotaqueue/rota/internal/validate"
	"github.com/rotaqueue/rota/internal/workers"
)

// serverFlags are shared by serve and dev: where to listen and who may call.
type serverFlags struct {
	addr             *string
	token            *string
	metricsAuth      *bool
	scheduleInterval *time.Duration
	trustedProxies   *string
}

func registerServerFlags(fs *flag.FlagSet) serverFlags {
	return serverFlags{
		addr:        fs.String("addr", envOr("ROTA_ADDR", "127.0.0.1:8080"), "address to listen on (ROTA_ADDR)"),
		token:       fs.String("token", envOr("ROTA_API_TOKEN", ""), "bearer token every /api call needs; empty = none (ROTA_API_TOKEN)"),
		metricsAuth: fs.Bool("metrics-auth", envBool("ROTA_METRICS_AUTH", false), "require the token for /metrics too (ROTA_METRICS_AUTH)"),
		scheduleInterval: fs.Duration("schedule-interval", envDuration("ROTA_SCHEDULE_INTERVAL", schedule.DefaultInterval),
			"how often due schedules are claimed (ROTA_SCHEDULE_INTERVAL)"),
		trustedProxies: fs.String("trusted-proxies", envOr("ROTA_TRUSTED_PROXIES", ""),
			"comma-separated addresses or CIDR prefixes of reverse proxies in front of the server, whose X-Forwarded-For names the client for wrong-token throttling (ROTA_TRUSTED_PROXIES)"),
	}
}

// frontEnd is what serve and dev put in front of their store: the metrics registry (the
// API serves it at /metrics), the task metrics, the store wrapped to count the tasks this
// process creates (for every component that creates tasks), and the API with the
// dashboard.
type frontEnd struct {
	reg     *prometheus.Registry
	metrics *metrics.Metrics
	store   store.Store
	api     *api.Server
}

func (f serverFlags) frontEnd(st store.Store, logger *slog.Logger) (*frontEnd, error) {
	reg := metrics.NewRegistry()
	m := metrics.New(reg)
	// One shared Stats query (linear in the table) for the gauges, the dashboard and the API.
	stats := statscache.New(st, nil)
	reg.MustRegister(metrics.NewQueueCollector(metrics.QueueCollectorConfig{Store: stats, Logger: logger}))
	// One short-lived cache of the live workers for the create warnings, the dashboard
	// and the rota_workers gauges.
	live := workers.NewCache(st, workers.CacheConfig{})
	reg.MustRegister(metrics.NewWorkerCollector(metrics.WorkerCollectorConfig{Workers: live, Stats: stats, Logger: logger}))
	// Paused queues and the busiest groups' running tasks: cheap reads at scrape time.
	reg.MustRegister(metrics.NewFlowCollector(metrics.FlowCollectorConfig{Store: st, Logger: logger}))
	counted := m.CountEnqueued(st)
	// One count of wrong tokens per client for the API and the dashboard's login.
	proxies, err := authlimit.ParsePrefixes(*f.trustedProxies)
	if err != nil { // check() has reported it already
		return nil, err
	}
	guesses := authlimit.New(authlimit.Config{TrustedProxies: proxies})
	dash, err := dashboard.New(dashboard.Config{Store: counted, Stats: stats, Workers: live, Token: *f.token, AuthLimiter: guesses, Logger: logger})
	if err != nil {
		return nil, err
	}
	apiServer, err := api.New(api.Config{Store: counted, Stats: stats, Workers: live, Token: *f.token, MetricsAuth: *f.metricsAuth, AuthLimiter: guesses,
		MetricsHandler: metrics.Handler(reg), ClaimHeldBack: m.ClaimHeldBack, Dashboard: dash, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &frontEnd{reg: reg, metrics: m, store: counted, api: apiServer}, nil
}

func (f serverFlags) check() error {
	token, err := validate.Token(*f.token)
	if err != nil {
		return usagef("--token (ROTA_API_TOKEN): %v", err)
	}
	*f.token = token
	if *f.metricsAuth && *f.token == "" {
		return usagef("--metrics-auth needs --token (ROTA_API_TOKEN)")
	}
	if *f.scheduleInterval <= 0 {
		return usagef("--schedule-interval must be positive")
	}
	if _, err := authlimit.ParsePrefixes(*f.trustedProxies); err != nil {
		return usagef("--trusted-proxies (ROTA_TRUSTED_PROXIES): %v", err)
	}
	return nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stdout)
	var logs logFlags
	logs.register(fs)
	srvFlags := registerServerFlags(fs)
	db := registerDBFlags(fs)
	mode := fs.String("mode", envOr("ROTA_MODE", "poll"), "delivery mode: poll or sqs (ROTA_MODE)")
	migrate := fs.Bool("migrate", envBool("ROTA_MIGRATE", false), "apply pending migrations at start (ROTA_MIGRATE)")
	reapInterval := fs.Duration("reap-interval", envDuration("ROTA_REAP_INTERVAL", runtime.DefaultReapInterval), "how often expired leases are reaped (ROTA_REAP_INTERVAL)")
	retainSucceeded := fs.Duration("retain-succeeded", envDuration("ROTA_RETAIN_SUCCEEDED", 7*24*time.Hour), "delete SUCCEEDED and CANCELED tasks this long after they finish; 0 keeps them (ROTA_RETAIN_SUCCEEDED)")
	retainFailed := fs.Duration("retain-failed", envDuration("ROTA_RETAIN_FAILED", 30*24*time.Hour), "delete DEAD and FAILED tasks this long after they finish; 0 keeps them (ROTA_RETAIN_FAILED)")
	retentionInterval := fs.Duration("retention-interval", envDuration("ROTA_RETENTION_INTERVAL", time.Minute), "how often the retention clean-up runs (ROTA_RETENTION_INTERVAL)")
	sqsF := registerSQSServeFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if err := checkEnv(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve: unexpected argument %q", fs.Arg(0))
	}
	if err := srvFlags.check(); err != nil {
		return err
	}
	if err := db.check(); err != nil {
		return err
	}
	switch *mode {
	case "poll":
		if err := modeOnlyFlags(fs, "poll", sqsServeFlagNames...); err != nil {
			return err
		}
	case "sqs":
		if err := sqsF.check(); err != nil {
			return err
		}
	default:
		return usagef("--mode %q: want poll or sqs", *mode)
	}
	if *reapInterval <= 0 || *retentionInterval <= 0 {
		return usagef("--reap-interval and --retention-interval must be positive")
	}
	if *retainSucceeded < 0 || *retainFailed < 0 {
		return usagef("--retain-succeeded and --retain-failed must be 0 (keep) or positive")
	}
	logger, err := logs.logger(stderr)
	if err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, "rota-serve", logger)
	if err != nil {
		return err
	}
	defer stopTracing()

	pool, st, err := db.open(ctx, serveBaseConns, logger)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer st.Close()
	if err := waitForDatabase(ctx, logger, "check the schema", func(ctx context.Context) error {
		return ensureSchema(ctx, pool, *migrate, stdout)
	}); err != nil {
		return err
	}

	front, err := srvFlags.frontEnd(st, logger)
	if err != nil {
		return err
	}
	reg, taskMetrics, counted, apiServer := front.reg, front.metrics, front.store, front.api
	// SQS mode: connect now, so that a missing queue fails the start.
	enqueuer, err := sqsF.enqueuer(ctx, *mode, st, reg, logger)
	if err != nil {
		return err
	}
	ln, err := listen(*srvFlags.addr)
	if err != nil {
		return err
	}
	printURL(stdout, "rota serve", ln)
	warnUnprotected(stderr, ln, *srvFlags.token)
	logger.Info("server started", "addr", ln.Addr().String(), "mode", *mode, "auth", *srvFlags.token != "")

	reaper := maintenance.NewReaper(maintenance.ReaperConfig{Store: st, Interval: *reapInterval,
		BackoffBase: runtime.DefaultBackoffBase, BackoffMax: runtime.DefaultBackoffMax, Logger: logger,
		OnReap: taskMetrics.Reaped})
	retention := maintenance.NewRetention(maintenance.RetentionConfig{Store: st, Interval: *retentionInterval,
		SucceededAfter: *retainSucceeded, FailedAfter: *retainFailed, Logger: logger})
	scheduler := schedule.NewScheduler(schedule.Config{Store: counted, Interval: *srvFlags.scheduleInterval, Logger: logger,
		OnClaim: schedule.NewMetrics(reg).Observe})
	err = runConcurrently(ctx,
		func(ctx context.Context) error { return serveHTTP(ctx, ln, apiServer, apiServer.Close, logger) },
		func(ctx context.Context) error { reaper.Run(ctx); return nil },
		func(ctx context.Context) error { retention.Run(ctx); return nil },
		func(ctx context.Context) error { scheduler.Run(ctx); return nil },
		enqueuer,
	)
	logger.Info("server stopped")
	return err
}

// ensureSchema applies pending migrations when asked, and then (or else) refuses to start
// on a schema that is not this binary's: behind it, or migrated by a newer release (its
// statements would fail later, or half work, in confusing ways).
func ensureSchema(ctx context.Context, pool *pgxpool.Pool, migrate bool, stdout io.Writer) error {
	if migrate {
		applied, err := postgres.MigrateUp(ctx, pool)
		for _, v := range applied {
			fmt.Fprintf(stdout, "applied migration %04d\n", v)
		}
		if err != nil {
			return err
		}
	}
	if err := postgres.CheckSchema(ctx, pool); err != nil {
		if !migrate && errors.Is(err, postgres.ErrSchemaBehind) {
			return fmt.Errorf("%w, or pass --migrate", err)
		}
		return err
	}
	return nil
}
