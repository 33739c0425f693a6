/*
Package rota is a database-first task queue: PostgreSQL is the single source of truth
for every task's state, and workers in any number of processes claim tasks from it with
leases that fence out a worker that lost its claim. This package is Rota's Go API: a
Client to enqueue and inspect tasks, and Workers that run them.

# Enqueueing tasks

A task has a kind (the name of the handler that runs it), a queue, and a JSON payload.
Create a client on a pgx pool (the schema comes from `rota migrate up`) and enqueue:

	pool, err := pgxpool.New(ctx, os.Getenv("ROTA_DATABASE_URL"))
	if err != nil {
		// ...
	}
	defer pool.Close()
	client := rota.NewPostgresClient(pool)

	task, err := client.Enqueue(ctx, rota.EnqueueParams{
		Kind:    "email.send",
		Payload: SendEmail{To: "ada@example.com"},
	})

EnqueueParams also sets the queue (default "default"), a delay or a scheduled time, the
number of attempts (default 25), a priority, a per-attempt timeout and an idempotency
key: while a task with that key is pending, running or succeeded, enqueueing the key
again returns that task instead of a new one (EnqueueWithResult tells which happened).
Invalid params return an error wrapping ErrInvalid, and nothing is written.
EnqueueMany writes a batch, all or nothing.

NewMemoryClient gives the same API on an in-process store, for tests and demos.

# Writing handlers

A handler is a function of the task's Job, registered on a Mux under the task's kind:

	mux := rota.NewMux()
	mux.HandleFunc("email.send", func(ctx context.Context, job *rota.Job) error {
		var args SendEmail
		if err := json.Unmarshal(job.Task.Payload, &args); err != nil {
			return rota.Permanent(err) // retrying cannot help: FAILED at once
		}
		return send(ctx, args) // nil: SUCCEEDED; an error: retried with backoff
	})

Returning nil marks the task SUCCEEDED. Any other error is retried after an
exponential, jittered backoff until the task's attempts run out, when it becomes DEAD.
Wrap an error with Permanent to fail the task at once (FAILED), or with RetryAfter to
choose the delay. A panic is a retryable failure. Every attempt is recorded (see
Client.Attempts), and every DEAD or FAILED task leaves a dead letter (see
Client.DeadLetters) that an operator can Replay.

A handler may leave a result with Job.SetOutput: any value that encodes as JSON, at most
MaxOutputBytes. It becomes the task's Output once the handler returns nil (Client.Get
shows it). SetOutput refuses a value that is too large with ErrInvalidOutput; a handler
that ignores the refusal and returns nil fails the task permanently rather than
succeeding without its result.

	mux.HandleFunc("report.count", func(ctx context.Context, job *rota.Job) error {
		n, err := countRows(ctx)
		if err != nil {
			return err
		}
		return job.SetOutput(map[string]int{"rows": n})
	})

The handler's context ends when the attempt's timeout passes (per kind with WithTimeout,
per task with EnqueueParams.Timeout), when the task is canceled (Client.Cancel), or when
the worker shuts down; a handler should return promptly then.

# Running workers

A worker claims due tasks of its queues, runs their handlers with bounded concurrency,
heartbeats their leases and records each outcome:

	worker, err := client.NewWorker(rota.WorkerConfig{
		Mux:    mux,
		Queues: map[string]int{"default": 10}, // queue -> concurrency
	})
	if err != nil {
		// ...
	}
	err = worker.Run(ctx) // until ctx is canceled, then a graceful shutdown

Run as many workers, in as many processes, as you like: the database makes sure that a
task is held by one worker at a time and succeeds at most once.

# Enqueueing in a transaction

With PostgreSQL, EnqueueTx creates tasks inside your own transaction, so they exist only
if your other writes commit too (no lost or phantom tasks):

	tx, err := pool.Begin(ctx)
	if err != nil {
		// ...
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id) VALUES ($1)`, orderID); err != nil {
		return err
	}
	if _, err := client.EnqueueTx(ctx, tx, rota.EnqueueParams{
		Kind:    "order.ship",
		Payload: map[string]any{"order_id": orderID},
	}); err != nil {
		return err
	}
	return tx.Commit(ctx)

Workers see the tasks only after the commit.

# Flows

A flow is a graph of steps, each run as ordinary tasks once the steps it depends on
succeeded; the store creates a step's tasks in the transaction that records the last
of its dependencies' successes, so no orchestrator process exists:

	flow, err := client.StartFlow(ctx, rota.FlowParams{Steps: []rota.StepParams{
		{Name: "extract", Kind: "extract"},
		{Name: "transform", Kind: "transform", DependsOn: []string{"extract"}, ForEach: "extract"},
		{Name: "load", Kind: "load", DependsOn: []string{"transform"}},
	}})

A step's handler reads its dependencies' outputs with Job.Inputs or Job.Input, the
element of a ForEach step with Job.Item and Job.Index, and returns its own output with
Job.SetOutput; a ForEach step's output is the array of its tasks' outputs in element
order. StartFlowTx starts a flow inside the caller's transaction, as EnqueueTx does.
GetFlow, ListFlows, CancelFlow and ReplayFlow read and steer flows.

# Errors

An error caused by the input or by a task's state wraps one of the sentinel errors
(ErrInvalid, ErrNotFound, ErrIllegalTransition, ErrConflict, ErrTxNotSupported); test
for them with errors.Is. Any other error (a lost connection, a canceled context) comes
from below and is wrapped with what the client was doing.
*/
package rota
