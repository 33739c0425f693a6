// Package metrics exports Rota's Prometheus metrics: the worker's events (through the
// runtime.Observer hooks), the tasks a process creates, lease reaps, and gauges read from
// the store at scrape time.
//
// Wiring (cmd/rota): every long-running command builds one registry with NewRegistry
// (it keeps the Go and process collectors) and one Metrics with New. Workers pass the
// Metrics as runtime.Config.Observer and, with --metrics-addr, serve NewEndpoint.
// Servers wrap the store given to the API and the scheduler with Metrics.CountEnqueued,
// pass Metrics.Reaped as the maintenance reaper's OnReap (rota serve), register a
// QueueCollector, a WorkerCollector and a FlowCollector, and serve Handler at /metrics on the API listener. rota dev does both,
// in one process.
//
// # Metrics
//
// Counters and histograms, counted by the process that saw the event (sum them over
// processes in PromQL):
//
//	rota_tasks_enqueued_total{queue,kind}
//	    tasks created by this process: API create, batch create and schedule trigger,
//	    and the runs of schedule claims; idempotent hits and replays are not counted
//	rota_tasks_claimed_total{queue,kind}
//	    attempts this worker started (equals the attempt rows it wrote)
//	rota_tasks_succeeded_total{queue,kind}
//	    attempts recorded SUCCEEDED
//	rota_tasks_retried_total{queue,kind}
//	    attempts that failed and went back to the queue (attempt outcome RETRIED)
//	rota_tasks_dead_total{queue,kind}
//	    attempts that failed with no attempts left (the task is DEAD)
//	rota_tasks_failed_total{queue,kind}
//	    attempts that failed with a permanent error (the task is FAILED)
//	rota_tasks_canceled_total{queue,kind}
//	    running tasks recorded CANCELED after a cancel request
//	rota_handler_duration_seconds{queue,kind}   (histogram)
//	    how long handlers ran; a task of a kind no handler serves is not timed
//	rota_claim_duration_seconds{queue}          (histogram)
//	    one claim statement (poll mode) or one Source fetch, long poll included (SQS mode)
//	rota_claim_errors_total{queue}
//	    claims or fetches that failed
//	rota_commit_duration_seconds                (histogram)
//	    one batched outcome write (Store.RecordOutcomes)
//	rota_commit_errors_total
//	    outcome writes that failed (they are retried)
//	rota_lease_lost_total
//	    attempts whose lease another worker took over (their outcome was dropped)
//	rota_lease_reaps_total
//	    tasks with an expired lease that a reaper returned to the queue or ended
//	    (the reapers of workers and of rota serve)
//	rota_handlers_abandoned_total{queue,kind}
//	    handlers still running AbandonGrace (5s) after their context ended (timeout,
//	    cancel, lost lease, shutdown): the worker gave the attempt up and freed its slot;
//	    the lease expires and a reaper retries or cancels the task
//	rota_handlers_abandoned_running
//	    abandoned handlers that have not returned yet (goroutines nothing can stop)
//
// Gauges read from the store (Store.Stats) when scraped, by QueueCollector. A result is
// reused for DefaultStatsTTL, so frequent scrapes (or several Prometheus servers) cost
// at most one query per TTL, and the query is bounded by DefaultStatsTimeout. Only
// servers export them, so one database is not reported once per worker:
//
//	rota_queue_tasks{queue,status}
//	    tasks by queue and status (every status, 0 included)
//	rota_queue_oldest_due_age_seconds{queue}
//	    age of the oldest due PENDING task (0 when none is due)
//	rota_queue_expired_leases{queue}
//	    PROCESSING tasks whose lease has expired (stuck: their worker is gone)
//	rota_queue_stats_up
//	    1 when the last store query for these gauges succeeded; 0 when it failed (the
//	    gauges above are then absent)
//
// Gauges of the workers registry (DESIGN.md section 12), by WorkerCollector, read from
// the 2 s cache of live workers (internal/workers) and the same Stats result:
//
//	rota_workers{queue}
//	    live workers (seen within 30 s) serving the queue, of every mode; 0 for a queue
//	    with tasks and none
//	rota_queue_unserved{queue}
//	    1 when the queue has due tasks (a due PENDING task, or ENQUEUED ones) and no
//	    live worker: nothing will run them until a worker comes
//	rota_workers_up
//	    1 when the last registry query succeeded; 0 when it failed
//
// Gauges of flow control (DESIGN.md section 11), by FlowCollector, read at scrape time
// (rota.queues, and the PROCESSING tasks of queues with a group limit):
//
//	rota_queue_paused{queue}
//	    1 while the queue is paused, else 0; for every configured queue
//	rota_group_running{queue,group}
//	    running tasks of each of the DefaultTopGroups (10) busiest groups of a queue
//	    with group_concurrency or group_rate, the rest summed under group="_other"
//	    (so at most 11 series per such queue, however many group keys there are)
//	rota_queue_settings_up
//	    1 when the last queries succeeded; 0 when one failed
//
// Schedule claims (rota_schedule_*) are internal/schedule's metrics, and SQS and
// dead-letter-queue metrics are internal/sqsmode's; both register with the same registry.
//
// # Label cardinality
//
// queue and kind are user-defined names. Deployments have a few of each, and a series
// exists per (queue, kind) pair actually seen. To keep a client that enqueues under
// endless made-up names from growing a process's series without bound, each Metrics
// admits at most MaxLabelValues distinct queues and as many distinct kinds; later new
// names are counted under the value "_other". The store gauges carry the queues that
// exist in the database (no kind label).
//
// Tasks completed through the HTTP worker protocol (workers in other languages) are not
// counted by these counters: they show in the store gauges.
package metrics
