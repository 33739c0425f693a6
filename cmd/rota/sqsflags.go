package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
)

// sqsResolveTimeout bounds finding (or creating) the SQS queues at start.
const sqsResolveTimeout = 30 * time.Second

// sqsFlags are the SQS settings of serve and worker; they apply to --mode sqs only.
type sqsFlags struct {
	endpoint *string
	queue    *string
	dlq      *string
	create   *bool
}

// sqsFlagNames are the flags registerSQSFlags defines, checked by pollModeRejects.
var sqsFlagNames = []string{"sqs-endpoint", "sqs-queue", "sqs-dlq", "sqs-create-queues"}

func registerSQSFlags(fs *flag.FlagSet) sqsFlags {
	return sqsFlags{
		endpoint: fs.String("sqs-endpoint", envOr("ROTA_SQS_ENDPOINT", ""),
			"SQS-compatible endpoint URL, e.g. an emulator's; empty = AWS (ROTA_SQS_ENDPOINT; credentials and region from the standard AWS chain, region default us-east-1)"),
		queue: fs.String("sqs-queue", envOr("ROTA_SQS_QUEUE", sqsmode.DefaultQueue),
			"SQS queue (name or URL) of Rota's default queue; queue Q uses <name>-Q (ROTA_SQS_QUEUE)"),
		dlq: fs.String("sqs-dlq", envOr("ROTA_SQS_DLQ", sqsmode.DefaultDLQ),
			"SQS queue (name or URL) that receives dead-task events, published by serve --mode sqs (ROTA_SQS_DLQ)"),
		create: fs.Bool("sqs-create-queues", envBool("ROTA_SQS_CREATE_QUEUES", false),
			"create missing SQS queues, at start and whenever SQS reports one missing (ROTA_SQS_CREATE_QUEUES)"),
	}
}

// check validates the settings that need no network, for the Rota queues served.
func (f sqsFlags) check(rotaQueues []string) error {
	if *f.endpoint != "" {
		u, err := url.Parse(*f.endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--sqs-endpoint %q: want a URL such as http://127.0.0.1:4566", *f.endpoint)
		}
	}
	if err := sqsmode.CheckQueueNames(f.queueConfig(), rotaQueues); err != nil {
		return usagef("%v", err)
	}
	return nil
}

func (f sqsFlags) queueConfig() sqsmode.QueueConfig {
	return sqsmode.QueueConfig{Queue: *f.queue, DLQ: *f.dlq, Create: *f.create}
}

// modeOnlyFlags returns a usage error when a flag in names was set on the command line
// although the mode ignores it: a setting that silently does nothing misleads.
// Environment defaults are not checked (one environment may serve both modes).
func modeOnlyFlags(fs *flag.FlagSet, mode string, names ...string) error {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(names, f.Name) {
			set = append(set, "--"+f.Name)
		}
	})
	if len(set) > 0 {
		return usagef("%s: not used with --mode %s", set[0], mode)
	}
	return nil
}

// open builds the SQS client and finds (or creates) the SQS queues of rotaQueues, and
// the DLQ when withDLQ. Bad queue names are usage errors; SQS errors are not.
func (f sqsFlags) open(ctx context.Context, rotaQueues []string, withDLQ bool) (*sqs.Client, *sqsmode.Queues, error) {
	client, err := sqsmode.NewClient(ctx, sqsmode.ClientConfig{Endpoint: *f.endpoint})
	if err != nil {
		return nil, nil, err
	}
	queues, err := sqsmode.NewQueues(client, f.queueConfig(), rotaQueues)
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, sqsResolveTimeout)
	defer cancel()
	if err := queues.Resolve(rctx, withDLQ); err != nil {
		return nil, nil, err
	}
	return client, queues, nil
}

// sqsServeFlags are serve's enqueuer settings.
type sqsServeFlags struct {
	sqsFlags
	queues            *string
	enqueueInterval   *time.Duration
	enqueueBatch      *int
	redeliveryTimeout *time.Duration
	lossCheck         *time.Duration
}

var sqsServeFlagNames = append([]string{"queues", "enqueue-interval", "enqueue-batch", "redelivery-timeout", "sqs-loss-check-interval"}, sqsFlagNames...)

func registerSQSServeFlags(fs *flag.FlagSet) sqsServeFlags {
	return sqsServeFlags{
		sqsFlags: registerSQSFlags(fs),
		queues: fs.String("queues", envOr("ROTA_QUEUES", store.DefaultQueue),
			"--mode sqs: the Rota queues whose due tasks this server sends to SQS, comma-separated; limits after '=' are ignored, so ROTA_QUEUES can be shared with workers (ROTA_QUEUES)"),
		enqueueInterval: fs.Duration("enqueue-interval", envDuration("ROTA_ENQUEUE_INTERVAL", sqsmode.DefaultEnqueueInterval),
			"--mode sqs: how often each queue is checked for due tasks and retries when no insert wakes it (ROTA_ENQUEUE_INTERVAL)"),
		enqueueBatch: fs.Int("enqueue-batch", envInt("ROTA_ENQUEUE_BATCH", sqsmode.DefaultEnqueueBatch),
			fmt.Sprintf("--mode sqs: most task ids sent per round, 1 to %d (ROTA_ENQUEUE_BATCH)", store.MaxListLimit)),
		redeliveryTimeout: fs.Duration("redelivery-timeout", envDuration("ROTA_REDELIVERY_TIMEOUT", sqsmode.DefaultRedeliverAfter),
			"--mode sqs: an ENQUEUED task whose message was sent this long ago without being claimed is sent again; keep it above how long messages wait in SQS under load (ROTA_REDELIVERY_TIMEOUT)"),
		lossCheck: fs.Duration("sqs-loss-check-interval", envDuration("ROTA_SQS_LOSS_CHECK_INTERVAL", sqsmode.DefaultLossCheckInterval),
			"--mode sqs: how often each SQS queue is checked for having lost its messages (purged, re-created), whose tasks are then sent again at once; negative = off (ROTA_SQS_LOSS_CHECK_INTERVAL)"),
	}
}

