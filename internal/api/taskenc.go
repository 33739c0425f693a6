package api

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// writeTasksJSON writes out as writeJSON does, byte for byte (TestTaskEncoderMatchesJSON),
// with appendTaskJSON for the tasks instead of encoding/json's reflection, which was the
// larger part of POST /api/tasks/batch's own CPU for 1,000 tasks (docs/performance.md,
// "Inserts (session 10)").
func writeTasksJSON(w http.ResponseWriter, status int, out tasksJSON) {
	e := taskEncoder{buf: getTaskBuf(len(out.Tasks))}
	defer func() { putTaskBuf(e.buf) }()
	e.buf = append(e.buf, `{"tasks":[`...)
	for i := range out.Tasks {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.task(&out.Tasks[i])
	}
	e.buf = append(e.buf, ']')
	if len(out.Warnings) > 0 {
		e.buf = append(e.buf, `,"warnings":`...)
		e.strings(out.Warnings)
	}
	e.buf = append(e.buf, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(e.buf)))
	w.WriteHeader(status)
	_, _ = w.Write(e.buf) // an error means the client is gone; there is nobody to tell
}

// taskBufs keeps writeTasksJSON's buffers (about 540 bytes per task without payload)
// between answers.
var taskBufs sync.Pool

func getTaskBuf(tasks int) []byte {
	if b, ok := taskBufs.Get().(*[]byte); ok && cap(*b) >= 600*tasks {
		return (*b)[:0]
	}
	return make([]byte, 0, 600*tasks+64)
}

// putTaskBuf keeps b unless it is larger than a batch of small tasks needs.
func putTaskBuf(b []byte) {
	if cap(b) <= 1<<20 {
		taskBufs.Put(&b)
	}
}

// taskEncoder appends JSON as encoding/json encodes it with SetEscapeHTML(false).
type taskEncoder struct {
	buf     []byte
	compact bytes.Buffer // json.Compact's output for a raw message
}

// task appends t's object: taskJSON's fields in their order, with their tags' names and
// omitempty.
func (e *taskEncoder) task(t *taskJSON) {
	e.buf = append(e.buf, `{"id":`...)
	e.uuid(t.ID)
	e.key("queue")
	e.string(t.Queue)
	e.key("kind")
	e.string(t.Kind)
	e.key("payload")
	e.raw(t.Payload)
	e.key("status")
	e.string(string(t.Status))
	e.key("priority")
	e.int(t.Priority)
	e.key("scheduled_for")
	e.time(t.ScheduledFor)
	e.key("attempt_count")
	e.int(t.AttemptCount)
	e.key("max_attempts")
	e.int(t.MaxAttempts)
	e.key("idempotency_key")
	e.stringPtr(t.IdempotencyKey)
	e.key("group_key")
	e.stringPtr(t.GroupKey)
	e.key("timeout_seconds")
	e.int(t.TimeoutSeconds)
	e.key("worker_id")
	e.stringPtr(t.WorkerID)
	e.key("lease_expires_at")
	e.timePtr(t.LeaseExpiresAt)
	e.key("cancel_requested_at")
	e.timePtr(t.CancelRequestedAt)
	e.key("enqueued_at")
	e.timePtr(t.EnqueuedAt)
	e.key("processing_started_at")
	e.timePtr(t.ProcessingStartedAt)
	e.key("completed_at")
	e.timePtr(t.CompletedAt)
	e.key("last_error")
	e.stringPtr(t.LastError)
	e.key("output")
	e.raw(t.Output)
	e.key("created_at")
	e.time(t.CreatedAt)
	e.key("updated_at")
	e.time(t.UpdatedAt)
	if t.FlowID != nil {
		e.key("flow_id")
		e.uuid(*t.FlowID)
	}
	if t.Step != "" {
		e.key("step")
		e.string(t.Step)
	}
	if len(t.Inputs) > 0 {
		e.key("inputs")
		e.raw(t.Inputs)
	}
	if t.Item != nil {
		e.key("item")
		e.raw(*t.Item)
	}
	if t.Index != nil {
		e.key("index")
		e.int(*t.Index)
	}
	if t.LeaseToken != nil {
		e.key("lease_token")
		e.uuid(*t.LeaseToken)
	}
	if len(t.Warnings) > 0 {
		e.key("warnings")
		e.strings(t.Warnings)
	}
	if t.Traceparent != "" {
		e.key("traceparent")
		e.string(t.Traceparent)
	}
	if t.Tracestate != "" {
		e.key("tracestate")
		e.string(t.Tracestate)
	}
	e.buf = append(e.buf, '}')
}

func (e *taskEncoder) key(name string) {
	e.buf = append(e.buf, ',', '"')
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, '"', ':')
}

func (e *taskEncoder) int(n int) { e.buf = strconv.AppendInt(e.buf, int64(n), 10) }

// uuid appends id as uuid.UUID's MarshalText spells it (lower-case hex, 8-4-4-4-12),
// without its allocation.
func (e *taskEncoder) uuid(id uuid.UUID) {
	var s [38]byte
	s[0], s[9], s[14], s[19], s[24], s[37] = '"', '-', '-', '-', '-', '"'
	hex.Encode(s[1:9], id[0:4])
	hex.Encode(s[10:14], id[4:6])
	hex.Encode(s[15:19], id[6:8])
	hex.Encode(s[20:24], id[8:10])
	hex.Encode(s[25:37], id[10:16])
	e.buf = append(e.buf, s[:]...)
}

// time is time.Time's MarshalJSON: RFC 3339 with the nanoseconds it has. The answer's
// times are UTC (taskOut) and years 0-9999 (from the database), where MarshalJSON
// does not fail.
func (e *taskEncoder) time(t time.Time) {
	e.buf = append(e.buf, '"')
	e.buf = t.AppendFormat(e.buf, time.RFC3339Nano)
	e.buf = append(e.buf, '"')
}

func (e *taskEncoder) timePtr(t *time.Time) {
	if t == nil {
		e.buf = append(e.buf, "null"...)
		return
	}
	e.time(*t)
}

func (e *taskEncoder) stringPtr(s *string) {
	if s == nil {
		e.buf = append(e.buf, "null"...)
		return
	}
	e.string(*s)
}

func (e *taskEncoder) strings(ss []string) {
	e.buf = append(e.buf, '[')
	for i, s := range ss {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.string(s)
	}
	e.buf = append(e.buf, ']')
}

// string appends s quoted: as is when it is printable ASCII without a quote or a
// backslash (names, statuses, most keys), else by encoding/json itself.
func (e *taskEncoder) string(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			e.buf = appendJSONString(e.buf, s)
			return
		}
	}
	e.buf = append(e.buf, '"')
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, '"')
}

// raw is json.RawMessage's encoding: null when empty, else compacted (which is what
// encoding/json does with a Marshaler's output; a payload read from jsonb has spaces).
func (e *taskEncoder) raw(m json.RawMessage) {
	if len(m) == 0 {
		e.buf = append(e.buf, "null"...)
		return
	}
	e.compact.Reset()
	if err := json.Compact(&e.compact, m); err != nil {
		// Not JSON (never from the stores): encoding/json would fail the whole answer;
		// null keeps the answer valid.
		e.buf = append(e.buf, "null"...)
		return
	}
	e.buf = append(e.buf, e.compact.Bytes()...)
}

// appendJSONString appends s as encoding/json encodes a string without HTML escaping.
func appendJSONString(b []byte, s string) []byte {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(out.Bytes(), []byte("\n"))...)
}
