package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// readBody returns r's body, at most limit bytes, after checking its media type.
// allowEmpty lets a route whose fields are all optional take no body at all (then no
// Content-Type is needed either); the caller decodes "{}" instead.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, allowEmpty bool) ([]byte, error) {
	if r.ContentLength == 0 && allowEmpty {
		return []byte("{}"), nil
	}
	if r.ContentLength != 0 {
		if err := checkContentType(r); err != nil {
			return nil, err
		}
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(limit)
		}
		// The server's ReadTimeout passed (a client sending too slowly), or the client went
		// away: either way its fault, not a 500 in the logs.
		var ne net.Error
		if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return nil, &apiError{http.StatusRequestTimeout, codeRequestTimeout, "the request body did not arrive in time"}
		}
		return nil, invalidRequest(fmt.Sprintf("could not read the request body: %v", err))
	}
	if len(body) == 0 {
		if allowEmpty {
			return []byte("{}"), nil
		}
		return nil, invalidJSON("the request body is empty; expected a JSON object")
	}
	return body, nil
}

func tooLarge(limit int64) *apiError {
	return &apiError{http.StatusRequestEntityTooLarge, codePayloadTooLarge,
		fmt.Sprintf("the request body is larger than %d bytes", limit)}
}

// checkContentType accepts application/json with any parameters (charset=utf-8).
func checkContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
			return nil
		}
	}
	return &apiError{http.StatusUnsupportedMediaType, codeUnsupportedMediaType,
		fmt.Sprintf("Content-Type must be application/json, got %q", ct)}
}

// decodeStrict decodes one JSON object from body into dst: unknown fields and anything
// after the object are rejected, so that a misspelt optional field or two concatenated
// requests fail loudly instead of being half understood.
// decodeJSON reads a request body of at most MaxBodyBytes and decodes it strictly into
// dst: the common case of a handler whose body is one small JSON object.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if err != nil {
		return err
	}
	return decodeStrict(body, dst)
}

func decodeStrict(body []byte, dst any) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return invalidJSON("the request body is empty; expected a JSON object")
	}
	if trimmed[0] != '{' {
		if !json.Valid(body) {
			return invalidJSON("the request body is not valid JSON")
		}
		return invalidJSON("the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalidJSON("unexpected data after the JSON object")
	}
	return nil
}

// decodeError classifies a json.Decoder error: malformed JSON is invalid_json, well-formed
// JSON that does not fit the request (a wrong type, an unknown field) is invalid_request.
func decodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return invalidJSON(fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error()))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalidJSON("the JSON object is truncated")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the request body"
		}
		return invalidRequest(fmt.Sprintf("%s must be %s, got JSON %s", field, jsonTypeName(typ.Type.Kind().String()), typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return invalidRequest(strings.TrimPrefix(err.Error(), "json: "))
	}
	return invalidRequest(strings.TrimPrefix(err.Error(), "json: "))
}

func jsonTypeName(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"):
		return "an integer"
	case strings.HasPrefix(goKind, "float"):
		return "a number"
	case goKind == "string":
		return "a string"
	case goKind == "bool":
		return "a boolean"
	case goKind == "slice", goKind == "array":
		return "an array"
	case goKind == "struct", goKind == "map":
		return "an object"
	}
	return "of another type"
}

// parseID parses a task id from the path. A malformed id names no task, so it is a 404
// like an unknown one (documented in openapi.json).
func parseID(r *http.Request) (uuid.UUID, error) {
	raw := r.PathValue("id")
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, notFound(fmt.Sprintf("no task with id %q: not a UUID", raw))
	}
	return id, nil
}

// parseLeaseToken checks the lease_token field of the worker protocol.
func parseLeaseToken(raw *string) (uuid.UUID, error) {
	if raw == nil || *raw == "" {
		return uuid.Nil, invalidRequest("lease_token is required")
	}
	token, err := uuid.Parse(*raw)
	if err != nil || token == uuid.Nil {
		return uuid.Nil, invalidRequest(fmt.Sprintf("lease_token %q is not a lease token (a UUID)", *raw))
	}
	return token, nil
}

