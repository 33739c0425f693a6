package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/history"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

// sqsRig is one SQS-mode test's world: a fresh database, a fauxqs of its own, and the
// names of the two SQS queues every process of the test is pointed at.
type sqsRig struct {
	t      *testing.T
	dbURL  string
	pool   *pgxpool.Pool
	store  *postgres.Store
	sqs    *sqstest.Server
	client *sqs.Client
	queue  string // the SQS queue of Rota's default queue
	dlq    string
}

func newSQSRig(t *testing.T) *sqsRig {
	t.Helper()
	dbURL, pool := newDB(t)
	srv := sqstest.Start(t)
	st := postgres.New(pool)
	t.Cleanup(st.Close)
	return &sqsRig{t: t, dbURL: dbURL, pool: pool, store: st, sqs: srv, client: srv.Client(t),
		queue: "rota-e2e", dlq: "rota-e2e-dlq"}
}

// awsEnv is what the SDK's default chain needs to talk to fauxqs: static credentials
// (fauxqs checks none) and the region sqstest's own clients use, since fauxqs keeps
// queues per region. No instance metadata lookups.
func awsEnv() []string {
	return []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=",
		"AWS_REGION=" + sqstest.Region, "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true",
		"ROTA_SQS_QUEUE=", "ROTA_SQS_DLQ=", "ROTA_SQS_ENDPOINT=", "ROTA_MODE="}
}

// sqsFlags are the flags that point a process at this rig's database and queues.
func (r *sqsRig) sqsFlags() []string {
	return []string{"--mode", "sqs", "--database-url", r.dbURL, "--sqs-endpoint", r.sqs.Endpoint(),
		"--sqs-queue", r.queue, "--sqs-dlq", r.dlq}
}

// startServe runs `rota serve --mode sqs` (API, enqueuer, reaper) and waits until it
// listens. extra are added to (and may repeat, overriding) the rig's flags.
func (r *sqsRig) startServe(name string, extra ...string) *proc {
	r.t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}, r.sqsFlags()...)
	p := startProc(r.t, name, append(awsEnv(), "ROTA_API_TOKEN=", "ROTA_ADDR="), append(args, extra...)...)
	waitFor(r.t, 30*time.Second, name+" to listen", func() (bool, string) {
		if p.exited() {
			r.t.Fatalf("%s exited:\n%s", name, p.output())
		}
		return strings.Contains(p.output(), " listening on "), p.output()
	})
	return p
}

// startWorker runs `rota worker --mode sqs` with the rig's flags, its name as worker id,
// and extra.
func (r *sqsRig) startWorker(name string, extra ...string) *proc {
	r.t.Helper()
	args := append([]string{"worker", "--worker-id", name, "--log-level", "warn"}, r.sqsFlags()...)
	return startProc(r.t, name, awsEnv(), append(args, extra...)...)
}

// createTasks inserts tasks straight through the store and returns their ids in order.
func (r *sqsRig) createTasks(params []store.CreateParams) []uuid.UUID {
	r.t.Helper()
	res, err := r.store.CreateTasks(context.Background(), params)
	if err != nil {
		r.t.Fatal(err)
	}
	ids := make([]uuid.UUID, len(res))
	for i, c := range res {
		ids[i] = c.Task.ID
	}
	return ids
}

// sameTasks is n copies of one task description.
func sameTasks(n int, kind, payload string, maxAttempts int) []store.CreateParams {
	ps := make([]store.CreateParams, n)
	for i := range ps {
		ps[i] = store.CreateParams{Kind: kind, Payload: []byte(payload), MaxAttempts: maxAttempts}
	}
	return ps
}

// queueURL waits until the named SQS queue exists (a process creates it) and returns
// its URL.
func (r *sqsRig) queueURL(name string) string {
	r.t.Helper()
	var url string
	waitFor(r.t, 30*time.Second, "SQS queue "+name+" to exist", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := r.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return false, err.Error()
		}
		url = aws.ToString(out.QueueUrl)
		return true, ""
	})
	return url
}

// counts is the queue's message counts, or an error while fauxqs is down or the queue
// does not exist (yet).
func (r *sqsRig) counts(url string) (sqstest.Counts, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return sqstest.QueueCounts(ctx, r.client, url)
}

// waitQueueEmpty waits until the queue holds no message at all: every delivery,
// duplicate included, was deleted.
func (r *sqsRig) waitQueueEmpty(url string, timeout time.Duration) {
	r.t.Helper()
	waitFor(r.t, timeout, "the SQS queue to end empty", func() (bool, string) {
		c, err := r.counts(url)
		if err != nil {
			return false, err.Error()
		}
		return c.Total() == 0, fmt.Sprintf("%+v", c)
	})
}

// waitStatuses waits until the tasks' statuses add up to want (counts per status).
func (r *sqsRig) waitStatuses(timeout time.Duration, want map[string]int) {
	r.t.Helper()
	waitFor(r.t, timeout, fmt.Sprintf("task statuses %v", want), func() (bool, string) {
		got := statusCounts(r.t, r.pool)
		if len(got) != len(want) {
			return false, fmt.Sprint(got)
		}
		for s, n := range want {
			if got[s] != n {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
}

// taskTally is what tests check beyond history.AssertAll: how many attempts a task took
// and how many of them a reaper closed.
type taskTally struct {
	attemptCount int
	leaseExpired int // attempts closed by a reaper
}

func (r *sqsRig) tallies() map[uuid.UUID]taskTally {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `
		SELECT t.id, t.attempt_count, count(a.id) FILTER (WHERE a.outcome = 'LEASE_EXPIRED')
		FROM rota.tasks t LEFT JOIN rota.task_attempts a ON a.task_id = t.id
		GROUP BY t.id`)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]taskTally{}
	for rows.Next() {
		var id uuid.UUID
		var k taskTally
		if err := rows.Scan(&id, &k.attemptCount, &k.leaseExpired); err != nil {
			r.t.Fatal(err)
		}
		out[id] = k
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// assertFinal checks the promises from the database once every task has finished
// (history.AssertAll: each task in want ended in its status, with one consistent
// attempt history, and no other task exists) and returns the tallies for test-specific checks.
func (r *sqsRig) assertFinal(want map[uuid.UUID]string) map[uuid.UUID]taskTally {
	r.t.Helper()
	statuses := make(map[uuid.UUID]store.Status, len(want))
	for id, s := range want {
		statuses[id] = store.Status(s)
	}
	history.AssertAll(r.t, r.pool, statuses)
	return r.tallies()
}

// allWant maps every id to one status.
func allWant(status store.Status, ids ...[]uuid.UUID) map[uuid.UUID]string {
	out := map[uuid.UUID]string{}
	for _, list := range ids {
		for _, id := range list {
			out[id] = string(status)
		}
	}
	return out
}

// isMissingQueue reports whether err says the SQS queue does not exist.
func isMissingQueue(err error) bool {
	var missing *types.QueueDoesNotExist
	return err != nil && (errors.As(err, &missing) || strings.Contains(err.Error(), "NonExistentQueue") || strings.Contains(err.Error(), "QueueDoesNotExist"))
}
