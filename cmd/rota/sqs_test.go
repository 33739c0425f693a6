package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
	"github.com/rotaqueue/rota/internal/testutil/testio"
)

func TestBadSQSFlagsAreUsageErrors(t *testing.T) {
	t.Setenv("ROTA_DATABASE_URL", "postgres://127.0.0.1:1/never-reached")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--sqs-queue", "jobs"}, "--sqs-queue: not used with --mode poll"},
		{[]string{"worker", "--mode", "poll", "--sqs-create-queues"}, "--sqs-create-queues: not used with --mode poll"},
		{[]string{"worker", "--sqs-wait", "5"}, "--sqs-wait: not used with --mode poll"},
		{[]string{"worker", "--mode", "sqs", "--poll-interval", "1s"}, "--poll-interval: not used with --mode sqs"},
		{[]string{"worker", "--mode", "sqs", "--sqs-wait", "0"}, "--sqs-wait must be between 1 and 20"},
		{[]string{"worker", "--mode", "sqs", "--sqs-wait", "21"}, "--sqs-wait must be between 1 and 20"},
		{[]string{"worker", "--mode", "sqs", "--sqs-endpoint", "localhost:4566"}, "--sqs-endpoint"},
		{[]string{"worker", "--mode", "sqs", "--queues", "default,billing.eu"}, `"rota-billing.eu" is not a valid SQS queue name`},
		{[]string{"worker", "--mode", "sqs", "--sqs-queue", "jobs.fifo"}, "not FIFO"},
		{[]string{"worker", "--mode", "sqs", "--sqs-dlq", "dead letters"}, "dead-letter queue"},
		{[]string{"serve", "--queues", "emails"}, "--queues: not used with --mode poll"},
		{[]string{"serve", "--redelivery-timeout", "1m"}, "--redelivery-timeout: not used with --mode poll"},
		{[]string{"serve", "--mode", "sqs", "--enqueue-batch", "0"}, "--enqueue-batch must be between 1 and 1000"},
		{[]string{"serve", "--mode", "sqs", "--enqueue-batch", "1001"}, "--enqueue-batch must be between 1 and 1000"},
		{[]string{"serve", "--mode", "sqs", "--enqueue-interval", "0s"}, "--enqueue-interval must be positive"},
		{[]string{"serve", "--mode", "sqs", "--redelivery-timeout", "-1s"}, "--redelivery-timeout must be positive"},
		{[]string{"serve", "--sqs-loss-check-interval", "10s"}, "--sqs-loss-check-interval: not used with --mode poll"},
		{[]string{"serve", "--mode", "sqs", "--sqs-loss-check-interval", "0s"}, "--sqs-loss-check-interval must be positive"},
		{[]string{"serve", "--mode", "sqs", "--queues", "a,a"}, "listed twice"},
		{[]string{"serve", "--mode", "sqs", "--queues", "ns:jobs"}, `"rota-ns:jobs" is not a valid SQS queue name`},
	}
	for _, tc := range cases {
		_, err := runCLI(t, tc.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rota %s: got %v, want a usage error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// isolateAWS gives the SQS client static test credentials and nothing else from the
// machine: no profile, no region (so the default applies), no instance metadata.
func isolateAWS(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

func TestSQSWorkerRefusesAMissingQueue(t *testing.T) {
	isolateAWS(t)
	dbURL := pgtest.NewDatabase(t)
	srv := sqstest.Start(t)
	_, err := runCLI(t, "worker", "--mode", "sqs", "--database-url", dbURL, "--sqs-endpoint", srv.Endpoint(), "--sqs-queue", "absent")
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), `SQS queue "absent" does not exist`) {
		t.Fatalf("worker on a missing queue: %v, want an error naming the queue", err)
	}
}

// TestServeAndWorkerInSQSMode runs `rota serve --mode sqs` and `rota worker --mode sqs`
// in this process against PostgreSQL and fauxqs: the queues are created, every task runs
// once, and a permanently failing task's dead-task event reaches the DLQ.
func TestServeAndWorkerInSQSMode(t *testing.T) {
	isolateAWS(t)
	dbURL := pgtest.NewDatabase(t)
	srv := sqstest.Start(t)
	common := []string{"--mode", "sqs", "--database-url", dbURL, "--sqs-endpoint", srv.Endpoint(),
		"--sqs-queue", "cli", "--sqs-dlq", "cli-dlq", "--sqs-create-queues", "--queues", "default,emails", "--log-level", "warn"}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var logs testio.LockedBuffer
	start := func(args ...string) {
		wg.Go(func() {
			if err := run(ctx, append(args, common...), &logs, &logs); err != nil {
				t.Errorf("rota %s: %v", args[0], err)
			}
		})
	}
	// The worker needs the queues serve creates; with --sqs-create-queues either may go
	// first.
	start("worker", "--sqs-wait", "1")
	start("serve", "--addr", "127.0.0.1:0", "--enqueue-interval", "50ms")
	defer func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("output of the commands:\n%s", logs.String())
		}
	}()

	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := postgres.New(pool)
	var params []store.CreateParams
	for range 40 {
		params = append(params, store.CreateParams{Kind: "noop"}, store.CreateParams{Kind: "noop", Queue: "emails"})
	}
	params = append(params, store.CreateParams{Kind: "fail", Payload: json.RawMessage(`{"permanent": true}`)})
	res, err := st.CreateTasks(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(90 * time.Second)
	for i := 0; i < len(res); {
		task, err := st.GetTask(context.Background(), res[i].Task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.Terminal() {
			want := store.StatusSucceeded
			if task.Kind == "fail" {
				want = store.StatusFailed
			}
			if task.Status != want || task.AttemptCount != 1 {
				t.Errorf("task %s (%s): %s after %d attempts, want %s after 1", task.ID, task.Kind, task.Status, task.AttemptCount, want)
			}
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is still %s", task.ID, task.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}

	client := srv.Client(t)
	dlq := srv.CreateQueue(t, "cli-dlq")
	failed := res[len(res)-1].Task.ID
	var event sqsmode.DeadTaskEvent
	for event.TaskID != failed {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &event); err != nil {
				t.Fatalf("DLQ message %q: %v", aws.ToString(m.Body), err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no dead-task event in the DLQ")
		}
	}
	if event.Reason != store.StatusFailed || event.Kind != "fail" || event.Queue != "default" {
		t.Errorf("dead-task event %+v, want the failed task's", event)
	}
}
