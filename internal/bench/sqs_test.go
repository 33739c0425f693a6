package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

// TestSQSDrain runs the SQS workload small against a real fauxqs and PostgreSQL: every
// task runs once through SQS, the counts agree, and the benchmark's queues are gone.
func TestSQSDrain(t *testing.T) {
	target := newTarget(t)
	srv := sqstest.Start(t)
	const n = 500
	res, err := SQSDrain(context.Background(), target, SQSConfig{Client: srv.Client(t), Endpoint: srv.Endpoint(),
		Tasks: n, Concurrency: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Workload != WorkloadSQS || res.Tasks != n || res.Seconds <= 0 || res.TasksPerSec <= 0 || res.Concurrency != 20 {
		t.Errorf("result %+v", res)
	}
	checkWorker(t, res, n)
	s := res.SQS
	if s == nil {
		t.Fatal("no SQS result")
	}
	// fauxqs never duplicates or loses a message: each id is sent, received and deleted once.
	if s.Sent != n || s.Received != n || s.Deleted != n || s.DeletedDuplicate != 0 || s.Failures != 0 {
		t.Errorf("SQS counts %+v, want %d sent, received and deleted, no duplicates or failures", *s, n)
	}
	if s.Endpoint != srv.Endpoint() || !strings.HasPrefix(s.Queue, "rota-bench-") || !strings.HasSuffix(s.Queue, "-"+target.Queue) {
		t.Errorf("SQS result names endpoint %q and queue %q", s.Endpoint, s.Queue)
	}
	c := s.Ceiling
	if c.Messages != n || c.Clients != DefaultCeilingClients || c.Seconds <= 0 || c.MsgsPerSec <= 0 {
		t.Errorf("ceiling %+v", c)
	}
	if s.ClientCPUPerTask <= 0 || c.ClientCPUPerMsg <= 0 {
		t.Errorf("client CPU per task %v, per ceiling message %v: want both measured", s.ClientCPUPerTask, c.ClientCPUPerMsg)
	}
	if s.Ratio != res.TasksPerSec/c.MsgsPerSec {
		t.Errorf("ratio %v, want %v / %v", s.Ratio, res.TasksPerSec, c.MsgsPerSec)
	}
	// Every queue the workload made is deleted: the task queue, the DLQ and the ceiling's.
	out, err := srv.Client(t).ListQueues(context.Background(), &sqs.ListQueuesInput{QueueNamePrefix: aws.String("rota-bench-")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.QueueUrls) != 0 {
		t.Errorf("queues left behind: %v", out.QueueUrls)
	}
}

// TestRunSQS goes through Run, which builds its SQS client from the endpoint and the
// standard AWS chain (here static test credentials in the environment).
func TestRunSQS(t *testing.T) {
	srv := sqstest.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", sqstest.Region)
	opts := tinyOptions(pgtest.AdminURL(t))
	opts.Workloads, opts.SQSEndpoint = []string{WorkloadSQS}, srv.Endpoint()
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Workload != WorkloadSQS || rep.Results[0].SQS == nil || !rep.Dropped {
		t.Fatalf("report %+v", rep)
	}
	checkWorker(t, rep.Results[0], 50)
}

func TestRunSQSNeedsAnEndpoint(t *testing.T) {
	opts := tinyOptions("postgres://nowhere.invalid/x") // fails before connecting
	opts.Workloads = []string{WorkloadDrain, WorkloadSQS}
	if _, err := Run(context.Background(), opts); !errors.Is(err, ErrNoSQSEndpoint) {
		t.Fatalf("got %v, want ErrNoSQSEndpoint", err)
	}
}

func TestSQSDrainRejectsBadConfig(t *testing.T) {
	target := &Target{Queue: NewQueueName()} // no database: the config is checked first
	for name, cfg := range map[string]SQSConfig{
		"no tasks":                {Client: sqstest.NewClient("http://127.0.0.1:1")},
		"no client":               {Tasks: 10},
		"negative ceiling client": {Client: sqstest.NewClient("http://127.0.0.1:1"), Tasks: 10, CeilingClients: -1},
	} {
		if _, err := SQSDrain(context.Background(), target, cfg); err == nil {
			t.Errorf("%s: SQSDrain succeeded, want an error", name)
		}
	}
}
