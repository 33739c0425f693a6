package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Limits on what a task may carry. They keep one bad producer from filling the database.
const (
	MaxNameLength         = 128
	MaxPayloadBytes       = 1 << 20 // 1 MiB
	MaxOutputBytes        = 1 << 20 // 1 MiB of JSON text: a task's output (Outcome.Output)
	MaxIdempotencyKeyLen  = 512
	MaxMaxAttempts        = 1000
	MaxPriority           = 1000
	MaxTimeoutSeconds     = 7 * 24 * 3600
	MaxErrorMessageLength = 8 << 10 // longer errors (stacks) are truncated, not rejected
)

// EarliestTime is the earliest scheduled_for or next_run_at the API and the dashboard
// take. An earlier one is almost always a client's zero value (0001-01-01T00:00:00Z),
// which Go reads as "not set": now for a task, missing for a reschedule.
var EarliestTime = time.Unix(0, 0).UTC()

// isPlainName is what kind and queue names look like: they appear in URLs, metrics labels
// and SQS queue names, so they stay plain: ^[A-Za-z][A-Za-z0-9_.:-]*$. Checked without
// the regexp engine: every task of a batch insert checks its queue and kind, and the
// regexp was a twentieth of the client's CPU in a batch of 1,000
// (TestIsPlainNameMatchesPattern keeps the two equal).
func isPlainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if i == 0 && !letter {
			return false
		}
		if !letter && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != ':' && c != '-' {
			return false
		}
	}
	return name != ""
}

// ValidateName checks a kind or queue name; field names the field in the error.
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s is required", ErrInvalid, field)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: %s is longer than %d characters", ErrInvalid, field, MaxNameLength)
	case !isPlainName(name):
		return fmt.Errorf("%w: %s %q must start with a letter and contain only letters, digits, '_', '.', ':' or '-'", ErrInvalid, field, name)
	}
	return nil
}

// ValidateFilter checks a queue or kind filter: "" matches everything, anything else must
// be a valid name. Names are checked on create, so another value could match nothing,
// and PostgreSQL refuses some outright (NUL, invalid UTF-8): both adapters say ErrInvalid.
func ValidateFilter(field, value string) error {
	if value == "" {
		return nil
	}
	return ValidateName(field, value)
}

func validFilters(queue, kind string) error {
	if err := ValidateFilter("queue", queue); err != nil {
		return err
	}
	return ValidateFilter("kind", kind)
}

func validReason(reason Status) error {
	switch reason {
	case "", StatusDead, StatusFailed:
		return nil
	}
	return fmt.Errorf("%w: reason must be DEAD or FAILED, got %q", ErrInvalid, reason)
}

// Check checks the filters and returns the page's limit and byte budget with their
// defaults applied (the adapters call it; they decode the cursor).
func (p ListParams) Check() (limit, maxBytes int, err error) {
	for _, st := range p.Statuses {
		if !st.Valid() {
			return 0, 0, fmt.Errorf("%w: unknown status %q", ErrInvalid, st)
		}
	}
	if err := validFilters(p.Queue, p.Kind); err != nil {
		return 0, 0, err
	}
	if limit, err = NormalizeLimit(p.Limit); err != nil {
		return 0, 0, err
	}
	switch {
	case p.MaxBytes == 0:
		maxBytes = DefaultListBytes
	case p.MaxBytes < 0:
		return 0, 0, fmt.Errorf("%w: max bytes must be positive, got %d", ErrInvalid, p.MaxBytes)
	default:
		maxBytes = p.MaxBytes
	}
	return limit, maxBytes, nil
}

// Validate checks the filters (the adapters call it; they decode limit and cursor).
func (p DeadLetterParams) Validate() error {
	if err := validReason(p.Reason); err != nil {
		return err
	}
	return validFilters(p.Queue, p.Kind)
}

