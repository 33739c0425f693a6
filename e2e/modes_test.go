package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// The tests of this file run poll-mode queues, SQS-mode queues and HTTP-protocol workers
// on one database, and move queues between modes with tasks in flight: every task must
// end SUCCEEDED exactly once (docs/architecture.md, "How a queue's mode is decided").

// serveURL is the base URL a started `rota serve` printed.
func serveURL(t *testing.T, p *proc) string {
	t.Helper()
	for _, line := range strings.Split(p.output(), "\n") {
		if _, after, ok := strings.Cut(line, " listening on "); ok {
			return strings.TrimSpace(after)
		}
	}
	t.Fatalf("%s printed no URL:\n%s", p.name, p.output())
	return ""
}

// createIn creates n sleep tasks of ms milliseconds in queue.
func (r *sqsRig) createIn(queue string, n, ms int) []uuid.UUID {
	ps := sameTasks(n, "sleep", fmt.Sprintf(`{"ms": %d}`, ms), 25)
	for i := range ps {
		ps[i].Queue = queue
	}
	return r.createTasks(ps)
}

// httpWorker works queues through the HTTP worker protocol alone (claim, then complete),
// as a worker in another language would. Now and then it "dies" holding a task: it drops
// the claim without an answer, and the lease reaper must bring the task back.
type httpWorker struct {
	base    string
	queues  []string
	dropped int
	done    int
	err     error
}

func (h *httpWorker) run(ctx context.Context) {
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(path string, body any) (*http.Response, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		return client.Do(req)
	}
	for i := 0; ctx.Err() == nil; i++ {
		q := h.queues[i%len(h.queues)]
		res, err := post("/api/queues/"+q+"/claim", map[string]any{"worker_id": "http-worker", "limit": 5,
			"lease_seconds": 2, "wait_seconds": 0.2})
		if err != nil {
			if ctx.Err() == nil {
				h.err = err
			}
			return
		}
		var claimed struct {
			Tasks []struct {
				ID         string `json:"id"`
				LeaseToken string `json:"lease_token"`
			} `json:"tasks"`
		}
		err = json.NewDecoder(res.Body).Decode(&claimed)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || err != nil {
			h.err = fmt.Errorf("claim: %d %v", res.StatusCode, err)
			return
		}
		for _, task := range claimed.Tasks {
			if rand.IntN(20) == 0 {
				h.dropped++ // dies holding it
				continue
			}
			res, err := post("/api/tasks/"+task.ID+"/complete", map[string]any{"lease_token": task.LeaseToken})
			if err != nil {
				if ctx.Err() == nil {
					h.err = err
				}
				return
			}
			res.Body.Close()
			switch res.StatusCode {
			case http.StatusOK:
				h.done++
			case http.StatusConflict: // its lease was reaped meanwhile: the reaper's call
			default:
				h.err = fmt.Errorf("complete %s: %d", task.ID, res.StatusCode)
				return
			}
		}
	}
}

