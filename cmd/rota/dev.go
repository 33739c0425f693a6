package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/schedule"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// runDev runs everything in one process on the in-memory store: the API, and poll workers
// with the built-in handlers. Nothing is kept when it stops.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev", stdout)
	var logs logFlags
	logs.register(fs)
	srvFlags := registerServerFlags(fs)
	concurrency := fs.Int("concurrency", envInt("ROTA_CONCURRENCY", 0), "handler goroutines; 0 = the runtime default, "+strconv.Itoa(runtime.DefaultConcurrency)+" (ROTA_CONCURRENCY)")
	queues := fs.String("queues", envOr("ROTA_QUEUES", "default"), "queues the built-in workers serve, comma-separated, queue=N caps one (ROTA_QUEUES)")
	allowHosts := fs.String("http-allow-hosts", envOr("ROTA_HTTP_ALLOW_HOSTS", ""), "hosts the http handler may call, comma-separated; empty = any (ROTA_HTTP_ALLOW_HOSTS)")
	denyPrivate := fs.Bool("http-deny-private", envBool("ROTA_HTTP_DENY_PRIVATE", false), "the http handler refuses loopback, private, link-local and cloud-metadata addresses, checked on the address dialed; it then uses no proxy (ROTA_HTTP_DENY_PRIVATE)")
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
		return usagef("dev: unexpected argument %q", fs.Arg(0))
	}
	if err := srvFlags.check(); err != nil {
		return err
	}
	if *concurrency < 0 {
		return usagef("--concurrency must be 0 or more")
	}
	queueLimits, err := parseQueues(*queues)
	if err != nil {
		return err
	}
	logger, err := logs.logger(stderr)
	if err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, "rota-dev", logger)
	if err != nil {
		return err
	}
	defer stopTracing()

	st := memory.New()
	defer st.Close()
	front, err := srvFlags.frontEnd(st, logger)
	if err != nil {
		return err
	}
	reg, taskMetrics, counted, apiServer := front.reg, front.metrics, front.store, front.api
	mux := runtime.NewMux()
	handlers.Register(mux, handlers.Config{AllowHosts: handlers.ParseAllowHosts(*allowHosts), DenyPrivate: *denyPrivate})
	worker, err := runtime.NewWorker(runtime.Config{Store: st, Mux: mux, Queues: queueLimits,
		Concurrency: *concurrency, Observer: taskMetrics, Logger: logger, Version: buildVersion()})
	if err != nil {
		return usagef("dev: %v", err)
	}
	ln, err := listen(*srvFlags.addr)
	if err != nil {
		return err
	}
	printURL(stdout, "rota dev", ln)
	warnUnprotected(stderr, ln, *srvFlags.token)
	fmt.Fprintln(stdout, "in-memory store: tasks are lost when this process stops; use 'rota serve' for PostgreSQL")
	scheduler := schedule.NewScheduler(schedule.Config{Store: counted, Interval: *srvFlags.scheduleInterval, Logger: logger,
		OnClaim: schedule.NewMetrics(reg).Observe})
	return runConcurrently(ctx,
		func(ctx context.Context) error { return serveHTTP(ctx, ln, apiServer, apiServer.Close, logger) },
		worker.Run,
		func(ctx context.Context) error { scheduler.Run(ctx); return nil },
	)
}
