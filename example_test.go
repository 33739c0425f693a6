package rota_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/rotaqueue/rota"
)

// SendEmail is the payload of an "email.send" task.
type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Enqueue a task, run a worker with a handler for its kind, and wait until the task
// succeeds. The memory client keeps the example self-contained; with PostgreSQL only the
// constructor changes (rota.NewPostgresClient(pool)).
func Example() {
	ctx := context.Background()
	client := rota.NewMemoryClient()
	defer client.Close()

	task, err := client.Enqueue(ctx, rota.EnqueueParams{
		Kind:    "email.send",
		Payload: SendEmail{To: "ada@example.com", Subject: "Welcome"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("enqueued:", task.Kind, task.Status)

	mux := rota.NewMux()
	mux.HandleFunc("email.send", func(ctx context.Context, job *rota.Job) error {
		var args SendEmail
		if err := json.Unmarshal(job.Task.Payload, &args); err != nil {
			return rota.Permanent(err) // a bad payload will never succeed
		}
		fmt.Printf("sending %q to %s (attempt %d)\n", args.Subject, args.To, job.Task.AttemptCount)
		return nil
	})
	worker, err := client.NewWorker(rota.WorkerConfig{
		Mux:    mux,
		Queues: map[string]int{"default": 10},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Run(runCtx) }()

	// Wait for the outcome, then shut the worker down gracefully.
	for {
		task, err = client.Get(ctx, task.ID)
		if err != nil {
			log.Fatal(err)
		}
		if task.Status.Terminal() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fmt.Println("finished:", task.Status, "after", task.AttemptCount, "attempt(s)")

	// Output:
	// enqueued: email.send PENDING
	// sending "Welcome" to ada@example.com (attempt 1)
	// finished: SUCCEEDED after 1 attempt(s)
}

// An idempotency key makes enqueueing safe to repeat: the second call returns the task
// the first one created.
func ExampleClient_EnqueueWithResult() {
	ctx := context.Background()
	client := rota.NewMemoryClient()
	defer client.Close()

	p := rota.EnqueueParams{Kind: "invoice.charge", Payload: map[string]int{"invoice": 42}, IdempotencyKey: "invoice-42"}
	first, err := client.EnqueueWithResult(ctx, p)
	if err != nil {
		log.Fatal(err)
	}
	again, err := client.EnqueueWithResult(ctx, p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first existing:", first.Existing)
	fmt.Println("again existing:", again.Existing, "same task:", again.Task.ID == first.Task.ID)

	// Output:
	// first existing: false
	// again existing: true same task: true
}

// Bad input is rejected with an error wrapping ErrInvalid, and nothing is written.
func ExampleClient_Enqueue_invalid() {
	ctx := context.Background()
	client := rota.NewMemoryClient()
	defer client.Close()

	_, err := client.Enqueue(ctx, rota.EnqueueParams{Kind: "email.send", Delay: -time.Minute})
	fmt.Println(errors.Is(err, rota.ErrInvalid))
	fmt.Println(err)

	// Output:
	// true
	// enqueue: invalid input: delay must not be negative, got -1m0s
}

// A handler returns a result with Job.SetOutput; once the task SUCCEEDED, Client.Get
// shows it as Task.Output (JSON).
func ExampleJob_SetOutput() {
	ctx := context.Background()
	client := rota.NewMemoryClient()
	defer client.Close()

	mux := rota.NewMux()
	mux.HandleFunc("report.count", func(ctx context.Context, job *rota.Job) error {
		return job.SetOutput(map[string]int{"rows": 42})
	})
	worker, err := client.NewWorker(rota.WorkerConfig{
		Mux:    mux,
		Queues: map[string]int{"default": 1},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = worker.Run(runCtx) }()

	task, err := client.Enqueue(ctx, rota.EnqueueParams{Kind: "report.count"})
	if err != nil {
		log.Fatal(err)
	}
	for !task.Status.Terminal() {
		time.Sleep(10 * time.Millisecond)
		if task, err = client.Get(ctx, task.ID); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(task.Status, string(task.Output))

	// Output:
	// SUCCEEDED {"rows":42}
}

// A flow runs steps as tasks, each once its dependencies succeeded: extract lists
// files, transform runs once per file (for_each, with Job.Item), load gets every
// transform's output in file order (Job.Inputs). No orchestrator runs: the store
// creates each step's tasks in the transaction that records its last dependency's
// success.
func ExampleClient_StartFlow() {
	ctx := context.Background()
	client := rota.NewMemoryClient()
	defer client.Close()

	mux := rota.NewMux()
	mux.HandleFunc("extract", func(ctx context.Context, job *rota.Job) error {
		return job.SetOutput([]string{"a.csv", "b.csv", "c.csv"})
	})
	mux.HandleFunc("transform", func(ctx context.Context, job *rota.Job) error {
		var file string
		if err := job.Item(&file); err != nil {
			return rota.Permanent(err)
		}
		index, _ := job.Index()
		return job.SetOutput(fmt.Sprintf("%d:%s", index, file))
	})
	mux.HandleFunc("load", func(ctx context.Context, job *rota.Job) error {
		var in struct {
			Transform []string `json:"transform"`
		}
		if err := job.Inputs(&in); err != nil {
			return rota.Permanent(err)
		}
		return job.SetOutput(len(in.Transform))
	})
	worker, err := client.NewWorker(rota.WorkerConfig{
		Mux:    mux,
		Queues: map[string]int{"default": 4},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = worker.Run(runCtx) }()

	flow, err := client.StartFlow(ctx, rota.FlowParams{
		Name: "etl",
		Steps: []rota.StepParams{
			{Name: "extract", Kind: "extract"},
			{Name: "transform", Kind: "transform", DependsOn: []string{"extract"}, ForEach: "extract"},
			{Name: "load", Kind: "load", DependsOn: []string{"transform"}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for flow.Status == rota.FlowRunning {
		time.Sleep(10 * time.Millisecond)
		if flow, err = client.GetFlow(ctx, flow.ID); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(flow.Status)
	for _, step := range flow.Steps {
		fmt.Println(step.Name, step.Status, len(step.TaskIDs), string(step.Output))
	}

	// Output:
	// SUCCEEDED
	// extract SUCCEEDED 1 ["a.csv","b.csv","c.csv"]
	// transform SUCCEEDED 3 ["0:a.csv","1:b.csv","2:c.csv"]
	// load SUCCEEDED 1 3
}