// TestMixedModesChaos: one database; queue "default" in SQS mode (a `serve --mode sqs`
// sends it, SQS workers work it, and so does an HTTP-protocol worker through that
// server's API), queue "polled" in poll mode (poll workers), queue "web" worked only by
// the HTTP-protocol worker through the SQS-mode server, which does not send it. Every
// worker process runs a reaper and is SIGKILLed in turn every ~300 ms. Before queue
// modes were decided by the database, an SQS-mode reaper returned expired "polled" tasks
// to ENQUEUED, where no poll worker looks, and the HTTP claim through an SQS-mode server
// never saw "web" tasks: both stayed stuck.
func TestMixedModesChaos(t *testing.T) {
	r := newSQSRig(t)
	serve := r.startServe("serve-sqs", "--sqs-create-queues", "--reap-interval", "250ms")
	base := serveURL(t, serve)
	r.queueURL(r.queue)

	sqsIDs := r.createIn("default", 300, 30)
	pollIDs := r.createIn("polled", 300, 30)
	webIDs := r.createIn("web", 150, 0)

	fast := []string{"--concurrency", "8", "--lease", "2s", "--reap-interval", "250ms", "--shutdown-grace", "1s"}
	start := func(i, gen int) *proc {
		name := fmt.Sprintf("w%d-gen%d", i, gen)
		if i%2 == 0 {
			return r.startWorker(name, append([]string{"--queues", "default"}, fast...)...)
		}
		args := append([]string{"worker", "--mode", "poll", "--database-url", r.dbURL, "--queues", "polled",
			"--worker-id", name, "--poll-interval", "100ms", "--log-level", "warn"}, fast...)
		return startProc(t, name, awsEnv(), args...)
	}
	workers := make([]*proc, 4)
	gens := make([]int, len(workers))
	for i := range workers {
		workers[i] = start(i, 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hw := &httpWorker{base: base, queues: []string{"web", "default"}}
	var wg sync.WaitGroup
	wg.Go(func() { hw.run(ctx) })

	all := len(sqsIDs) + len(pollIDs) + len(webIDs)
	kills := 0
	deadline := time.Now().Add(3 * time.Minute)
	for statusCounts(t, r.pool)["SUCCEEDED"] < all {
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("not every task succeeded: %v after %d kills (http worker: %d done, %d dropped, err %v)",
				statusCounts(t, r.pool), kills, hw.done, hw.dropped, hw.err)
		}
		time.Sleep(time.Duration(200+rand.IntN(200)) * time.Millisecond)
		i := kills % len(workers)
		workers[i].kill()
		kills++
		gens[i]++
		workers[i] = start(i, gens[i])
	}
	cancel()
	wg.Wait()
	if hw.err != nil {
		t.Errorf("http worker: %v", hw.err)
	}
	for _, w := range workers {
		w.stop(t, 15*time.Second)
	}
	serve.stop(t, 15*time.Second)

	got := r.assertFinal(allWant(store.StatusSucceeded, sqsIDs, pollIDs, webIDs))
	reaped := 0
	for _, k := range got {
		reaped += k.leaseExpired
	}
	t.Logf("%d tasks succeeded once across 3 queues after %d SIGKILLs; %d attempts reaped; the HTTP worker completed %d and dropped %d",
		all, kills, reaped, hw.done, hw.dropped)
	if kills < 4 || hw.done == 0 {
		t.Errorf("the test did not exercise its parts: %d kills, %d HTTP completions", kills, hw.done)
	}
}

// TestQueueMovesBetweenModes moves queue "default" from SQS mode to poll mode and back,
// each time while tasks are running and waiting: the workers of the old mode are
// SIGKILLed (their leases expire with tasks in flight) and the SQS server is stopped or
// started. Every task ends SUCCEEDED exactly once.
func TestQueueMovesBetweenModes(t *testing.T) {
	r := newSQSRig(t)
	fast := []string{"--concurrency", "4", "--lease", "2s", "--reap-interval", "250ms"}
	pollWorker := func(name string) *proc {
		args := append([]string{"worker", "--mode", "poll", "--database-url", r.dbURL, "--worker-id", name,
			"--poll-interval", "100ms", "--log-level", "warn"}, fast...)
		return startProc(t, name, awsEnv(), args...)
	}
	// waitSome waits until n of ids have succeeded.
	waitSome := func(what string, ids []uuid.UUID, n int) {
		waitFor(t, time.Minute, what, func() (bool, string) {
			var done int
			err := r.pool.QueryRow(context.Background(),
				`SELECT count(*) FROM rota.tasks WHERE id = ANY($1) AND status = 'SUCCEEDED'`, ids).Scan(&done)
			if err != nil {
				t.Fatal(err)
			}
			return done >= n, fmt.Sprintf("%d of %d succeeded; all tasks: %v", done, len(ids), statusCounts(t, r.pool))
		})
	}

	// SQS mode: a backlog is sent, and the SQS worker is killed with tasks running.
	serve := r.startServe("serve-sqs", "--sqs-create-queues", "--reap-interval", "250ms")
	first := r.createIn("default", 200, 50)
	sqsWorker := r.startWorker("sqs-1", fast...)
	waitSome("some tasks to run in SQS mode", first, 20)
	sqsWorker.kill()
	// The queue moves to poll mode: its SQS server goes (withdrawing its queues), and
	// poll workers take over the ENQUEUED backlog and the expired leases.
	serve.stop(t, 15*time.Second)
	poll := []*proc{pollWorker("poll-1"), pollWorker("poll-2")}
	second := r.createIn("default", 200, 50)
	// Every task of the SQS phase, sent or running when its workers went, finishes in
	// poll mode: no SQS worker runs until the queue is moved back.
	waitSome("the SQS-mode tasks to finish in poll mode", first, len(first))

	// And back to SQS mode while the poll workers hold tasks.
	for _, p := range poll {
		p.kill()
	}
	serve = r.startServe("serve-sqs-2", "--sqs-create-queues", "--reap-interval", "250ms")
	sqsWorker = r.startWorker("sqs-2", fast...)
	third := r.createIn("default", 100, 20)
	r.waitStatuses(2*time.Minute, map[string]int{"SUCCEEDED": len(first) + len(second) + len(third)})
	sqsWorker.stop(t, 15*time.Second)
	serve.stop(t, 15*time.Second)

	got := r.assertFinal(allWant(store.StatusSucceeded, first, second, third))
	reaped := 0
	for _, k := range got {
		reaped += k.leaseExpired
	}
	t.Logf("%d tasks succeeded once across two mode changes; %d attempts reaped", len(got), reaped)
	if reaped == 0 {
		t.Errorf("no lease expired: the kills did not leave tasks in flight")
	}
}
