package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rotaqueue/rota/internal/runtime"
)

// Limits of the http kind.
const (
	maxRedirects    = 10
	maxRetryAfter   = time.Hour // a server's Retry-After is honoured up to this
	errorBodyLength = 512       // bytes of a failed response's body kept in the error
	statusLength    = 128       // bytes of a failed response's status line kept in the error
	drainLimit      = 64 << 10  // bytes read from a response so its connection can be reused
	userAgent       = "rota"
)

// ParseAllowHosts splits a ROTA_HTTP_ALLOW_HOSTS value: comma-separated entries,
// trimmed and lower-cased, empty entries dropped. "" gives nil (any host).
func ParseAllowHosts(s string) []string {
	var hosts []string
	for h := range strings.SplitSeq(s, ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

var errHostNotAllowed = errors.New("host not allowed")

// allowList decides which URLs the http kind may call.
type allowList []string

// check returns errHostNotAllowed (wrapped) unless u's host matches an entry.
func (a allowList) check(u *url.URL) error {
	if len(a) == 0 {
		return nil
	}
	host := strings.ToLower(u.Hostname())
	hostPort := strings.ToLower(u.Host)
	for _, e := range a {
		e = strings.ToLower(e)
		switch {
		case e == host, e == hostPort, e == "["+host+"]":
			return nil
		case strings.HasPrefix(e, "*.") && strings.HasSuffix(host, e[1:]):
			return nil
		}
	}
	return fmt.Errorf("%w: %q is not in ROTA_HTTP_ALLOW_HOSTS", errHostNotAllowed, u.Host)
}

// httpPayload is the http kind's payload.
type httpPayload struct {
	URL       string            `json:"url"`
	Method    string            `json:"method"`  // default GET, or POST when a body is given
	Headers   map[string]string `json:"headers"` // sent as given; Rota-* headers are set last
	Body      json.RawMessage   `json:"body"`    // a string is sent as is, other JSON as JSON
	TimeoutMS int64             `json:"timeout_ms"`
}

// httpHandler calls a URL: 2xx succeeds, 4xx other than 408 and 429 is permanent,
// anything else (5xx, 408, 429, a network error) is retried.
type httpHandler struct {
	client *http.Client
	allow  allowList
	// dialGuard, when set, vets every address the client connects to (refusePrivate
	// with ROTA_HTTP_DENY_PRIVATE; tests swap it).
	dialGuard func(netip.AddrPort) error
}

func newHTTPHandler(cfg Config) *httpHandler {
	h := &httpHandler{allow: allowList(cfg.AllowHosts)}
	// One client for every task, so connections are reused. Many tasks may call one host
	// at once: keep enough idle connections per host for a worker's whole concurrency.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = 1024
	transport.MaxIdleConnsPerHost = 256
	transport.IdleConnTimeout = 90 * time.Second
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if cfg.DenyPrivate {
		h.dialGuard = refusePrivate
		dialer.ControlContext = dialControl(func(ap netip.AddrPort) error { return h.dialGuard(ap) })
		// Through a proxy (HTTP_PROXY, HTTPS_PROXY) the address dialed would be the
		// proxy's, and the guard would vet nothing: connect directly.
		transport.Proxy = nil
	}
	transport.DialContext = dialer.DialContext
	h.client = &http.Client{Transport: transport, CheckRedirect: h.checkRedirect}
	return h
}

// checkRedirect vets every hop of a redirect chain: the allow-list, or it could be
// bypassed, and no payload header (credentials above all) to another origin.
func (h *httpHandler) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if err := h.allow.check(req.URL); err != nil {
		return err
	}
	if leftOrigin(req, via) {
		stripPayloadHeaders(req)
	}
	return nil
}

func (h *httpHandler) Work(ctx context.Context, job *runtime.Job) error {
	var p httpPayload
	if err := decode(job, &p); err != nil {
		return err
	}
	if p.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	req, err := h.newRequest(ctx, job, &p)
	if err != nil {
		return runtime.Permanent(fmt.Errorf("http: %w", err))
	}

	resp, err := h.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the whole URL, query and all
		}
		err = fmt.Errorf("http: %s %s: %w", req.Method, redact(req.URL), err)
		if errors.Is(err, errHostNotAllowed) || errors.Is(err, errDestinationRefused) {
			return runtime.Permanent(err) // a redirect or an address refused: it would be again
		}
		return err
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		return nil
	}
	snippet := readSnippet(resp.Body, errorBodyLength)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	err = fmt.Errorf("http: %s %s: %s", req.Method, redact(req.URL), cutUTF8(resp.Status, statusLength))
	if snippet != "" {
		err = fmt.Errorf("%w: %s", err, snippet)
	}
	switch code := resp.StatusCode; {
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), responseTime(resp.Header)); ok {
			return runtime.RetryAfter(d, err)
		}
		return err
	case code >= 400:
		return runtime.Permanent(err)
	default: // 1xx or 3xx that was not followed
		return err
	}
}

