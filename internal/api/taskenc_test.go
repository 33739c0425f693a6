package api

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// TestTaskEncoderMatchesJSON: writeTasksJSON writes what writeJSON writes, byte for
// byte, for tasks with every field set (strings that need escaping, non-ASCII, invalid
// UTF-8, HTML characters, payloads with spaces, times with and without nanoseconds and
// in another zone), with none set, and for lists with and without warnings. The full
// task must set every field of taskJSON, so a field added later without its encoding
// fails here.
func TestTaskEncoderMatchesJSON(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	whole := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 5400))
	str := func(s string) *string { return &s }
	id, token := uuid.New(), uuid.New()
	index := -3
	item := json.RawMessage(` [1, {"a": "<b>"}] `)
	full := taskJSON{
		ID: id, Queue: "q-1.x", Kind: "email.send", Payload: json.RawMessage(`{"to": "a@b.c", "html": "<b>&</b>", "n": [1, 2.50, null]}`),
		Status: store.StatusProcessing, Priority: -7, ScheduledFor: at, AttemptCount: 2, MaxAttempts: 25,
		IdempotencyKey: str("key \"quoted\" \\ \x01 \u2028 é 😀 \xff"), GroupKey: str("tenant/ü"), TimeoutSeconds: 30,
		WorkerID: str("worker<1>&"), LeaseExpiresAt: &at, CancelRequestedAt: &whole, EnqueuedAt: &at,
		ProcessingStartedAt: &whole, CompletedAt: &at, LastError: str("line 1\nline 2\t\r"),
		Output: json.RawMessage("\n{ \"ok\" : true }\n"), CreatedAt: whole, UpdatedAt: at,
		FlowID: &id, Step: "step-1", Inputs: json.RawMessage(`{"a": {}}`), Item: &item, Index: &index,
		LeaseToken: &token, Warnings: []string{"w1", "queue \"x\" has no live worker"},
		Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Tracestate: "k=v,é=1",
	}
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the full task leaves taskJSON.%s unset", v.Type().Field(i).Name)
		}
	}
	minimal := taskOut(&store.Task{ID: id, Queue: "default", Kind: "noop", Status: store.StatusPending, ScheduledFor: at, CreatedAt: at, UpdatedAt: at})
	for _, tc := range []struct {
		name string
		out  tasksJSON
	}{
		{"none", tasksJSON{Tasks: []taskJSON{}}},
		{"full", tasksJSON{Tasks: []taskJSON{full}}},
		{"minimal", tasksJSON{Tasks: []taskJSON{minimal}}},
		{"several, warnings", tasksJSON{Tasks: []taskJSON{minimal, full, minimal}, Warnings: []string{"a", "<b>"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			writeJSON(want, 201, tc.out)
			writeTasksJSON(got, 201, tc.out)
			if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Errorf("status %d %q, want %d %q", got.Code, got.Header().Get("Content-Type"), want.Code, want.Header().Get("Content-Type"))
			}
			if got.Body.String() != want.Body.String() {
				t.Errorf("body\n%s\nwant\n%s", got.Body, want.Body)
			}
		})
	}
}