// Validate checks the limit and the filters; the adapters call it.
func (p ReplayParams) Validate() error {
	if p.Limit < 1 || p.Limit > MaxListLimit {
		return fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrInvalid, MaxListLimit, p.Limit)
	}
	if err := validReason(p.Reason); err != nil {
		return err
	}
	return validFilters(p.Queue, p.Kind)
}

// ValidateCount checks the arguments of Store.CountReplayable: the filters of p (its
// Limit aside) and atMost >= 1.
func (p ReplayParams) ValidateCount(atMost int) error {
	if atMost < 1 {
		return fmt.Errorf("%w: atMost must be at least 1, got %d", ErrInvalid, atMost)
	}
	if err := validReason(p.Reason); err != nil {
		return err
	}
	return validFilters(p.Queue, p.Kind)
}

// Normalize fills defaults (queue, payload, max attempts) and validates the params. It is
// what the adapters call before writing; callers may call it to fail early.
func (p *CreateParams) Normalize() error {
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if err := ValidateName("kind", p.Kind); err != nil {
		return err
	}
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	if len(p.Payload) == 0 {
		p.Payload = json.RawMessage(`{}`)
	}
	if len(p.Payload) > MaxPayloadBytes {
		return fmt.Errorf("%w: payload is %d bytes, more than the %d allowed", ErrInvalid, len(p.Payload), MaxPayloadBytes)
	}
	if !json.Valid(p.Payload) {
		return fmt.Errorf("%w: payload is not valid JSON", ErrInvalid)
	}
	if err := CheckStorableJSON(p.Payload); err != nil {
		return fmt.Errorf("%w: payload %v", ErrInvalid, err)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.MaxAttempts < 1 || p.MaxAttempts > MaxMaxAttempts {
		return fmt.Errorf("%w: max_attempts must be between 1 and %d, got %d", ErrInvalid, MaxMaxAttempts, p.MaxAttempts)
	}
	if p.Priority < -MaxPriority || p.Priority > MaxPriority {
		return fmt.Errorf("%w: priority must be between %d and %d, got %d", ErrInvalid, -MaxPriority, MaxPriority, p.Priority)
	}
	if len(p.IdempotencyKey) > MaxIdempotencyKeyLen {
		return fmt.Errorf("%w: idempotency_key is longer than %d characters", ErrInvalid, MaxIdempotencyKeyLen)
	}
	if p.Delay < 0 {
		return fmt.Errorf("%w: delay must not be negative, got %s", ErrInvalid, p.Delay)
	}
	if p.Delay > 0 && !p.ScheduledFor.IsZero() {
		return fmt.Errorf("%w: set delay or scheduled_for, not both", ErrInvalid)
	}
	if p.TimeoutSeconds < 0 || p.TimeoutSeconds > MaxTimeoutSeconds {
		return fmt.Errorf("%w: timeout_seconds must be between 0 and %d, got %d", ErrInvalid, MaxTimeoutSeconds, p.TimeoutSeconds)
	}
	if err := checkTraceContext(p.TraceContext); err != nil {
		return err
	}
	if err := ValidateGroupKey(p.GroupKey); err != nil {
		return err
	}
	if p.ID == uuid.Nil {
		p.ID = NewID()
	}
	return nil
}

// MaxTraceContextBytes bounds a task's stored trace context (W3C allows a 55-byte
// traceparent and a tracestate of 32 entries; 1 KiB holds them with room to spare).
const MaxTraceContextBytes = 1024

// checkTraceContext refuses a trace context that is too large to store with a task.
func checkTraceContext(c map[string]string) error {
	n := 0
	for k, v := range c {
		n += len(k) + len(v)
	}
	if n > MaxTraceContextBytes {
		return fmt.Errorf("%w: trace context is %d bytes, more than the %d allowed", ErrInvalid, n, MaxTraceContextBytes)
	}
	return nil
}

// NewID returns a time-ordered (v7) task id.
func NewID() uuid.UUID {
	return uuid.Must(uuid.NewV7())
}

// TruncateError makes an error message storable in last_error and attempt rows: valid
// UTF-8 without NUL bytes (PostgreSQL text rejects both, which would fail the whole
// outcome batch), at most MaxErrorMessageLength bytes, cut on a character boundary.
func TruncateError(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= MaxErrorMessageLength {
		return s
	}
	cut := MaxErrorMessageLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(truncated)"
}

// NormalizeLimit applies the list default and ceiling.
func NormalizeLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultListLimit, nil
	case limit < 0 || limit > MaxListLimit:
		return 0, fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrInvalid, MaxListLimit, limit)
	}
	return limit, nil
}

