package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

func TestWorkerProtocol(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st, BackoffBase: time.Hour, BackoffMax: 2 * time.Hour})

		// Nothing due: an empty list, not null.
		res := c.do("POST", "/api/queues/work/claim", map[string]any{"worker_id": "w1"})
		if res.status != http.StatusOK || !strings.Contains(string(res.body), `"tasks":[]`) {
			t.Fatalf("empty claim: %d %s", res.status, res.body)
		}

		// claim -> heartbeat -> complete.
		task := c.createTask(map[string]any{"kind": "noop", "queue": "work"})
		tasks := c.claim("work", map[string]any{"worker_id": "w1", "limit": 5, "lease_seconds": 60})
		if len(tasks) != 1 || tasks[0].ID != task.ID || tasks[0].Status != store.StatusProcessing ||
			tasks[0].LeaseToken == nil || tasks[0].WorkerID == nil || *tasks[0].WorkerID != "w1" || tasks[0].AttemptCount != 1 {
			t.Fatalf("claim: %+v", tasks)
		}
		within(t, *tasks[0].LeaseExpiresAt, time.Now().Add(time.Minute), 10*time.Second)
		token := tasks[0].LeaseToken.String()
		id := task.ID.String()
		if got := c.getTask(id); got.LeaseToken != nil {
			t.Fatal("GET shows the lease token")
		}

		var hb taskJSON
		c.do("POST", "/api/tasks/"+id+"/heartbeat", map[string]any{"lease_token": token, "lease_seconds": 600}).want(t, http.StatusOK, &hb)
		within(t, *hb.LeaseExpiresAt, time.Now().Add(10*time.Minute), 10*time.Second)
		if hb.LeaseToken != nil {
			t.Fatal("heartbeat answer shows the lease token")
		}
		stale := uuid.NewString()
		c.do("POST", "/api/tasks/"+id+"/heartbeat", map[string]any{"lease_token": stale}).wantError(t, http.StatusConflict, codeLeaseLost)
		c.do("POST", "/api/tasks/"+id+"/complete", map[string]any{"lease_token": stale}).wantError(t, http.StatusConflict, codeLeaseLost)
		c.do("POST", "/api/tasks/"+id+"/fail", map[string]any{"lease_token": stale, "error": "x"}).wantError(t, http.StatusConflict, codeLeaseLost)

		var done taskJSON
		c.do("POST", "/api/tasks/"+id+"/complete", map[string]any{"lease_token": token}).want(t, http.StatusOK, &done)
		if done.Status != store.StatusSucceeded || done.CompletedAt == nil {
			t.Fatalf("complete: %+v", done)
		}
		// The same token again: the lease is gone.
		c.do("POST", "/api/tasks/"+id+"/complete", map[string]any{"lease_token": token}).wantError(t, http.StatusConflict, codeLeaseLost)
		c.do("POST", "/api/tasks/"+id+"/heartbeat", map[string]any{"lease_token": token}).wantError(t, http.StatusConflict, codeLeaseLost)

		// Unknown task: 404, whatever the token.
		unknown := "0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f"
		c.do("POST", "/api/tasks/"+unknown+"/complete", map[string]any{"lease_token": token}).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("POST", "/api/tasks/"+unknown+"/fail", map[string]any{"lease_token": token, "error": "x"}).wantError(t, http.StatusNotFound, codeNotFound)
		c.do("POST", "/api/tasks/"+unknown+"/heartbeat", map[string]any{"lease_token": token}).wantError(t, http.StatusNotFound, codeNotFound)

		// Retryable failure: back to PENDING after the server's backoff (base 1h here).
		r := c.createTask(map[string]any{"kind": "noop", "queue": "work", "max_attempts": 2})
		cl := c.claimOne("work")
		var retried taskJSON
		c.do("POST", "/api/tasks/"+r.ID.String()+"/fail", map[string]any{"lease_token": cl.LeaseToken, "error": "boom"}).want(t, http.StatusOK, &retried)
		if retried.Status != store.StatusPending || retried.LastError == nil || *retried.LastError != "boom" ||
			retried.ScheduledFor.After(time.Now().Add(time.Hour+time.Minute)) {
			t.Fatalf("retryable fail: %+v", retried)
		}

		// retry_after_seconds: due exactly then; the last attempt failing makes it DEAD.
		r2 := c.createTask(map[string]any{"kind": "noop", "queue": "w2", "max_attempts": 2})
		cl = c.claimOne("w2")
		c.do("POST", "/api/tasks/"+r2.ID.String()+"/fail", map[string]any{"lease_token": cl.LeaseToken, "error": "later", "retry_after_seconds": 0}).want(t, http.StatusOK, &retried)
		if retried.Status != store.StatusPending || retried.ScheduledFor.After(time.Now().Add(5*time.Second)) {
			t.Fatalf("retry_after_seconds 0: %+v", retried)
		}
		cl = c.claimOne("w2")
		var dead taskJSON
		c.do("POST", "/api/tasks/"+r2.ID.String()+"/fail", map[string]any{"lease_token": cl.LeaseToken, "error": "again"}).want(t, http.StatusOK, &dead)
		if dead.Status != store.StatusDead || dead.AttemptCount != 2 {
			t.Fatalf("exhausted: %+v", dead)
		}

		// Permanent failure: FAILED at once.
		p := c.createTask(map[string]any{"kind": "noop", "queue": "w3"})
		cl = c.claimOne("w3")
		var failed taskJSON
		c.do("POST", "/api/tasks/"+p.ID.String()+"/fail", map[string]any{"lease_token": cl.LeaseToken, "error": "bad input", "retryable": false}).want(t, http.StatusOK, &failed)
		if failed.Status != store.StatusFailed || *failed.LastError != "bad input" {
			t.Fatalf("permanent fail: %+v", failed)
		}

		// A cancel request makes the worker's fail a CANCELED.
		x := c.createTask(map[string]any{"kind": "noop", "queue": "w4"})
		cl = c.claimOne("w4")
		c.do("POST", "/api/tasks/"+x.ID.String()+"/cancel", nil).want(t, http.StatusOK, nil)
		var hb2 taskJSON
		c.do("POST", "/api/tasks/"+x.ID.String()+"/heartbeat", map[string]any{"lease_token": cl.LeaseToken}).want(t, http.StatusOK, &hb2)
		if hb2.CancelRequestedAt == nil {
			t.Fatal("heartbeat does not show the cancel request")
		}
		var canceled taskJSON
		c.do("POST", "/api/tasks/"+x.ID.String()+"/fail", map[string]any{"lease_token": cl.LeaseToken, "error": "canceled"}).want(t, http.StatusOK, &canceled)
		if canceled.Status != store.StatusCanceled {
			t.Fatalf("fail after cancel request: %+v", canceled)
		}

		// A long, multi-byte error message is stored (truncated), not a 500.
		m := c.createTask(map[string]any{"kind": "noop", "queue": "w5"})
		cl = c.claimOne("w5")
		long := "\x00" + strings.Repeat("€", store.MaxErrorMessageLength) // 3-byte runes: a byte cut would split one
		var trunc taskJSON
		c.do("POST", "/api/tasks/"+m.ID.String()+"/fail", map[string]any{"lease_token": cl.LeaseToken, "error": long, "retryable": false}).want(t, http.StatusOK, &trunc)
		if trunc.LastError == nil || len(*trunc.LastError) > store.MaxErrorMessageLength || !strings.HasSuffix(*trunc.LastError, "(truncated)") {
			t.Fatalf("long error stored as %d bytes", len(*trunc.LastError))
		}
	})
}

