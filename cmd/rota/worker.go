package main

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker", stdout)
	var logs logFlags
	logs.register(fs)
	db := registerDBFlags(fs)
	mode := fs.String("mode", envOr("ROTA_MODE", "poll"), "delivery mode: poll (claim from PostgreSQL) or sqs (ROTA_MODE)")
	queues := fs.String("queues", envOr("ROTA_QUEUES", "default"), "queues to work, comma-separated; queue=N caps that queue's concurrent handlers (ROTA_QUEUES)")
	concurrency := fs.Int("concurrency", envInt("ROTA_CONCURRENCY", 0), "handler goroutines in this process; 0 = the runtime default, "+strconv.Itoa(runtime.DefaultConcurrency)+" (ROTA_CONCURRENCY)")
	workerID := fs.String("worker-id", envOr("ROTA_WORKER_ID", ""), "this worker's id in task rows; empty = host-pid-random (ROTA_WORKER_ID)")
	lease := fs.Duration("lease", envDuration("ROTA_LEASE", runtime.DefaultLeaseDuration), "lease per claim, extended by heartbeats (ROTA_LEASE)")
	pollInterval := fs.Duration("poll-interval", envDuration("ROTA_POLL_INTERVAL", runtime.DefaultPollInterval), "fallback poll interval when no notification arrives (ROTA_POLL_INTERVAL)")
	reapInterval := offDurationFlag(fs, "reap-interval", envOffDuration("ROTA_REAP_INTERVAL", 0), "how often expired leases are reaped, a `duration` (0 = the runtime default, "+runtime.DefaultReapInterval.String()+"; -1 or any negative value disables this worker's reaper) (ROTA_REAP_INTERVAL)")
	grace := fs.Duration("shutdown-grace", envDuration("ROTA_SHUTDOWN_GRACE", runtime.DefaultShutdownGrace), "how long running handlers may finish after a stop signal (ROTA_SHUTDOWN_GRACE)")
	allowHosts := fs.String("http-allow-hosts", envOr("ROTA_HTTP_ALLOW_HOSTS", ""), "hosts the http handler may call, comma-separated; empty = any (ROTA_HTTP_ALLOW_HOSTS)")
	denyPrivate := fs.Bool("http-deny-private", envBool("ROTA_HTTP_DENY_PRIVATE", false), "the http handler refuses loopback, private, link-local and cloud-metadata addresses, checked on the address dialed; it then uses no proxy (ROTA_HTTP_DENY_PRIVATE)")
	metricsAddr := fs.String("metrics-addr", envOr("ROTA_METRICS_ADDR", ""), "address to serve /metrics and /healthz on, for Prometheus; empty = off (ROTA_METRICS_ADDR)")
	sqsF := registerSQSWorkerFlags(fs)
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
		return usagef("worker: unexpected argument %q", fs.Arg(0))
	}
	switch *mode {
	case "poll":
		if err := modeOnlyFlags(fs, "poll", sqsWorkerFlagNames...); err != nil {
			return err
		}
	case "sqs":
		if err := modeOnlyFlags(fs, "sqs", "poll-interval"); err != nil {
			return err
		}
	default:
		return usagef("--mode %q: want poll or sqs", *mode)
	}
	queueLimits, err := parseQueues(*queues)
	if err != nil {
		return err
	}
	if *mode == "sqs" {
		if err := sqsF.check(queueLimits); err != nil {
			return err
		}
	}
	if *concurrency < 0 {
		return usagef("--concurrency must be 0 or more")
	}
	if err := db.check(); err != nil {
		return err
	}
	logger, err := logs.logger(stderr)
	if err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, "rota-worker", logger)
	if err != nil {
		return err
	}
	defer stopTracing()

	pool, st, err := db.open(ctx, workerDefaultConns(len(queueLimits), *mode == "sqs"), logger)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer st.Close()
	// A worker never migrates; it runs only on the schema it was built for.
	if err := waitForDatabase(ctx, logger, "check the schema", func(ctx context.Context) error {
		return postgres.CheckSchema(ctx, pool)
	}); err != nil {
		return err
	}

	mux := runtime.NewMux()
	handlers.Register(mux, handlers.Config{AllowHosts: handlers.ParseAllowHosts(*allowHosts), DenyPrivate: *denyPrivate})

	reg := metrics.NewRegistry()
	cfg := runtime.Config{
		Store:         st,
		Mux:           mux,
		Observer:      metrics.New(reg),
		WorkerID:      *workerID,
		Version:       buildVersion(), // what `rota version` says, -ldflags included
		Queues:        queueLimits,
		Concurrency:   *concurrency,
		LeaseDuration: *lease,
		PollInterval:  *pollInterval,
		ReapInterval:  *reapInterval,
		ShutdownGrace: *grace,
		Logger:        logger,
	}
	if *mode == "sqs" {
		closeSource, err := sqsF.configure(ctx, &cfg, reg, logger)
		if err != nil {
			return err
		}
		defer closeSource() // after Run: the source's last deletes
	}
	w, err := runtime.NewWorker(cfg)
	if err != nil {
		return usagef("worker: %v", err)
	}
	run := w.Run
	if *metricsAddr != "" {
		ln, err := listen(*metricsAddr)
		if err != nil {
			return err
		}
		printURL(stdout, "rota worker metrics", ln)
		run = func(ctx context.Context) error {
			return runConcurrently(ctx, w.Run,
				func(ctx context.Context) error { return serveHTTP(ctx, ln, metrics.NewEndpoint(reg), nil, logger) })
		}
	}
	logger.Info("worker started", "worker_id", w.ID(), "mode", *mode, "queues", *queues)
	start := time.Now()
	err = run(ctx)
	logger.Info("worker stopped", "uptime", time.Since(start).Round(time.Millisecond).String())
	return err
}

// parseQueues reads "default,emails=5": a queue with no limit gets 0, which the runtime
// reads as "bounded only by the process's concurrency".
func parseQueues(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, limit, hasLimit := strings.Cut(part, "=")
		n := 0
		if hasLimit {
			v, err := strconv.Atoi(limit)
			if err != nil || v < 1 {
				return nil, usagef("--queues: %q: the limit after '=' must be a whole number of at least 1", part)
			}
			n = v
		}
		if _, dup := out[name]; dup {
			return nil, usagef("--queues: %q is listed twice", name)
		}
		out[name] = n
	}
	if len(out) == 0 {
		return nil, usagef("--queues: name at least one queue")
	}
	for name := range out {
		if err := store.ValidateName("queue", name); err != nil {
			return nil, usagef("--queues: %v", err)
		}
	}
	return out, nil
}
