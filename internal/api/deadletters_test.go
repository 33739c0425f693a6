package api

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

func TestDeadLetters(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})

		// Make dead letters through the worker protocol: DEAD (attempts exhausted) and
		// FAILED (permanent), in two queues.
		finish := func(queue, kind string, retryable bool) uuid.UUID {
			t.Helper()
			task := c.createTask(map[string]any{"kind": kind, "queue": queue, "max_attempts": 1})
			cl := c.claimOne(queue)
			var out taskJSON
			c.do("POST", "/api/tasks/"+task.ID.String()+"/fail", map[string]any{
				"lease_token": cl.LeaseToken, "error": "broken " + kind, "retryable": retryable,
			}).want(t, http.StatusOK, &out)
			want := store.StatusDead
			if !retryable {
				want = store.StatusFailed
			}
			if out.Status != want {
				t.Fatalf("status %s, want %s", out.Status, want)
			}
			return task.ID
		}
		dead1 := finish("a", "k1", true)
		failed1 := finish("a", "k2", false)
		dead2 := finish("b", "k1", true)
		failed2 := finish("b", "k2", false)
		dead3 := finish("a", "k1", true)

		var list deadLetterListJSON
		c.do("GET", "/api/dead-letters", nil).want(t, http.StatusOK, &list)
		if len(list.DeadLetters) != 5 || list.NextCursor != "" {
			t.Fatalf("dead letters: %+v", list)
		}
		first := list.DeadLetters[0] // newest first
		if first.TaskID != dead3 || first.Reason != store.StatusDead || first.Queue != "a" || first.Kind != "k1" ||
			first.WorkerID == nil || *first.WorkerID != "w1" || first.AttemptCount != 1 || first.MaxAttempts != 1 ||
			first.Error == nil || *first.Error != "broken k1" || first.ReplayedAt != nil {
			t.Fatalf("dead letter %+v", first)
		}
		taskIDs := func(l deadLetterListJSON) []uuid.UUID {
			var ids []uuid.UUID
			for _, d := range l.DeadLetters {
				ids = append(ids, d.TaskID)
			}
			return ids
		}
		c.do("GET", "/api/dead-letters?reason=FAILED", nil).want(t, http.StatusOK, &list)
		if got := taskIDs(list); !slices.Equal(got, []uuid.UUID{failed2, failed1}) {
			t.Fatalf("FAILED: %v", got)
		}
		c.do("GET", "/api/dead-letters?queue=a&kind=k1", nil).want(t, http.StatusOK, &list)
		if got := taskIDs(list); !slices.Equal(got, []uuid.UUID{dead3, dead1}) {
			t.Fatalf("a/k1: %v", got)
		}
		// Paging.
		c.do("GET", "/api/dead-letters?limit=2", nil).want(t, http.StatusOK, &list)
		if len(list.DeadLetters) != 2 || list.NextCursor == "" {
			t.Fatalf("page 1: %+v", list)
		}
		var page2 deadLetterListJSON
		c.do("GET", "/api/dead-letters?limit=2&cursor="+list.NextCursor, nil).want(t, http.StatusOK, &page2)
		if got := taskIDs(page2); !slices.Equal(got, []uuid.UUID{dead2, failed1}) {
			t.Fatalf("page 2: %v", got)
		}
		for _, bad := range []string{"?reason=CANCELED", "?limit=0", "?cursor=zz", "?status=DEAD"} {
			c.do("GET", "/api/dead-letters"+bad, nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		}

		// Single replay.
		var one taskJSON
		c.do("POST", "/api/tasks/"+dead1.String()+"/replay", nil).want(t, http.StatusOK, &one)
		if one.Status != store.StatusPending || one.AttemptCount != 0 {
			t.Fatalf("replayed %+v", one)
		}
		c.do("POST", "/api/tasks/"+dead1.String()+"/replay", nil).wantError(t, http.StatusConflict, codeIllegalTransition)
		c.do("GET", "/api/dead-letters?queue=a&kind=k1", nil).want(t, http.StatusOK, &list)
		for _, d := range list.DeadLetters {
			if (d.TaskID == dead1) != (d.ReplayedAt != nil) {
				t.Fatalf("replayed_at of %s: %v", d.TaskID, d.ReplayedAt)
			}
		}

		// Bulk replay: by reason, then by id, then the rest; oldest first.
		var rep replayedJSON
		c.do("POST", "/api/dead-letters/replay", map[string]any{"reason": "FAILED", "limit": 1}).want(t, http.StatusOK, &rep)
		if rep.Replayed != 1 || len(rep.Tasks) != 1 || rep.Tasks[0].ID != failed1 || rep.Tasks[0].Status != store.StatusPending {
			t.Fatalf("replay FAILED limit 1: %+v", rep)
		}
		c.do("POST", "/api/dead-letters/replay", map[string]any{"task_ids": []string{dead3.String(), dead1.String()}}).want(t, http.StatusOK, &rep)
		if rep.Replayed != 1 || rep.Tasks[0].ID != dead3 {
			t.Fatalf("replay by id (dead1 is PENDING already): %+v", rep)
		}
		c.do("POST", "/api/dead-letters/replay", map[string]any{"task_ids": []string{}}).want(t, http.StatusOK, &rep)
		if rep.Replayed != 0 || rep.Tasks == nil {
			t.Fatalf("replay of no ids: %+v", rep)
		}
		// No body at all: everything left (dead2, failed2).
		c.do("POST", "/api/dead-letters/replay", nil).want(t, http.StatusOK, &rep)
		var got []uuid.UUID
		for _, task := range rep.Tasks {
			got = append(got, task.ID)
		}
		if rep.Replayed != 2 || !slices.Equal(got, []uuid.UUID{dead2, failed2}) {
			t.Fatalf("replay the rest: %+v", got)
		}
		c.do("POST", "/api/dead-letters/replay", `{}`).want(t, http.StatusOK, &rep)
		if rep.Replayed != 0 {
			t.Fatalf("nothing left to replay, replayed %d", rep.Replayed)
		}

		for _, bad := range []string{`{"reason": "CANCELED"}`, `{"limit": 0}`, `{"limit": 1001}`, `{"task_ids": ["nope"]}`, `{"queues": "a"}`} {
			c.do("POST", "/api/dead-letters/replay", bad).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		}
	})
}