func TestWorkerProtocolValidation(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t)})
	task := c.createTask(map[string]any{"kind": "noop"})
	id := task.ID.String()
	token := uuid.NewString()
	cases := []struct {
		name, path, body string
	}{
		{"claim without worker", "/api/queues/default/claim", `{}`},
		{"claim empty worker", "/api/queues/default/claim", `{"worker_id": ""}`},
		{"claim limit 0", "/api/queues/default/claim", `{"worker_id": "w", "limit": 0}`},
		{"claim limit 101", "/api/queues/default/claim", `{"worker_id": "w", "limit": 101}`},
		{"claim lease 0", "/api/queues/default/claim", `{"worker_id": "w", "lease_seconds": 0}`},
		{"claim lease too long", "/api/queues/default/claim", `{"worker_id": "w", "lease_seconds": 3601}`},
		{"claim negative wait", "/api/queues/default/claim", `{"worker_id": "w", "wait_seconds": -1}`},
		{"claim long wait", "/api/queues/default/claim", `{"worker_id": "w", "wait_seconds": 21}`},
		{"claim unknown field", "/api/queues/default/claim", `{"worker_id": "w", "batch": 3}`},
		{"claim bad queue", "/api/queues/9bad/claim", `{"worker_id": "w"}`},
		{"heartbeat without token", "/api/tasks/" + id + "/heartbeat", `{}`},
		{"heartbeat malformed token", "/api/tasks/" + id + "/heartbeat", `{"lease_token": "nope"}`},
		{"heartbeat lease 0", "/api/tasks/" + id + "/heartbeat", `{"lease_token": "` + token + `", "lease_seconds": 0}`},
		{"complete without token", "/api/tasks/" + id + "/complete", `{}`},
		{"complete extra field", "/api/tasks/" + id + "/complete", `{"lease_token": "` + token + `", "result": 1}`},
		{"fail without error", "/api/tasks/" + id + "/fail", `{"lease_token": "` + token + `"}`},
		{"fail negative retry", "/api/tasks/" + id + "/fail", `{"lease_token": "` + token + `", "error": "e", "retry_after_seconds": -1}`},
		{"fail retry_after on permanent", "/api/tasks/" + id + "/fail", `{"lease_token": "` + token + `", "error": "e", "retryable": false, "retry_after_seconds": 1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.do("POST", tc.path, tc.body).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		})
	}
	c.do("POST", "/api/queues/default/claim", `{"worker_id": "w"`).wantError(t, http.StatusBadRequest, codeInvalidJSON)
	c.do("POST", "/api/tasks/not-a-uuid/complete", map[string]any{"lease_token": token}).wantError(t, http.StatusNotFound, codeNotFound)
	if got := c.getTask(id); got.Status != store.StatusPending {
		t.Fatalf("rejected requests changed the task: %+v", got)
	}
}

func TestLongPoll(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		// A poll tick far beyond the test: only a wake-up can end the wait early.
		c := newClient(t, Config{Store: st, LongPollInterval: time.Minute})

		// Nothing arrives: the claim answers empty when the wait is over.
		start := time.Now()
		if tasks := c.claim("lp", map[string]any{"worker_id": "w", "wait_seconds": 0.3}); len(tasks) != 0 {
			t.Fatalf("claimed %d tasks from an empty queue", len(tasks))
		}
		if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
			t.Fatalf("an empty long poll took %s, want about 300ms", d)
		}

		// A task created during the wait ends it early.
		type result struct {
			tasks []taskJSON
			took  time.Duration
		}
		done := make(chan result, 1)
		go func() {
			start := time.Now()
			tasks := c.claim("lp", map[string]any{"worker_id": "w", "wait_seconds": 15})
			done <- result{tasks, time.Since(start)}
		}()
		time.Sleep(500 * time.Millisecond) // let the claim start waiting
		created := c.createTask(map[string]any{"kind": "noop", "queue": "lp"})
		select {
		case r := <-done:
			if len(r.tasks) != 1 || r.tasks[0].ID != created.ID || r.tasks[0].LeaseToken == nil {
				t.Fatalf("long poll answered %+v", r.tasks)
			}
			if r.took > 10*time.Second {
				t.Fatalf("long poll took %s", r.took)
			}
		case <-time.After(12 * time.Second):
			t.Fatal("the long poll did not return after a task was created")
		}

		// A task of another queue does not end the wait.
		c.createTask(map[string]any{"kind": "noop", "queue": "other"})
		if tasks := c.claim("lp", map[string]any{"worker_id": "w", "wait_seconds": 0.5}); len(tasks) != 0 {
			t.Fatalf("claimed %+v from lp", tasks)
		}
	})
}

func TestLongPollFindsDelayedTasksByPolling(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t), LongPollInterval: 50 * time.Millisecond})
	c.createTask(map[string]any{"kind": "noop", "queue": "d", "delay_seconds": 0.4})
	start := time.Now()
	tasks := c.claim("d", map[string]any{"worker_id": "w", "wait_seconds": 10})
	if len(tasks) != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("claimed %d tasks after %s", len(tasks), time.Since(start))
	}
}

func TestLongPollLimitAndDisconnect(t *testing.T) {
	st := memoryStore(t)
	c := newClient(t, Config{Store: st, MaxLongPolls: 1, LongPollInterval: time.Minute})

	// One claim waits; a client that gives up ends its wait (the slot is freed).
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, "POST", c.url+"/api/queues/lim/claim", strings.NewReader(`{"worker_id":"w","wait_seconds":20}`))
		req.Header.Set("Content-Type", "application/json")
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(c.srv.longPolls) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first claim never started waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The second would wait too: 503 with Retry-After...
	res := c.do("POST", "/api/queues/lim/claim", map[string]any{"worker_id": "w2", "wait_seconds": 5})
	res.wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	if res.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	// ...but a claim that finds a task still gets it, and a claim without wait is unaffected.
	c.do("POST", "/api/queues/lim/claim", map[string]any{"worker_id": "w2"}).want(t, http.StatusOK, nil)
	c.createTask(map[string]any{"kind": "noop", "queue": "other"})
	if got := c.claim("other", map[string]any{"worker_id": "w2", "wait_seconds": 5}); len(got) != 1 {
		t.Fatalf("claimed %d", len(got))
	}

	cancel()
	wg.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for len(c.srv.longPolls) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a disconnected long poll kept its slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if tasks := c.claim("lim", map[string]any{"worker_id": "w", "wait_seconds": 0.1}); len(tasks) != 0 {
		t.Fatal("unexpected task")
	}
}

func TestCloseEndsLongPolls(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t), LongPollInterval: time.Minute})
	done := make(chan []taskJSON, 1)
	go func() { done <- c.claim("q", map[string]any{"worker_id": "w", "wait_seconds": 20}) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(c.srv.longPolls) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the claim never started waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.srv.Close()
	select {
	case tasks := <-done:
		if len(tasks) != 0 {
			t.Fatalf("claimed %v", tasks)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the long poll")
	}
}