// CheckOutput validates a task's output (Outcome.Output) and returns it as the adapters
// store it: nil for none (empty or JSON null), else the JSON text unchanged. ErrInvalid
// when it is larger than MaxOutputBytes, not valid JSON, or JSON that PostgreSQL's
// jsonb cannot hold (CheckStorableJSON); both adapters call it before writing anything,
// so they accept exactly the same outputs.
func CheckOutput(output json.RawMessage) (json.RawMessage, error) {
	switch {
	case len(output) == 0:
		return nil, nil
	case len(output) > MaxOutputBytes:
		return nil, fmt.Errorf("%w: output is %d bytes, more than the %d allowed", ErrInvalid, len(output), MaxOutputBytes)
	case !json.Valid(output):
		return nil, fmt.Errorf("%w: output is not valid JSON", ErrInvalid)
	}
	if err := CheckStorableJSON(output); err != nil {
		return nil, fmt.Errorf("%w: output %v", ErrInvalid, err)
	}
	if string(bytes.TrimSpace(output)) == "null" {
		return nil, nil
	}
	return output, nil
}

// ListPage cuts the tasks an adapter fetched for a list page (newest first: up to
// limit+1, and at most one past the byte budget) to the page: at most limit tasks, none
// after the payloads reached maxBytes (see ListParams.MaxBytes). next is the cursor of
// the page's last task when a fetched task was left out, i.e. more follow.
func ListPage(fetched []*Task, limit, maxBytes int) (page []*Task, next string) {
	bytes := 0
	for i, t := range fetched {
		if PageFull(i, bytes, limit, maxBytes) {
			return fetched[:i], EncodeTaskCursor(fetched[i-1].ID)
		}
		bytes += len(t.Payload) + len(t.Output)
	}
	return fetched, ""
}

// PageFull reports whether a list page of n tasks whose payloads and outputs take bytes
// is complete: limit tasks, or at least one task and maxBytes of them.
func PageFull(n, bytes, limit, maxBytes int) bool {
	return n == limit || (n > 0 && bytes >= maxBytes)
}

// Task list cursors are opaque to callers: the id of the last task of the page.

func EncodeTaskCursor(id uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

func DecodeTaskCursor(s string) (uuid.UUID, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return uuid.Nil, fmt.Errorf("%w: malformed cursor", ErrInvalid)
	}
	return uuid.UUID(b), nil
}

// Dead-letter cursors: the id of the last event of the page.

func EncodeDeadLetterCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

func DecodeDeadLetterCursor(s string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		if id, perr := strconv.ParseInt(string(b), 10, 64); perr == nil && id > 0 {
			return id, nil
		}
	}
	return 0, fmt.Errorf("%w: malformed cursor", ErrInvalid)
}

// Backoff returns the full-jitter exponential delay before retry number attempt (1 =
// the first retry): a uniform random duration in [0, min(max, base * 2^(attempt-1))].
// rnd returns a float in [0, 1).
func Backoff(attempt int, base, max time.Duration, rnd func() float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	ceiling := max
	if attempt-1 < 62 {
		if d := base << (attempt - 1); d > 0 && d < max {
			ceiling = d
		}
	}
	return time.Duration(rnd() * float64(ceiling))
}
