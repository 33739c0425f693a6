package sqsmode

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

func TestJudgeUnclaimedMessages(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const retry = 5 * time.Second
	task := func(status store.Status, due time.Duration) *store.Task {
		return &store.Task{Queue: "default", Status: status, ScheduledFor: now.Add(due)}
	}
	cases := []struct {
		name     string
		task     *store.Task
		err      error
		queue    string
		receives int
		want     verdict
		held     store.ClaimReport // what held the claim back: nothing unless set
	}{
		{"missing task", nil, fmt.Errorf("get: %w", store.ErrNotFound), "default", 1, verdict{action: actionDelete, reason: ReasonDuplicate}, store.ClaimReport{}},
		{"unreadable task", nil, errors.New("connection reset"), "default", 1, verdict{action: actionLeave}, store.ClaimReport{}},
		{"succeeded", task(store.StatusSucceeded, 0), nil, "default", 1, verdict{action: actionDelete, reason: ReasonDuplicate}, store.ClaimReport{}},
		{"dead", task(store.StatusDead, 0), nil, "default", 1, verdict{action: actionDelete, reason: ReasonDuplicate}, store.ClaimReport{}},
		{"failed", task(store.StatusFailed, 0), nil, "default", 1, verdict{action: actionDelete, reason: ReasonDuplicate}, store.ClaimReport{}},
		{"canceled", task(store.StatusCanceled, 0), nil, "default", 1, verdict{action: actionDelete, reason: ReasonDuplicate}, store.ClaimReport{}},
		{"held by another worker", task(store.StatusProcessing, -time.Minute), nil, "default", 1, verdict{action: actionDelete, reason: ReasonDuplicate}, store.ClaimReport{}},
		{"another queue's task", task(store.StatusEnqueued, 0), nil, "emails", 1, verdict{action: actionDelete, reason: ReasonMisrouted}, store.ClaimReport{}},
		{"misrouted even when finished", task(store.StatusSucceeded, 0), nil, "emails", 1, verdict{action: actionDelete, reason: ReasonMisrouted}, store.ClaimReport{}},
		{"retry due in a minute", task(store.StatusEnqueued, time.Minute), nil, "default", 1, verdict{action: actionDefer, hideFor: time.Minute}, store.ClaimReport{}},
		{"scheduled in two days: at most 12 h", task(store.StatusPending, 48*time.Hour), nil, "default", 1, verdict{action: actionDefer, hideFor: 12 * time.Hour}, store.ClaimReport{}},
		{"pending and due: back from a retry or reap, sent anew", task(store.StatusPending, -time.Second), nil, "default", 1, verdict{action: actionDelete, reason: ReasonDuplicate}, store.ClaimReport{}},
		{"enqueued, due, unclaimed", task(store.StatusEnqueued, -time.Second), nil, "default", 3, verdict{action: actionDefer, hideFor: retry}, store.ClaimReport{}},
		{"looked at too often", task(store.StatusPending, -time.Second), nil, "default", maxReceives + 1, verdict{action: actionDelete, reason: ReasonDuplicate}, store.ClaimReport{}},

		// Held back by a queue setting (DESIGN.md section 11): hidden, never deleted,
		// even past maxReceives, and even PENDING (which would otherwise be sent anew).
		{"paused", task(store.StatusEnqueued, -time.Second), nil, "default", 1, verdict{action: actionDefer, hideFor: heldPauseHide},
			store.ClaimReport{HeldBack: store.HeldByPause}},
		{"paused, received too often", task(store.StatusEnqueued, -time.Second), nil, "default", maxReceives + 10, verdict{action: actionDefer, hideFor: heldPauseHide},
			store.ClaimReport{HeldBack: store.HeldByPause}},
		{"concurrency full, pending again", task(store.StatusPending, -time.Second), nil, "default", maxReceives + 1, verdict{action: actionDefer, hideFor: heldConcurrencyHide},
			store.ClaimReport{HeldBack: store.HeldByConcurrency}},
		{"group concurrency full", task(store.StatusEnqueued, -time.Second), nil, "default", 2, verdict{action: actionDefer, hideFor: heldConcurrencyHide},
			store.ClaimReport{HeldBack: store.HeldByGroupConcurrency}},
		{"rate window full for 7 s", task(store.StatusEnqueued, -time.Second), nil, "default", maxReceives + 1, verdict{action: actionDefer, hideFor: 7 * time.Second},
			store.ClaimReport{HeldBack: store.HeldByRate, RetryIn: 7 * time.Second}},
		{"group rate window full for 20 ms: at least a second", task(store.StatusEnqueued, -time.Second), nil, "default", 1, verdict{action: actionDefer, hideFor: time.Second},
			store.ClaimReport{HeldBack: store.HeldByGroupRate, RetryIn: 20 * time.Millisecond}},
		{"held back and due in a minute", task(store.StatusEnqueued, time.Minute), nil, "default", 1, verdict{action: actionDefer, hideFor: time.Minute},
			store.ClaimReport{HeldBack: store.HeldByPause}},
		{"held back, but finished meanwhile", task(store.StatusSucceeded, 0), nil, "default", 1, verdict{action: actionDelete, reason: ReasonDuplicate},
			store.ClaimReport{HeldBack: store.HeldByConcurrency}},
	}
	for _, tc := range cases {
		got := judge(tc.task, tc.err, tc.queue, now, tc.receives, retry, tc.held)
		if got.why == "" {
			t.Errorf("%s: verdict has no reason for the log", tc.name)
		}
		got.why = ""
		if got != tc.want {
			t.Errorf("%s: judge = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestChunksAndVisibility(t *testing.T) {
	var sizes []int
	for _, c := range chunks(make([]int, 23), maxBatch) {
		sizes = append(sizes, len(c))
	}
	if fmt.Sprint(sizes) != "[10 10 3]" {
		t.Errorf("chunks of 23 = %v, want [10 10 3]", sizes)
	}
	if len(chunks([]int{}, maxBatch)) != 0 {
		t.Error("chunks of nothing must be empty")
	}
	for d, want := range map[time.Duration]int32{
		-time.Second: 0, 0: 0, time.Millisecond: 1, 30 * time.Second: 30, 1500 * time.Millisecond: 2, 13 * time.Hour: 43200,
	} {
		if got := visibilitySeconds(d); got != want {
			t.Errorf("visibilitySeconds(%s) = %d, want %d", d, got, want)
		}
	}
}

// TestDeadTaskEventJSON: the event is the dead letter, with its time in UTC.
func TestDeadTaskEventJSON(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123, time.FixedZone("CET", 3600))
	d := store.DeadLetter{ID: 7, TaskID: uuid.New(), Kind: "fail", Queue: "emails", WorkerID: "w1",
		AttemptCount: 3, MaxAttempts: 3, Error: "boom ééé", Reason: store.StatusDead, CreatedAt: at}
	b, err := json.Marshal(deadTaskEvent(d))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"task_id":%q,"kind":"fail","queue":"emails","worker_id":"w1","attempt_count":3,"max_attempts":3,`+
		`"error":"boom ééé","reason":"DEAD","timestamp":"2026-03-01T11:00:00.000000123Z"}`, d.TaskID)
	if string(b) != want {
		t.Errorf("event JSON\n got %s\nwant %s", b, want)
	}
}
