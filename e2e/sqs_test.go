package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/rotaqueue/rota/internal/store"
)

// The SQS-mode acceptance tests (issue 4): real `rota serve --mode sqs` and `rota worker
// --mode sqs` processes, a real PostgreSQL and a real fauxqs. Every verdict comes from the
// database (sqsRig.assertFinal); SQS is only checked to end empty.

// TestSQSHappyPath: 2,000 tasks through 2 enqueuers and 3 SQS workers, all SUCCEEDED
// with exactly one attempt, and no message left behind.
func TestSQSHappyPath(t *testing.T) {
	r := newSQSRig(t)
	const n = 2000
	ids := r.createTasks(sameTasks(n, "noop", `{}`, 5))

	for i := range 2 {
		r.startServe(fmt.Sprintf("serve%d", i), "--sqs-create-queues", "--enqueue-interval", "100ms")
	}
	workers := make([]*proc, 3)
	for i := range workers {
		workers[i] = r.startWorker(fmt.Sprintf("worker%d", i), "--sqs-create-queues", "--concurrency", "20")
	}
	r.waitStatuses(3*time.Minute, map[string]int{"SUCCEEDED": n})
	r.waitQueueEmpty(r.queueURL(r.queue), time.Minute)
	for _, w := range workers {
		w.stop(t, 15*time.Second)
	}

	tallies := r.assertFinal(allWant(store.StatusSucceeded, ids))
	for id, k := range tallies {
		if k.attemptCount != 1 {
			t.Errorf("task %s took %d attempts, want 1 (nothing failed)", id, k.attemptCount)
		}
	}
	// Every worker took part: each receives its share of the messages.
	perWorker := map[string]int{}
	rows, err := r.pool.Query(context.Background(), `SELECT worker_id, count(*) FROM rota.tasks GROUP BY worker_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var w string
		var c int
		if err := rows.Scan(&w, &c); err != nil {
			t.Fatal(err)
		}
		perWorker[w] = c
	}
	rows.Close()
	for i := range workers {
		if perWorker[fmt.Sprintf("worker%d", i)] == 0 {
			t.Errorf("worker%d ran no task: %v", i, perWorker)
		}
	}
	t.Logf("tasks per worker: %v", perWorker)
}

// TestSQSDuplicates: the test sends every task id three extra times, one copy ahead of
// the enqueuer's message and two while the workers run, each round shuffled, plus two
// bodies that name no task. Each task still runs exactly once and every message,
// duplicate or poison, ends deleted.
func TestSQSDuplicates(t *testing.T) {
	r := newSQSRig(t)
	const n = 300
	ids := r.createTasks(sameTasks(n, "sleep", `{"ms": 100}`, 5))
	// The test sends before any process runs, so it makes the queues; the processes find
	// them by name.
	mainURL := r.sqs.CreateQueue(t, r.queue)
	r.sqs.CreateQueue(t, r.dlq)

	bodies := func() []string {
		out := make([]string, n)
		for i, id := range ids {
			out[i] = id.String()
		}
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	// Copies that arrive before the originals, and two bodies that are not task ids.
	sendBodies(t, r.client, mainURL, append(bodies(), "not-a-task-id", uuid.NewString()))

	r.startServe("serve", "--enqueue-interval", "100ms", "--redelivery-timeout", "1m")
	r.waitStatuses(time.Minute, map[string]int{"ENQUEUED": n})
	for i := range 2 {
		r.startWorker(fmt.Sprintf("worker%d", i), "--concurrency", "10", "--sqs-wait", "1")
	}
	// Two more rounds while the tasks run and finish.
	sendBodies(t, r.client, mainURL, append(bodies(), bodies()...))

	r.waitStatuses(2*time.Minute, map[string]int{"SUCCEEDED": n})
	r.waitQueueEmpty(mainURL, time.Minute)

	tallies := r.assertFinal(allWant(store.StatusSucceeded, ids))
	for id, k := range tallies {
		if k.attemptCount != 1 {
			t.Errorf("task %s took %d attempts, want 1: a duplicate message claimed it again", id, k.attemptCount)
		}
	}
}

// sendBodies sends one message per body, in order, in batches of 10.
func sendBodies(t *testing.T, client *sqs.Client, queueURL string, bodies []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for start := 0; start < len(bodies); start += 10 {
		batch := bodies[start:min(start+10, len(bodies))]
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		for i, b := range batch {
			entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)}
		}
		out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if err != nil {
			t.Fatalf("send duplicates: %v", err)
		}
		if len(out.Failed) > 0 {
			t.Fatalf("send duplicates: %d failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
	}
}

// TestSQSWorkerCrash: SQS workers are killed with SIGKILL at random moments while their
// sleep tasks run, and restarted. The reapers return the orphaned tasks to ENQUEUED, the
// enqueuer sends them again, and every task succeeds exactly once within its attempts.
func TestSQSWorkerCrash(t *testing.T) {
	r := newSQSRig(t)
	const n = 400
	ids := r.createTasks(sameTasks(n, "sleep", `{"ms": 150}`, 25))

	r.startServe("serve", "--sqs-create-queues", "--enqueue-interval", "100ms",
		"--redelivery-timeout", "3s", "--reap-interval", "250ms")
	workerArgs := []string{"--sqs-create-queues", "--concurrency", "8", "--lease", "2s",
		"--reap-interval", "250ms", "--sqs-wait", "1", "--shutdown-grace", "2s"}
	workers := make([]*proc, 3)
	gens := make([]int, 3)
	for i := range workers {
		workers[i] = r.startWorker(fmt.Sprintf("worker%d-gen0", i), workerArgs...)
	}

	kills := 0
	deadline := time.Now().Add(4 * time.Minute)
	for {
		counts := statusCounts(t, r.pool)
		if counts["SUCCEEDED"] == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all tasks succeeded before the deadline: %v (after %d kills)", counts, kills)
		}
		time.Sleep(150*time.Millisecond + rand.N(300*time.Millisecond))
		i := rand.N(len(workers))
		workers[i].kill()
		kills++
		gens[i]++
		workers[i] = r.startWorker(fmt.Sprintf("worker%d-gen%d", i, gens[i]), workerArgs...)
	}
	// Messages that killed workers had received come back after their visibility
	// timeout; the live workers delete them as duplicates.
	r.waitQueueEmpty(r.queueURL(r.queue), time.Minute)
	for _, w := range workers {
		w.stop(t, 15*time.Second)
	}

	tallies := r.assertFinal(allWant(store.StatusSucceeded, ids))
	reaped := 0
	for _, k := range tallies {
		reaped += k.leaseExpired
	}
	t.Logf("all %d tasks succeeded after %d SIGKILLs; %d attempts were reaped", n, kills, reaped)
	if kills < 3 || reaped == 0 {
		t.Errorf("%d kills, %d reaped attempts: the test did not exercise crashes mid-handler", kills, reaped)
	}
}

// gate is the loopback HTTP service an `http` task calls: the first call of each task
// blocks until the test opens the gate, so the test knows the handler is running and
// decides when it ends; later calls pass at once. It counts calls per task.
type gate struct {
	started chan string // receives the task id of each first call
	open    chan struct{}

	mu   sync.Mutex
	hits map[string]int
}

func newGate() *gate {
	return &gate{started: make(chan string, 16), open: make(chan struct{}), hits: map[string]int{}}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Rota-Task-Id")
	g.mu.Lock()
	g.hits[id]++
	first := g.hits[id] == 1
	g.mu.Unlock()
	if first {
		g.started <- id
		select {
		case <-g.open:
		case <-r.Context().Done():
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (g *gate) calls(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hits[id]
}

// pgProxy puts a toxiproxy proxy (in process, on loopback) in front of the database of
// dbURL and returns it with the URL that goes through it.
func pgProxy(t *testing.T, dbURL string) (*toxiproxy.Proxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(server, "postgres", "127.0.0.1:0", net.JoinHostPort(host, port))
	if err := p.Start(); err != nil {
		t.Fatalf("toxiproxy: %v", err)
	}
	t.Cleanup(p.Stop)
	proxied := *u
	proxied.Host = p.Listen // the address it actually listens on
	return p, proxied.String()
}

// TestSQSDBFailureBeforeDelete: a worker's PostgreSQL connection (through a proxy) is cut
// while its handler runs, after the claim and before the outcome write. The outcome
// cannot be written, so the message must not be deleted: it stays in the queue and
// becomes visible again. That worker is then killed; another worker's reaper takes the
// task back and that worker finishes it, once.
func TestSQSDBFailureBeforeDelete(t *testing.T) {
	r := newSQSRig(t)
	g := newGate()
	srv := httptest.NewServer(g)
	defer srv.Close()
	defer close(g.open) // never leave a handler blocked on a failed test
	proxy, proxiedURL := pgProxy(t, r.dbURL)

	// No reaper runs until worker B starts: while the test watches the message, nothing
	// may take the task back from worker A (and send it again).
	r.startServe("serve", "--sqs-create-queues", "--enqueue-interval", "100ms",
		"--redelivery-timeout", "3s", "--reap-interval", "1h")
	a := r.startWorker("worker-a", "--sqs-create-queues", "--database-url", proxiedURL,
		"--lease", "2s", "--sqs-wait", "1", "--reap-interval", "-1s")
	payload, _ := json.Marshal(map[string]any{"url": srv.URL + "/gate", "method": "POST"})
	id := r.createTasks([]store.CreateParams{{Kind: "http", Payload: payload, MaxAttempts: 5}})[0]

	select {
	case got := <-g.started:
		if got != id.String() {
			t.Fatalf("the gate saw task %s, want %s", got, id)
		}
	case <-time.After(time.Minute):
		t.Fatalf("worker A never ran the task:\n%s", a.output())
	}
	task, err := r.store.GetTask(context.Background(), id)
	if err != nil || task.Status != store.StatusProcessing || task.WorkerID != "worker-a" {
		t.Fatalf("while its handler runs the task is %s, want PROCESSING by worker-a", statusOf(task, err))
	}
	mainURL := r.queueURL(r.queue)

	// Cut worker A off the database (open connections reset, new ones refused), then
	// let the handler succeed: the outcome write can only fail.
	proxy.Stop()
	select {
	case g.open <- struct{}{}:
	case <-time.After(time.Minute):
		t.Fatal("the handler stopped waiting at the gate")
	}
	// The runtime's committer logs each failed try of the outcome write.
	waitFor(t, time.Minute, "worker A to fail writing the outcome twice", func() (bool, string) {
		return strings.Count(a.output(), "record outcomes failed") >= 2, a.output()
	})
	// Freeze worker A, which would otherwise receive the message again (and fail to
	// claim it) the moment it comes back. The message must survive: in flight now, and
	// received again once its visibility (no longer extended) has run out. fauxqs counts
	// an expired message as in flight until the next receive, so the test receives it.
	a.signal(syscall.SIGSTOP)
	if c, err := r.counts(mainURL); err != nil || c.Total() != 1 {
		t.Fatalf("after the failed outcome write the queue holds %+v (%v), want the task's one message", c, err)
	}
	waitFor(t, time.Minute, "the message to come back", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := r.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(mainURL),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if aws.ToString(m.Body) != id.String() {
				t.Fatalf("received %q, want only the task's message %s", aws.ToString(m.Body), id)
			}
		}
		return len(out.Messages) == 1, "still in flight"
	})

	a.kill()
	b := r.startWorker("worker-b", "--sqs-create-queues", "--lease", "2s", "--sqs-wait", "1", "--reap-interval", "250ms")
	r.waitStatuses(time.Minute, map[string]int{"SUCCEEDED": 1})
	r.waitQueueEmpty(mainURL, time.Minute)
	b.stop(t, 15*time.Second)

	r.assertFinal(allWant(store.StatusSucceeded, []uuid.UUID{id}))
	attempts, err := r.store.ListAttempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range attempts {
		switch at.WorkerID {
		case "worker-a":
			if at.Outcome != store.OutcomeLeaseExpired {
				t.Errorf("worker A's attempt ended %q, want %s", at.Outcome, store.OutcomeLeaseExpired)
			}
		case "worker-b":
		default:
			t.Errorf("attempt by unexpected worker %q", at.WorkerID)
		}
		if at.Outcome == store.OutcomeSucceeded && at.WorkerID != "worker-b" {
			t.Errorf("success recorded for %q, want worker-b", at.WorkerID)
		}
	}
	t.Logf("%d attempts; the handler was called %d times (side effects are at-least-once)", len(attempts), g.calls(id.String()))
}

// TestSQSOutage: fauxqs is killed mid-run and restarted empty, losing every queue and
// every message. The enqueuer recreates the queues and sends the lost tasks again once
// their delivery looks lost; every task still succeeds exactly once.
func TestSQSOutage(t *testing.T) {
	r := newSQSRig(t)
	const n = 400
	ids := r.createTasks(sameTasks(n, "sleep", `{"ms": 50}`, 25))

	r.startServe("serve", "--sqs-create-queues", "--enqueue-interval", "100ms",
		"--redelivery-timeout", "2s", "--reap-interval", "250ms")
	for i := range 2 {
		r.startWorker(fmt.Sprintf("worker%d", i), "--sqs-create-queues", "--concurrency", "4",
			"--lease", "3s", "--sqs-wait", "1", "--reap-interval", "250ms")
	}
	waitFor(t, 2*time.Minute, "some tasks to succeed", func() (bool, string) {
		c := statusCounts(t, r.pool)
		return c["SUCCEEDED"] >= n/10, fmt.Sprint(c)
	})
	r.sqs.Kill()
	lost := statusCounts(t, r.pool)
	if lost["ENQUEUED"] == 0 {
		t.Fatalf("no task was waiting in SQS when it died (%v): nothing was lost", lost)
	}
	time.Sleep(time.Second) // the outage
	r.sqs.Restart()
	t.Logf("fauxqs restarted empty; statuses when it died: %v", lost)

	r.waitStatuses(3*time.Minute, map[string]int{"SUCCEEDED": n})
	r.waitQueueEmpty(r.queueURL(r.queue), time.Minute)
	r.assertFinal(allWant(store.StatusSucceeded, ids))
}

// deadTaskEvent is the DLQ message (DESIGN.md section 3).
type deadTaskEvent struct {
	TaskID       uuid.UUID `json:"task_id"`
	Kind         string    `json:"kind"`
	Queue        string    `json:"queue"`
	WorkerID     string    `json:"worker_id"`
	AttemptCount int       `json:"attempt_count"`
	MaxAttempts  int       `json:"max_attempts"`
	Error        string    `json:"error"`
	Reason       string    `json:"reason"`
	Timestamp    time.Time `json:"timestamp"`
}

// TestSQSRetriesAndDLQ: failing tasks retry through SQS and end DEAD (attempts spent) or
// FAILED (a permanent error), each with a DLQ message that matches the database. Then the
// DLQ is deleted under the running processes: publishing fails, yet tasks keep finishing
// and their main messages are deleted, and their events wait in the database; once the
// DLQ is back, each of them is published.
func TestSQSRetriesAndDLQ(t *testing.T) {
	r := newSQSRig(t)
	// The test owns the queues (it deletes the DLQ later); no process may recreate them.
	mainURL := r.sqs.CreateQueue(t, r.queue)
	dlqURL := r.sqs.CreateQueue(t, r.dlq)

	var params []store.CreateParams
	params = append(params, sameTasks(3, "fail", `{"times": 3}`, 3)...)        // DEAD after 3
	params = append(params, sameTasks(2, "fail", `{}`, 2)...)                  // DEAD after 2
	params = append(params, sameTasks(2, "fail", `{"permanent": true}`, 5)...) // FAILED after 1
	params = append(params, sameTasks(2, "fail", `{"times": 1}`, 3)...)        // SUCCEEDED on the 2nd
	ids := r.createTasks(params)
	want := map[uuid.UUID]string{}
	wantAttempts := map[uuid.UUID]int{}
	for i, id := range ids {
		switch {
		case i < 5:
			want[id], wantAttempts[id] = "DEAD", params[i].MaxAttempts
		case i < 7:
			want[id], wantAttempts[id] = "FAILED", 1
		default:
			want[id], wantAttempts[id] = "SUCCEEDED", 2
		}
	}

	serve := r.startServe("serve", "--enqueue-interval", "100ms", "--redelivery-timeout", "30s", "--reap-interval", "250ms")
	workers := make([]*proc, 2)
	for i := range workers {
		workers[i] = r.startWorker(fmt.Sprintf("worker%d", i), "--sqs-wait", "1", "--lease", "5s")
	}
	r.waitStatuses(2*time.Minute, map[string]int{"DEAD": 5, "FAILED": 2, "SUCCEEDED": 2})
	r.waitQueueEmpty(mainURL, time.Minute)
	tallies := r.assertFinal(want)
	for id, n := range wantAttempts {
		if tallies[id].attemptCount != n {
			t.Errorf("task %s (%s) took %d attempts, want %d", id, want[id], tallies[id].attemptCount, n)
		}
	}

	// One DLQ event per DEAD or FAILED task, matching its dead letter and its row.
	events := receiveDeadTaskEvents(t, r, dlqURL, 7)
	for _, e := range events {
		checkDeadTaskEvent(t, r, e, want)
	}

	// The DLQ goes away under the running processes.
	ctx := context.Background()
	if _, err := r.client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dlqURL)}); err != nil {
		t.Fatal(err)
	}
	moreFailed := r.createTasks(sameTasks(3, "fail", `{"permanent": true}`, 5))
	moreOK := r.createTasks(sameTasks(20, "noop", `{}`, 5))
	for _, id := range moreFailed {
		want[id] = "FAILED"
	}
	for _, id := range moreOK {
		want[id] = "SUCCEEDED"
	}
	r.waitStatuses(2*time.Minute, map[string]int{"DEAD": 5, "FAILED": 5, "SUCCEEDED": 22})
	r.waitQueueEmpty(mainURL, time.Minute)
	r.assertFinal(want)
	for _, id := range moreFailed {
		var n int
		if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM rota.dead_letters WHERE task_id = $1 AND reason = 'FAILED'`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("task %s: %d FAILED dead letters in the database, want 1 (the publish failed, the record must not)", id, n)
		}
	}
	// The publishes really failed: the server said so, and nothing recreated the DLQ.
	// The events wait in the database meanwhile.
	waitFor(t, 30*time.Second, "a failed DLQ publish", func() (bool, string) {
		return strings.Contains(serve.output(), "dead-letter events not published"), serve.output()
	})
	if _, err := r.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(r.dlq)}); !isMissingQueue(err) {
		t.Errorf("the deleted DLQ exists again (GetQueueUrl: %v): the publish failure was not exercised", err)
	}
	var waiting int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM rota.dead_letters WHERE dlq_pending AND task_id = ANY ($1)`, moreFailed).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if waiting != len(moreFailed) {
		t.Errorf("%d of the %d unpublished events wait in the database", waiting, len(moreFailed))
	}

	// The DLQ comes back (same name, same URL): the waiting events are published, once.
	dlqURL = r.sqs.CreateQueue(t, r.dlq)
	for _, e := range receiveDeadTaskEvents(t, r, dlqURL, len(moreFailed)) {
		checkDeadTaskEvent(t, r, e, want)
	}
}

// TestSQSReapedDeathReachesDLQ: a task whose worker is SIGKILLed during its last
// attempt is ended DEAD by the lease reaper, not by any worker; its DeadTaskEvent still
// reaches the DLQ (through the dead-letter outbox), matching the database.
func TestSQSReapedDeathReachesDLQ(t *testing.T) {
	r := newSQSRig(t)
	r.sqs.CreateQueue(t, r.queue)
	dlqURL := r.sqs.CreateQueue(t, r.dlq)
	ids := r.createTasks(sameTasks(2, "sleep", `{"ms": 60000}`, 1))

	r.startServe("serve", "--enqueue-interval", "100ms", "--reap-interval", "250ms")
	w := r.startWorker("doomed", "--sqs-wait", "1", "--lease", "2s")
	r.waitStatuses(time.Minute, map[string]int{"PROCESSING": len(ids)})
	w.kill()
	r.waitStatuses(time.Minute, map[string]int{"DEAD": len(ids)})

	want := allWant(store.StatusDead, ids)
	tallies := r.assertFinal(want)
	for _, id := range ids {
		if tallies[id].leaseExpired != 1 {
			t.Errorf("task %s: %d attempts ended by the reaper, want 1", id, tallies[id].leaseExpired)
		}
	}
	for _, e := range receiveDeadTaskEvents(t, r, dlqURL, len(ids)) {
		checkDeadTaskEvent(t, r, e, want)
		if e.WorkerID != "doomed" || !strings.Contains(e.Error, "lease expired") {
			t.Errorf("event %+v: want the killed worker's id and the reaper's error", e)
		}
	}
}

// receiveDeadTaskEvents receives and deletes DLQ messages until it holds events for
// want distinct tasks. Two events for one task are an error.
func receiveDeadTaskEvents(t *testing.T, r *sqsRig, dlqURL string, want int) []deadTaskEvent {
	t.Helper()
	byTask := map[uuid.UUID]deadTaskEvent{}
	waitFor(t, time.Minute, fmt.Sprintf("%d DLQ events", want), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := r.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var e deadTaskEvent
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &e); err != nil {
				t.Fatalf("DLQ message %q: %v", aws.ToString(m.Body), err)
			}
			if _, dup := byTask[e.TaskID]; dup {
				t.Errorf("a second DLQ event for task %s: %s", e.TaskID, aws.ToString(m.Body))
			}
			byTask[e.TaskID] = e
			if _, err := r.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		return len(byTask) >= want, fmt.Sprintf("%d events", len(byTask))
	})
	events := make([]deadTaskEvent, 0, len(byTask))
	for _, e := range byTask {
		events = append(events, e)
	}
	return events
}

// checkDeadTaskEvent compares a DLQ event with the task's dead letter and row.
func checkDeadTaskEvent(t *testing.T, r *sqsRig, e deadTaskEvent, want map[uuid.UUID]string) {
	t.Helper()
	status, ok := want[e.TaskID]
	if !ok || (status != "DEAD" && status != "FAILED") {
		t.Errorf("DLQ event for task %s, which should end %q", e.TaskID, status)
		return
	}
	var dl deadTaskEvent
	var workerID, errText *string
	var created time.Time
	var letters int
	err := r.pool.QueryRow(context.Background(), `
		SELECT d.kind, d.queue, d.worker_id, d.attempt_count, d.max_attempts, d.error, d.reason, d.created_at,
		       (SELECT count(*) FROM rota.dead_letters x WHERE x.task_id = d.task_id)
		FROM rota.dead_letters d WHERE d.task_id = $1`, e.TaskID).
		Scan(&dl.Kind, &dl.Queue, &workerID, &dl.AttemptCount, &dl.MaxAttempts, &errText, &dl.Reason, &created, &letters)
	if err != nil {
		t.Errorf("task %s: dead letter: %v", e.TaskID, err)
		return
	}
	dl.TaskID, dl.WorkerID, dl.Error = e.TaskID, deref(workerID), deref(errText)
	task, err := r.store.GetTask(context.Background(), e.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if letters != 1 {
		t.Errorf("task %s: %d dead letters, want 1", e.TaskID, letters)
	}
	got := e
	got.Timestamp = time.Time{}
	if got != dl || e.Reason != status || string(task.Status) != status || task.AttemptCount != e.AttemptCount || task.WorkerID != e.WorkerID {
		t.Errorf("DLQ event %+v\ndoes not match the dead letter %+v and the task (%s, %d attempts, worker %q)",
			e, dl, task.Status, task.AttemptCount, task.WorkerID)
	}
	if e.WorkerID == "" || e.Error == "" {
		t.Errorf("DLQ event %+v lacks the worker or the error", e)
	}
	if e.Timestamp.IsZero() || e.Timestamp.Before(task.CreatedAt.Add(-time.Minute)) || e.Timestamp.After(time.Now().Add(time.Minute)) {
		t.Errorf("DLQ event timestamp %v, want between the task's creation (%v) and now", e.Timestamp, task.CreatedAt)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
