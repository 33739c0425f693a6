// Package apiclient is a small typed client for Rota's HTTP API (docs/api.md).
//
// Every method takes a context; API errors come back as *Error with the status and the
// server's error code (answers that are not the API's, such as an HTML page, wrap
// ErrNotAPI), and a server that cannot be reached gives an error naming its URL.
// The client keeps no state but its configuration and is safe for concurrent use.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/rotaqueue/rota/internal/validate"
)

// Client talks to one Rota server.
type Client struct {
	baseURL  string
	token    string
	tokenErr error // a token no Authorization header can carry: every call fails with it
	hc       *http.Client
}

// New returns a client for the server at baseURL (e.g. "http://127.0.0.1:8080"; a path
// prefix is kept, a trailing slash dropped). A non-empty token is sent as
// "Authorization: Bearer <token>", without surrounding whitespace (a secret file's
// newline); a token with whitespace or control characters inside makes every call fail
// with an error that says so. A nil httpClient means http.DefaultClient; set its Timeout
// to bound each call.
func New(baseURL, token string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	token, err := validate.Token(token)
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), token: token, tokenErr: err, hc: httpClient}
}

// BaseURL is the server address the client was made with (without a trailing slash).
func (c *Client) BaseURL() string { return c.baseURL }

// Error is an error answer of the API: {"error": {"code", "message"}} with its HTTP status.
type Error struct {
	Status  int    // HTTP status, e.g. 404
	Code    string // the API's snake_case code, e.g. "not_found"
	Message string

	notAPI bool // the body was not the API's error shape
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Unwrap lets errors.Is find ErrNotAPI in an answer that was not the API's error shape.
func (e *Error) Unwrap() error {
	if e.notAPI {
		return ErrNotAPI
	}
	return nil
}

// ErrNotAPI is in the chain of errors for answers that did not come from the Rota API:
// an HTML page or other body where the API's JSON was due, as another server, a proxy
// or the dashboard (a base URL with a wrong path) answers.
var ErrNotAPI = errors.New("not an answer of the Rota API")

// IsNotFound reports whether err is an API error with status 404.
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsUnauthorized reports whether err is an API error with status 401.
func IsUnauthorized(err error) bool { return hasStatus(err, http.StatusUnauthorized) }

func hasStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// CreateTask creates one task. created is false when the idempotency key named an
// existing task, which is returned instead (HTTP 200 rather than 201).
func (c *Client) CreateTask(ctx context.Context, req CreateTask) (task *Task, created bool, err error) {
	var t Task
	status, err := c.do(ctx, http.MethodPost, "/api/tasks", nil, req, &t)
	if err != nil {
		return nil, false, err
	}
	return &t, status == http.StatusCreated, nil
}

// CreateTasks creates up to 1,000 tasks, all or nothing, returned in request order.
func (c *Client) CreateTasks(ctx context.Context, reqs []CreateTask) ([]Task, error) {
	if reqs == nil {
		reqs = []CreateTask{}
	}
	var out struct {
		Tasks []Task `json:"tasks"`
	}
	if _, err := c.do(ctx, http.MethodPost, "/api/tasks/batch", nil, map[string]any{"tasks": reqs}, &out); err != nil {
		return nil, err
	}
	return out.Tasks, nil
}

// GetTask returns one task.
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	var t Task
	if _, err := c.do(ctx, http.MethodGet, "/api/tasks/"+pathID(id), nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListTasks returns one page of tasks, newest first.
func (c *Client) ListTasks(ctx context.Context, p ListTasksParams) (*TaskPage, error) {
	q := url.Values{}
	if len(p.Statuses) > 0 {
		q.Set("status", strings.Join(p.Statuses, ","))
	}
	setNonEmpty(q, "queue", p.Queue)
	setNonEmpty(q, "kind", p.Kind)
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	setNonEmpty(q, "cursor", p.Cursor)
	var page TaskPage
	if _, err := c.do(ctx, http.MethodGet, "/api/tasks", q, nil, &page); err != nil {
		return nil, err
	}
	if page.Tasks == nil {
		page.Tasks = []Task{}
	}
	return &page, nil
}

// ListAttempts returns a task's attempt history, oldest first.
func (c *Client) ListAttempts(ctx context.Context, id string) ([]Attempt, error) {
	var out struct {
		Attempts []Attempt `json:"attempts"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/api/tasks/"+pathID(id)+"/attempts", nil, nil, &out); err != nil {
		return nil, err
	}
	if out.Attempts == nil {
		out.Attempts = []Attempt{}
	}
	return out.Attempts, nil
}

// CancelTask cancels a task: at once when it is waiting; a PROCESSING task comes back
// with CancelRequestedAt set and its worker finishes the cancel.
func (c *Client) CancelTask(ctx context.Context, id string) (*Task, error) {
	var t Task
	if _, err := c.do(ctx, http.MethodPost, "/api/tasks/"+pathID(id)+"/cancel", nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ReplayTask moves a DEAD, FAILED or CANCELED task back to PENDING.
func (c *Client) ReplayTask(ctx context.Context, id string) (*Task, error) {
	var t Task
	if _, err := c.do(ctx, http.MethodPost, "/api/tasks/"+pathID(id)+"/replay", nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Stats returns task counts by queue and status.
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	var s Stats
	if _, err := c.do(ctx, http.MethodGet, "/api/stats", nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListWorkers returns the live workers, of queue when it is not empty, ordered by id.
func (c *Client) ListWorkers(ctx context.Context, queue string) ([]Worker, error) {
	q := url.Values{}
	setNonEmpty(q, "queue", queue)
	var out struct {
		Workers []Worker `json:"workers"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/api/workers", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Workers, nil
}

// ListDeadLetters returns one page of dead-letter events, newest first.
func (c *Client) ListDeadLetters(ctx context.Context, p ListDeadLettersParams) (*DeadLetterPage, error) {
	q := url.Values{}
	setNonEmpty(q, "queue", p.Queue)
	setNonEmpty(q, "kind", p.Kind)
	setNonEmpty(q, "reason", p.Reason)
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	setNonEmpty(q, "cursor", p.Cursor)
	var page DeadLetterPage
	if _, err := c.do(ctx, http.MethodGet, "/api/dead-letters", q, nil, &page); err != nil {
		return nil, err
	}
	if page.DeadLetters == nil {
		page.DeadLetters = []DeadLetter{}
	}
	return &page, nil
}

// ReplayDeadLetters replays up to req.Limit DEAD/FAILED tasks (oldest first) in one call.
// To replay everything that matches, call again until Replayed < the limit used.
func (c *Client) ReplayDeadLetters(ctx context.Context, req ReplayDeadLetters) (*ReplayResult, error) {
	var out ReplayResult
	if _, err := c.do(ctx, http.MethodPost, "/api/dead-letters/replay", nil, req, &out); err != nil {
		return nil, err
	}
	if out.Tasks == nil {
		out.Tasks = []Task{}
	}
	return &out, nil
}

func setNonEmpty(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}

// pathID escapes an id for use as one path segment, so a malformed id cannot change the
// route it is sent to.
func pathID(id string) string { return url.PathEscape(id) }

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// do sends one request with an optional JSON body and decodes a 2xx JSON answer into out.
// It returns the HTTP status.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) (int, error) {
	if c.tokenErr != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, c.tokenErr)
	}
	target := c.baseURL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, fmt.Errorf("bad server URL %q: %w", c.baseURL, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, c.transportError(ctx, method, path, err)
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, c.errorFromResponse(method, path, resp)
	}
	if out == nil {
		return resp.StatusCode, nil
	}
	if !isJSON(resp) {
		return resp.StatusCode, fmt.Errorf("%s %s: the server at %s answered HTTP %d with %s: %w",
			method, path, c.baseURL, resp.StatusCode, contentType(resp), ErrNotAPI)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		return resp.StatusCode, fmt.Errorf("%s %s: the server at %s did not answer with the expected JSON (HTTP %d, %s): %v",
			method, path, c.baseURL, resp.StatusCode, contentType(resp), err)
	}
	return resp.StatusCode, nil
}