// newRequest validates the payload and builds the request.
func (h *httpHandler) newRequest(ctx context.Context, job *runtime.Job, p *httpPayload) (*http.Request, error) {
	if p.URL == "" {
		return nil, errors.New("payload needs a url")
	}
	u, err := url.Parse(p.URL)
	if err != nil {
		return nil, fmt.Errorf("invalid url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("url has no host")
	}
	if err := h.allow.check(u); err != nil {
		return nil, err
	}
	if p.TimeoutMS < 0 {
		return nil, fmt.Errorf("timeout_ms must not be negative, got %d", p.TimeoutMS)
	}

	var body []byte
	contentType := ""
	if raw := bytes.TrimSpace(p.Body); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		var s string
		if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
			body, contentType = []byte(s), "text/plain; charset=utf-8"
		} else {
			body, contentType = raw, "application/json"
		}
	}
	method := strings.ToUpper(p.Method)
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range p.Headers {
		if !validHeaderName(k) || !validHeaderValue(v) {
			return nil, fmt.Errorf("invalid header %q", k)
		}
		if strings.EqualFold(k, "Host") {
			// The allow-list vets the URL's host; the Host header picks the virtual host
			// behind that address, so it may not name another one.
			if len(h.allow) > 0 && !hostHeaderMatches(v, u) {
				return nil, fmt.Errorf("the Host header %q names another host than the url's (%q), which ROTA_HTTP_ALLOW_HOSTS forbids: put the host in the url", v, u.Host)
			}
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	req.Header.Set("Rota-Task-Id", job.Task.ID.String())
	req.Header.Set("Rota-Attempt", strconv.Itoa(job.Task.AttemptCount))
	return req, nil
}

// validHeaderName reports whether k is an RFC 9110 token, so a bad payload fails as
// such and is not retried as if the network had failed.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue rejects control characters other than tab (CR and LF above all).
func validHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// responseTime is the server's clock when it answered: its Date header, or this
// process's clock when it sent none. A Retry-After date is read against it, so that the
// delay is the server's own (DESIGN.md section 9: no decision rests on this worker's
// clock, which may be off).
func responseTime(h http.Header) time.Time {
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		return t
	}
	return time.Now()
}

// retryAfter parses a Retry-After header (seconds or an HTTP date, read against now),
// capped.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v = strings.TrimSpace(v); v == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(t.Sub(now), 0)
	} else {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// readSnippet reads up to n bytes of a failed response's body for its error message
// (last_error): trimmed, cut on a UTF-8 boundary, "…" when there was more.
func readSnippet(r io.Reader, n int) string {
	b, _ := io.ReadAll(io.LimitReader(r, int64(n)+1))
	s := string(b)
	more := len(s) > n
	s = strings.TrimSpace(cutUTF8(s, n))
	if more && s != "" {
		s += "…"
	}
	return s
}

// cutUTF8 returns at most the first n bytes of s, without splitting a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// redact drops the query and credentials from a URL shown in an error, since they may
// hold secrets and errors end up in last_error.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.Fragment = ""
	return c.String()
}