// rotaQueues parses --queues; the limits a worker would read are ignored.
func (f sqsServeFlags) rotaQueues() ([]string, error) {
	limits, err := parseQueues(*f.queues)
	if err != nil {
		return nil, err
	}
	return sortedKeys(limits), nil
}

func sortedKeys(m map[string]int) []string {
	return slices.Sorted(maps.Keys(m))
}

func (f sqsServeFlags) check() error {
	names, err := f.rotaQueues()
	if err != nil {
		return err
	}
	if err := f.sqsFlags.check(names); err != nil {
		return err
	}
	switch {
	case *f.enqueueInterval <= 0:
		return usagef("--enqueue-interval must be positive")
	case *f.enqueueBatch < 1 || *f.enqueueBatch > store.MaxListLimit:
		return usagef("--enqueue-batch must be between 1 and %d", store.MaxListLimit)
	case *f.redeliveryTimeout <= 0:
		return usagef("--redelivery-timeout must be positive")
	case *f.lossCheck == 0:
		return usagef("--sqs-loss-check-interval must be positive, or negative to turn the check off")
	}
	return nil
}

// enqueuer is serve's DueTaskEnqueuer, with its DLQ relay, as a component for
// runConcurrently: in SQS mode it connects to SQS now (failing at start on a missing
// queue, the DLQ included) and runs until ctx ends;
// in poll mode there is nothing to run.
func (f sqsServeFlags) enqueuer(ctx context.Context, mode string, st store.Store, reg prometheus.Registerer, logger *slog.Logger) (func(context.Context) error, error) {
	if mode != "sqs" {
		return func(context.Context) error { return nil }, nil
	}
	names, err := f.rotaQueues()
	if err != nil {
		return nil, err
	}
	// With the DLQ: serve's enqueuer also relays the dead-task events to it.
	client, queues, err := f.open(ctx, names, true)
	if err != nil {
		return nil, err
	}
	enq, err := sqsmode.NewEnqueuer(sqsmode.EnqueuerConfig{Store: st, Client: client, Queues: queues,
		BatchSize: *f.enqueueBatch, Interval: *f.enqueueInterval, RedeliverAfter: *f.redeliveryTimeout, LossCheckInterval: *f.lossCheck,
		Metrics: sqsmode.NewMetrics(reg), Logger: logger})
	if err != nil {
		return nil, usagef("serve: %v", err)
	}
	return func(ctx context.Context) error { enq.Run(ctx); return nil }, nil
}

// sqsWorkerFlags are worker's SQS settings.
type sqsWorkerFlags struct {
	sqsFlags
	wait *int
}

var sqsWorkerFlagNames = append([]string{"sqs-wait"}, sqsFlagNames...)

func registerSQSWorkerFlags(fs *flag.FlagSet) sqsWorkerFlags {
	return sqsWorkerFlags{
		sqsFlags: registerSQSFlags(fs),
		wait: fs.Int("sqs-wait", envInt("ROTA_SQS_WAIT", sqsmode.DefaultWaitSeconds),
			"--mode sqs: long-poll seconds of an idle queue's receive, 1 to 20; a busy queue's wait at most 1 (ROTA_SQS_WAIT)"),
	}
}

// check validates the flags for the worker's queues (--queues, parsed).
func (f sqsWorkerFlags) check(queueLimits map[string]int) error {
	if err := f.sqsFlags.check(sortedKeys(queueLimits)); err != nil {
		return err
	}
	if *f.wait < 1 || *f.wait > 20 {
		return usagef("--sqs-wait must be between 1 and 20 seconds")
	}
	return nil
}

// configure connects to SQS and sets cfg up for --mode sqs: tasks come from an SQS
// source, which claims ENQUEUED tasks by the ids of the messages it receives, with the
// worker's id and lease. Call the returned close after the worker's Run returned: it
// waits for the source's last deletes.
func (f sqsWorkerFlags) configure(ctx context.Context, cfg *runtime.Config, reg prometheus.Registerer, logger *slog.Logger) (close func(), err error) {
	// Without the DLQ: the server publishes dead-task events (the dead-letter outbox).
	client, queues, err := f.open(ctx, sortedKeys(cfg.Queues), false)
	if err != nil {
		return nil, err
	}
	src, err := sqsmode.NewSource(sqsmode.SourceConfig{Store: cfg.Store, Client: client, Queues: queues,
		WorkerID: cfg.WorkerID, LeaseDuration: cfg.LeaseDuration, WaitSeconds: *f.wait,
		Metrics: sqsmode.NewMetrics(reg), Logger: logger})
	if err != nil {
		return nil, usagef("worker: %v", err)
	}
	cfg.Source = src
	cfg.ClaimFrom = store.StatusEnqueued
	cfg.FetchBatch = sqsmode.FetchBatch
	cfg.WorkerID = src.WorkerID()
	cfg.LeaseDuration = src.LeaseDuration()
	return src.Close, nil
}