// parseTime reads a time field of a request, in UTC. A time before store.EarliestTime
// is refused: it is most likely a zero value, which would read as "now" or "missing".
func parseTime(field, raw string) (time.Time, error) {
	at, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, invalidRequest(fmt.Sprintf("%s must be an RFC 3339 time such as 2030-01-02T15:04:05Z, got %q", field, raw))
	}
	if at.Before(store.EarliestTime) {
		return time.Time{}, invalidRequest(fmt.Sprintf("%s %q is before 1970-01-01T00:00:00Z; give a later time (a past one is due at once)", field, raw))
	}
	return at.UTC(), nil
}

// --- create -------------------------------------------------------------------------

// createTaskRequest is the body of POST /api/tasks and one entry of a batch. Pointers
// tell an absent field from a zero one: an explicit "max_attempts": 0 is an error, not a
// request for the default.
type createTaskRequest struct {
	Kind           string          `json:"kind"`
	Queue          string          `json:"queue"`
	Payload        json.RawMessage `json:"payload"`
	ScheduledFor   *string         `json:"scheduled_for"`
	DelaySeconds   *float64        `json:"delay_seconds"`
	MaxAttempts    *int            `json:"max_attempts"`
	Priority       int             `json:"priority"`
	IdempotencyKey string          `json:"idempotency_key"`
	TimeoutSeconds int             `json:"timeout_seconds"`
}

type createBatchRequest struct {
	Tasks []createTaskRequest `json:"tasks"`
}

// maxDelaySeconds keeps delay_seconds far from time.Duration's overflow; nobody
// schedules a task a century ahead by delay (scheduled_for can).
const maxDelaySeconds = 100 * 365 * 24 * 3600

// decodeCreateTask turns the body of POST /api/tasks into normalized CreateParams: what
// it accepts, the store accepts (FuzzCreateTask holds it to that). delay_seconds becomes
// CreateParams.Delay, which the store adds to the database's now(): the server's clock
// never decides when a task runs (DESIGN.md section 9).
func decodeCreateTask(body []byte) (store.CreateParams, error) {
	var req createTaskRequest
	if err := decodeStrict(body, &req); err != nil {
		return store.CreateParams{}, err
	}
	return req.params()
}

// decodeCreateBatch is decodeCreateTask for POST /api/tasks/batch; an error names the
// entry at fault.
func decodeCreateBatch(body []byte) ([]store.CreateParams, error) {
	var req createBatchRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	switch {
	case len(req.Tasks) == 0:
		return nil, invalidRequest("tasks must hold at least one task")
	case len(req.Tasks) > maxBatchTasks:
		// docs/api.md counts the task count among a batch's size limits: 413, like bytes.
		return nil, &apiError{http.StatusRequestEntityTooLarge, codePayloadTooLarge,
			fmt.Sprintf("tasks holds %d tasks, more than the %d allowed in one batch", len(req.Tasks), maxBatchTasks)}
	}
	params := make([]store.CreateParams, len(req.Tasks))
	for i, t := range req.Tasks {
		p, err := t.params()
		if err != nil {
			return nil, prefixError(fmt.Sprintf("tasks[%d]: ", i), err)
		}
		params[i] = p
	}
	return params, nil
}

