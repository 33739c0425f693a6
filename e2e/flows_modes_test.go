package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// createFlowsHTTP returns a create function for newFlowSet that starts each flow with
// POST /api/flows on base.
func createFlowsHTTP(t *testing.T, base string) func(flowSpec) uuid.UUID {
	c := apiClient{t: t, url: base}
	return func(f flowSpec) uuid.UUID {
		r := c.call("POST", "/api/flows", f).expect(t, "create flow", http.StatusCreated, "")
		id, err := uuid.Parse(r.str("id"))
		if err != nil || r.str("status") != "RUNNING" {
			t.Fatalf("create flow: %s", r.raw)
		}
		return id
	}
}

// flowHTTPWorker works flow steps through the HTTP worker protocol alone, as a worker
// in another language would: it claims, reads the claim answer's payload, flow_id, step,
// inputs, item and index, and completes with the output the built-in echo kind would
// give (so flowSet.check applies unchanged). Now and then it "dies" holding a task: it
// drops the claim without an answer, and the lease reaper must bring the task back.
type flowHTTPWorker struct {
	base, queue, id string
	dropped, done   int

	mu  sync.Mutex
	err error // why it stopped early
}

func (h *flowHTTPWorker) failed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// claimedStep is the part of a claim answer's task the worker reads.
type claimedStep struct {
	ID         string           `json:"id"`
	LeaseToken string           `json:"lease_token"`
	Kind       string           `json:"kind"`
	Payload    json.RawMessage  `json:"payload"`
	FlowID     *uuid.UUID       `json:"flow_id"`
	Step       string           `json:"step"`
	Inputs     json.RawMessage  `json:"inputs"`
	Item       *json.RawMessage `json:"item"`
	Index      *int             `json:"index"`
}

// echo is the built-in echo kind's output (internal/handlers) for the claimed task.
func (c claimedStep) echo() (json.RawMessage, error) {
	var p struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(c.Payload, &p); err != nil {
		return nil, err
	}
	if p.Output != nil {
		return p.Output, nil
	}
	return json.Marshal(struct {
		Payload json.RawMessage  `json:"payload"`
		Inputs  json.RawMessage  `json:"inputs,omitempty"`
		Item    *json.RawMessage `json:"item,omitempty"`
		Index   *int             `json:"index,omitempty"`
	}{c.Payload, c.Inputs, c.Item, c.Index})
}

func (h *flowHTTPWorker) run(ctx context.Context) {
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(path string, body any, out any) (int, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		if out != nil && res.StatusCode == http.StatusOK {
			err = json.NewDecoder(res.Body).Decode(out)
		}
		return res.StatusCode, err
	}
	fail := func(err error) {
		if ctx.Err() == nil {
			h.mu.Lock()
			h.err = err
			h.mu.Unlock()
		}
	}
	for ctx.Err() == nil {
		var claimed struct {
			Tasks []claimedStep `json:"tasks"`
		}
		code, err := post("/api/queues/"+h.queue+"/claim", map[string]any{"worker_id": h.id, "limit": 10,
			"lease_seconds": 2, "wait_seconds": 0.2}, &claimed)
		if err != nil || code != http.StatusOK {
			fail(fmt.Errorf("claim: %d %v", code, err))
			return
		}
		for _, task := range claimed.Tasks {
			if task.FlowID == nil || task.Step == "" || task.Inputs == nil || task.Kind != "echo" {
				fail(fmt.Errorf("claim answer without its flow step: %+v", task))
				return
			}
			if rand.IntN(20) == 0 {
				h.dropped++ // dies holding it
				continue
			}
			output, err := task.echo()
			if err != nil {
				fail(fmt.Errorf("task %s: %v", task.ID, err))
				return
			}
			code, err := post("/api/tasks/"+task.ID+"/complete", map[string]any{"lease_token": task.LeaseToken, "output": output}, nil)
			switch {
			case err != nil:
				fail(err)
				return
			case code == http.StatusOK:
				h.done++
			case code == http.StatusConflict: // its lease was reaped meanwhile: the reaper's call
			default:
				fail(fmt.Errorf("complete %s: %d", task.ID, code))
				return
			}
		}
	}
}

