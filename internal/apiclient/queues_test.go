package apiclient_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/rotaqueue/rota/internal/api"
	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// UpdateQueue encodes a merge patch: only the fields set, null for a removed limit.
func TestUpdateQueueJSON(t *testing.T) {
	paused := true
	for want, u := range map[string]apiclient.UpdateQueue{
		`{}`:                              {},
		`{"concurrency":5,"paused":true}`: {Paused: &paused, Concurrency: apiclient.Set(5)},
		`{"group_rate":null,"rate":{"limit":10,"per_seconds":60}}`: {
			Rate: apiclient.Set(apiclient.RateLimit{Limit: 10, PerSeconds: 60}), GroupRate: apiclient.NoLimit[apiclient.RateLimit]()},
		`{"group_concurrency":null}`: {GroupConcurrency: apiclient.NoLimit[int]()},
	} {
		got, err := json.Marshal(u)
		if err != nil || string(got) != want {
			t.Errorf("marshal %+v = %s, %v; want %s", u, got, err, want)
		}
	}
}

// The queue methods against the real API on the in-memory store.
func TestQueuesRealServer(t *testing.T) {
	st := memory.New()
	defer st.Close()
	srv, err := api.New(api.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := context.Background()
	c := apiclient.New(hs.URL, "", nil)

	task, _, err := c.CreateTask(ctx, apiclient.CreateTask{Kind: "noop", Queue: "mail", GroupKey: "tenant-7"})
	if err != nil || task.GroupKey != "tenant-7" {
		t.Fatalf("create with a group key: %v, %+v", err, task)
	}
	q, err := c.UpdateQueue(ctx, "mail", apiclient.UpdateQueue{Concurrency: apiclient.Set(3),
		GroupRate: apiclient.Set(apiclient.RateLimit{Limit: 1, PerSeconds: 2})})
	if err != nil || *q.Concurrency != 3 || *q.GroupRate != (apiclient.RateLimit{Limit: 1, PerSeconds: 2}) || q.Counts["PENDING"] != 1 {
		t.Fatalf("update: %v, %+v", err, q)
	}
	if q, err = c.UpdateQueue(ctx, "mail", apiclient.UpdateQueue{Concurrency: apiclient.NoLimit[int]()}); err != nil || q.Concurrency != nil || q.GroupRate == nil {
		t.Fatalf("remove a limit: %v, %+v", err, q)
	}
	if q, err = c.PauseQueue(ctx, "mail"); err != nil || !q.Paused {
		t.Fatalf("pause: %v, %+v", err, q)
	}
	if q, err = c.GetQueue(ctx, "mail"); err != nil || !q.Paused || len(q.Raw()) == 0 {
		t.Fatalf("get: %v, %+v", err, q)
	}
	if q, err = c.ResumeQueue(ctx, "mail"); err != nil || q.Paused {
		t.Fatalf("resume: %v, %+v", err, q)
	}
	list, err := c.ListQueues(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "mail" {
		t.Fatalf("list: %v, %+v", err, list)
	}
	if _, err := c.UpdateQueue(ctx, "mail", apiclient.UpdateQueue{Concurrency: apiclient.Set(0)}); err == nil {
		t.Fatal("concurrency 0 was accepted")
	}
}