// params checks the fields that belong to the HTTP shape (delay_seconds, scheduled_for,
// an explicit max_attempts, what PostgreSQL cannot store) and then every store rule
// (Normalize), so that a bad entry fails before anything reaches the store.
func (req *createTaskRequest) params() (store.CreateParams, error) {
	p := store.CreateParams{
		Queue:          req.Queue,
		Kind:           req.Kind,
		Priority:       req.Priority,
		IdempotencyKey: req.IdempotencyKey,
		TimeoutSeconds: req.TimeoutSeconds,
	}
	if req.MaxAttempts != nil {
		if *req.MaxAttempts < 1 || *req.MaxAttempts > store.MaxMaxAttempts {
			return p, invalidRequest(fmt.Sprintf("max_attempts must be between 1 and %d, got %d", store.MaxMaxAttempts, *req.MaxAttempts))
		}
		p.MaxAttempts = *req.MaxAttempts
	}
	switch {
	case req.ScheduledFor != nil && req.DelaySeconds != nil:
		return p, invalidRequest("set scheduled_for or delay_seconds, not both")
	case req.ScheduledFor != nil:
		at, err := parseTime("scheduled_for", *req.ScheduledFor)
		if err != nil {
			return p, err
		}
		p.ScheduledFor = at
	case req.DelaySeconds != nil:
		d := *req.DelaySeconds
		if d < 0 || d > maxDelaySeconds || math.IsNaN(d) {
			return p, invalidRequest(fmt.Sprintf("delay_seconds must be between 0 and %d, got %v", maxDelaySeconds, d))
		}
		p.Delay = time.Duration(d * float64(time.Second))
	}
	if strings.ContainsRune(req.IdempotencyKey, 0) {
		return p, invalidRequest("idempotency_key must not contain NUL characters")
	}
	if len(req.Payload) > 0 && !bytes.Equal(req.Payload, []byte("null")) {
		var buf bytes.Buffer
		// Compact so that the size limit counts the data, not the client's indentation.
		if err := json.Compact(&buf, req.Payload); err != nil {
			return p, invalidJSON("payload is not valid JSON")
		}
		if buf.Len() > store.MaxPayloadBytes {
			return p, &apiError{http.StatusRequestEntityTooLarge, codePayloadTooLarge,
				fmt.Sprintf("payload is %d bytes, more than the %d allowed", buf.Len(), store.MaxPayloadBytes)}
		}
		if err := store.CheckStorableJSON(buf.Bytes()); err != nil {
			return p, invalidRequest("payload " + err.Error())
		}
		p.Payload = buf.Bytes()
	}
	if err := p.Normalize(); err != nil {
		return p, err
	}
	return p, nil
}

// --- worker protocol ----------------------------------------------------------------

type claimRequest struct {
	WorkerID     *string  `json:"worker_id"`
	Limit        *int     `json:"limit"`
	LeaseSeconds *int     `json:"lease_seconds"`
	WaitSeconds  *float64 `json:"wait_seconds"`
}

type heartbeatRequest struct {
	LeaseToken   *string `json:"lease_token"`
	LeaseSeconds *int    `json:"lease_seconds"`
}

type completeRequest struct {
	LeaseToken *string `json:"lease_token"`
	// Output is the task's result, any JSON (null or absent: none), at most
	// store.MaxOutputBytes once compacted.
	Output json.RawMessage `json:"output"`
}

type failRequest struct {
	LeaseToken        *string  `json:"lease_token"`
	Error             *string  `json:"error"`
	Retryable         *bool    `json:"retryable"`
	RetryAfterSeconds *float64 `json:"retry_after_seconds"`
}

// maxWorkerIDLength bounds worker_id; it is stored on every task and attempt.
const maxWorkerIDLength = 256

func checkWorkerID(raw *string) (string, error) {
	switch {
	case raw == nil || *raw == "":
		return "", invalidRequest("worker_id is required")
	case len(*raw) > maxWorkerIDLength:
		return "", invalidRequest(fmt.Sprintf("worker_id is longer than %d bytes", maxWorkerIDLength))
	case strings.ContainsRune(*raw, 0):
		return "", invalidRequest("worker_id must not contain NUL characters")
	}
	return *raw, nil
}

func leaseSeconds(raw *int) (time.Duration, error) {
	if raw == nil {
		return defaultLeaseSeconds * time.Second, nil
	}
	if *raw < 1 || *raw > maxLeaseSeconds {
		return 0, invalidRequest(fmt.Sprintf("lease_seconds must be between 1 and %d, got %d", maxLeaseSeconds, *raw))
	}
	return time.Duration(*raw) * time.Second, nil
}

// cleanErrorMessage makes a worker's error text storable: PostgreSQL text cannot hold
// NUL, and cutting at the store's byte limit could split a UTF-8 sequence, so the text
// is truncated here, on a rune boundary, to what store.TruncateError keeps unchanged.
// A failure report is never rejected for its message: losing it would cost an attempt.
func cleanErrorMessage(s string) string {
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= store.MaxErrorMessageLength {
		return s
	}
	const suffix = "…(truncated)"
	cut := store.MaxErrorMessageLength - len(suffix)
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