// TestFlowsHTTPWorkerOnly: the crash test's flows, started with POST /api/flows and
// worked only through the HTTP worker protocol by two test workers that use nothing but
// HTTP (claim, complete with "output") and now and then drop a claimed task, which the
// server's reaper brings back. The claim answer carries what a step needs (flow_id,
// step, inputs, item, index), and the outputs a worker sends are what fan in.
func TestFlowsHTTPWorkerOnly(t *testing.T) {
	dbURL, pool := newDB(t)
	base := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0",
		"--reap-interval", "250ms", "--log-level", "warn")
	flows := newFlowSet(t, 200, 50, createFlowsHTTP(t, base))

	ctx, cancel := context.WithCancel(context.Background())
	workers := []*flowHTTPWorker{{base: base, queue: "default", id: "http-1"}, {base: base, queue: "default", id: "http-2"}}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(ctx) })
	}
	stop := func() {
		cancel()
		wg.Wait()
	}
	defer stop()
	flows.wait(t, pool, 2*time.Minute, func() {
		for _, w := range workers {
			if err := w.failed(); err != nil {
				t.Fatalf("%s: %v", w.id, err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	})
	stop()
	flows.check(t, pool)
	done, dropped := 0, 0
	for _, w := range workers {
		if err := w.failed(); err != nil {
			t.Errorf("%s: %v", w.id, err)
		}
		done, dropped = done+w.done, dropped+w.dropped
	}
	t.Logf("%d flows succeeded through HTTP workers: %d completions, %d claims dropped and reaped", flows.size(), done, dropped)
	if dropped == 0 {
		t.Errorf("no claim was dropped: the reaper's part was not exercised")
	}
}

// TestFlowsSQSDuplicates: the crash test's flows in SQS mode against fauxqs, started
// with POST /api/flows on `rota serve --mode sqs`. The enqueuer sends step tasks like
// any other as the trigger creates them, and the test sends every task id it sees again
// while two `rota worker --mode sqs` work: duplicates of tasks waiting, running and done.
// Every flow SUCCEEDED, each task in one attempt (a duplicate never claims a task
// twice), and every message, duplicate or not, ends deleted.
func TestFlowsSQSDuplicates(t *testing.T) {
	r := newSQSRig(t)
	mainURL := r.sqs.CreateQueue(t, r.queue)
	r.sqs.CreateQueue(t, r.dlq)
	serve := r.startServe("serve", "--enqueue-interval", "100ms", "--redelivery-timeout", "1m")
	flows := newFlowSet(t, 200, 50, createFlowsHTTP(t, serveURL(t, serve)))
	for i := range 2 {
		r.startWorker(fmt.Sprintf("worker%d", i), "--concurrency", "10", "--sqs-wait", "1")
	}

	sent := 0
	flows.wait(t, r.pool, 2*time.Minute, func() {
		time.Sleep(200 * time.Millisecond)
		ids := r.someTaskIDs(100)
		sendBodies(t, r.client, mainURL, ids)
		sent += len(ids)
	})
	r.waitQueueEmpty(mainURL, time.Minute)

	flows.check(t, r.pool)
	for id, k := range r.tallies() {
		if k.attemptCount != 1 {
			t.Errorf("task %s took %d attempts, want 1: a duplicate message claimed it again", id, k.attemptCount)
		}
	}
	t.Logf("%d flows succeeded in SQS mode with %d duplicate messages", flows.size(), sent)
	if sent == 0 {
		t.Errorf("no duplicate was sent")
	}
}

// someTaskIDs is up to n random task ids of the database, of any status.
func (r *sqsRig) someTaskIDs(n int) []string {
	r.t.Helper()
	rows, err := r.pool.Query(context.Background(), `SELECT id::text FROM rota.tasks ORDER BY random() LIMIT $1`, n)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			r.t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}