// transportError turns a failed round trip into one line that names the server.
func (c *Client) transportError(ctx context.Context, method, path string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s %s: %w", method, path, ctxErr)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		if uerr.Timeout() {
			return fmt.Errorf("no answer from the Rota server at %s within the timeout (%s %s): %w", c.baseURL, method, path, uerr.Err)
		}
		err = uerr.Err
	}
	return fmt.Errorf("cannot reach the Rota server at %s (%s %s): %w", c.baseURL, method, path, err)
}

// errorFromResponse reads an error answer. A body that is not the API's error shape (a
// proxy's HTML page, say) still gives an *Error, with a code made from the status and a
// one-line message without the page (only a plain-text body is quoted, shortened); it
// wraps ErrNotAPI.
func (c *Client) errorFromResponse(method, path string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && env.Error != nil && env.Error.Code != "" {
		return &Error{Status: resp.StatusCode, Code: env.Error.Code, Message: env.Error.Message}
	}
	code := strings.ToLower(strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "_"))
	if code == "" {
		code = "http_" + strconv.Itoa(resp.StatusCode)
	}
	status := strings.TrimSpace(strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode))
	msg := fmt.Sprintf("HTTP %s from %s for %s %s: %s (%s)", status, c.baseURL, method, path, ErrNotAPI, contentType(resp))
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/plain" {
		if snippet := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " "); snippet != "" {
			if len(snippet) > 200 {
				snippet = strings.ToValidUTF8(snippet[:200], "") + "..."
			}
			msg += ": " + snippet
		}
	}
	return &Error{Status: resp.StatusCode, Code: code, Message: msg, notAPI: true}
}

// isJSON reports whether resp says its body is JSON (application/json, any parameters).
func isJSON(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "application/json"
}

func contentType(resp *http.Response) string {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		return ct
	}
	return "no content type"
}