// TestFiltersMustBeNames: a queue or kind filter that is not a valid name (NUL, invalid
// UTF-8, a space) is a 400 on both stores, never a 500 from PostgreSQL, and a bulk replay
// with one replays nothing.
func TestFiltersMustBeNames(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		task := c.createTask(map[string]any{"kind": "k", "max_attempts": 1})
		cl := c.claimOne("default")
		c.do("POST", "/api/tasks/"+task.ID.String()+"/fail", map[string]any{
			"lease_token": cl.LeaseToken, "error": "broken", "retryable": false,
		}).want(t, http.StatusOK, nil)

		for _, path := range []string{
			"/api/tasks?queue=%00", "/api/tasks?kind=%FF", "/api/tasks?queue=a%20b",
			"/api/dead-letters?kind=%FF", "/api/dead-letters?queue=%00", "/api/dead-letters?kind=a%20b",
		} {
			e := c.do("GET", path, nil).wantError(t, http.StatusBadRequest, codeInvalidRequest)
			if !strings.Contains(e.Message, "must start with a letter") {
				t.Errorf("GET %s: message %q does not say what a name looks like", path, e.Message)
			}
		}
		for _, body := range []string{`{"queue":"\u0000"}`, `{"kind":"\u0000"}`, "{\"queue\":\"\xff\"}", `{"queue":"a b"}`} {
			c.do("POST", "/api/dead-letters/replay", body).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		}
		var got taskJSON
		c.do("GET", "/api/tasks/"+task.ID.String(), nil).want(t, http.StatusOK, &got)
		if got.Status != store.StatusFailed {
			t.Fatalf("a refused replay changed the task: %s", got.Status)
		}
	})
}
