// Package api serves Rota's HTTP JSON API (docs/api.md; the machine-readable contract is
// openapi.json, served at GET /api/openapi.json): task creation and inspection, dead
// letters, schedules, the worker protocol for workers written in any language, health
// checks and Prometheus metrics.
//
// The handler is a thin translation layer: every rule about tasks lives in the store
// (store.CreateParams.Normalize, the state machine, lease fencing), and this package only
// decodes requests strictly, maps store errors to HTTP statuses and encodes the answers.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/authlimit"
	"github.com/rotaqueue/rota/internal/browserguard"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/statscache"
	"github.com/rotaqueue/rota/internal/tracing"
	"github.com/rotaqueue/rota/internal/validate"
	"github.com/rotaqueue/rota/internal/workers"
)

// Config configures a Server. Every zero field but Store means its default; New fills the
// defaults (in withDefaults, the one place they live) and validates the result.
type Config struct {
	// Store holds the tasks. Required. The Server never closes it.
	Store store.Store

	// Token, when non-empty, is the bearer token every request needs
	// (Authorization: Bearer <token>), except /healthz, /readyz and, unless MetricsAuth,
	// /metrics. Empty means no authentication (bind to loopback then); requests whose
	// Host is a DNS name other than localhost are then refused (browserguard). Surrounding
	// whitespace is dropped (a secret file's newline); whitespace or control characters
	// inside are refused (validate.Token).
	Token string
	// MetricsAuth makes /metrics require Token too. It needs a Token.
	MetricsAuth bool
	// AuthLimiter refuses, with 429, a client address that keeps presenting wrong
	// tokens. Share one with the dashboard's login. Default: authlimit.New's defaults.
	AuthLimiter *authlimit.Limiter
	// MetricsHandler serves GET /metrics. Default: promhttp.Handler() (the default
	// Prometheus registry).
	MetricsHandler http.Handler
	// ClaimHeldBack, when set, is told of every HTTP-protocol claim that a queue setting
	// held back (rota_claims_held_back_total, as for Go workers' claims).
	ClaimHeldBack func(queue string, limit store.HoldBack)
	// Dashboard, when set, serves every path outside /api, /healthz, /readyz and
	// /metrics (the web UI, with its own login). Default: none (those paths get 404).
	Dashboard http.Handler

	// Stats answers GET /api/stats and the counts of the queue routes: one shared,
	// single-flight Stats query (statscache), which the dashboard and the queue gauges of
	// the same process may share. Stats is linear in the table; many clients polling it
	// run one query at a time. Default: a cache of its own on Store (set by New when
	// Store is set).
	Stats *statscache.Cache

	// Workers answers the create warnings (DESIGN.md section 12) and the queue routes'
	// workers from a short-lived cache of the live workers, which the dashboard and the
	// rota_workers gauges of the same process may share. Default: a cache of its own on
	// Store.
	Workers *workers.Cache

	// Logger receives the details of internal errors (which clients only see as
	// "internal") and of wake-up subscription failures. Default: slog.Default().
	Logger *slog.Logger

	// TracerProvider makes a server span per API request (otelhttp), the child of the
	// request's traceparent header; the tasks a request creates store that span's
	// context (or, with a no-op provider, the header's). Default: otel.GetTracerProvider().
	TracerProvider trace.TracerProvider

	// BackoffBase and BackoffMax shape the full-jitter exponential backoff the server
	// applies when a worker reports a retryable failure without retry_after_seconds.
	// Defaults: runtime.DefaultBackoffBase and runtime.DefaultBackoffMax (1s and 1h),
	// the same as Go workers, so a task backs off alike whoever runs it.
	BackoffBase time.Duration
	BackoffMax  time.Duration

	// MaxBodyBytes limits the body of every request but a batch create. Default:
	// DefaultMaxBodyBytes (a 1 MiB payload plus room for the other fields). A complete
	// takes at least completeBodyBytes, whatever it is set to: a task's output of up to
	// 1 MiB must fit.
	MaxBodyBytes int64
	// MaxBatchBodyBytes limits the body of POST /api/tasks/batch. Default:
	// DefaultMaxBatchBodyBytes (16 MiB).
	MaxBatchBodyBytes int64

	// LongPollInterval is how often a waiting claim (wait_seconds > 0) polls the store
	// when no wake-up arrives: Store.WaitForTasks only reports newly inserted due tasks,
	// so delayed and retried tasks that become due are found by this poll. Default: 1s.
	LongPollInterval time.Duration
	// MaxLongPolls bounds the claims waiting at once; each holds a connection and polls
	// the store. A claim that would wait beyond the bound gets 503 unavailable with
	// Retry-After (after one claim attempt, so due tasks are never held back).
	// Default: DefaultMaxLongPolls.
	MaxLongPolls int

	// Now is the server's clock, for its own timers (a long poll's deadline). It never
	// decides when a task runs: delay_seconds and retry_after_seconds go to the store as
	// durations, added to the database's now() (DESIGN.md section 9); tests skew it to
	// hold the API to that. Default: time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultMaxBodyBytes      = store.MaxPayloadBytes + 64<<10
	DefaultMaxBatchBodyBytes = 16 << 20
	DefaultLongPollInterval  = time.Second
	DefaultMaxLongPolls      = 256
)

// completeBodyBytes is the least body limit of a complete: an output of
// store.MaxOutputBytes plus the lease token and room for the JSON around them.
const completeBodyBytes = store.MaxOutputBytes + 64<<10

// Limits of the protocol (docs/api.md).
const (
	maxBatchTasks       = 1000
	maxClaimLimit       = 100
	defaultLeaseSeconds = 30
	maxLeaseSeconds     = 3600
	maxWaitSeconds      = 20
	defaultReplayLimit  = 100
	maxReplayLimit      = 1000
	// readyTimeout bounds the store ping of /readyz: a probe must answer quickly.
	readyTimeout = 2 * time.Second
)

func (cfg Config) withDefaults() Config {
	if cfg.Stats == nil && cfg.Store != nil {
		cfg.Stats = statscache.New(cfg.Store, nil)
	}
	if cfg.Workers == nil && cfg.Store != nil {
		cfg.Workers = workers.NewCache(cfg.Store, workers.CacheConfig{})
	}
	if cfg.MetricsHandler == nil {
		cfg.MetricsHandler = promhttp.Handler()
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AuthLimiter == nil {
		cfg.AuthLimiter = authlimit.New(authlimit.Config{})
	}
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = runtime.DefaultBackoffBase
	}
	if cfg.BackoffMax == 0 {
		cfg.BackoffMax = max(runtime.DefaultBackoffMax, cfg.BackoffBase)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxBatchBodyBytes == 0 {
		cfg.MaxBatchBodyBytes = DefaultMaxBatchBodyBytes
	}
	if cfg.LongPollInterval == 0 {
		cfg.LongPollInterval = DefaultLongPollInterval
	}
	if cfg.MaxLongPolls == 0 {
		cfg.MaxLongPolls = DefaultMaxLongPolls
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

func (cfg *Config) validate() error {
	// Every problem at once, not one per attempt.
	var problems validate.Problems
	check := problems.Check
	check(cfg.Store != nil, "Store is required")
	// Requests are compared trimmed, so the token they are compared with is trimmed too.
	token, err := validate.Token(cfg.Token)
	problems.Add(err)
	cfg.Token = token
	check(!cfg.MetricsAuth || cfg.Token != "", "MetricsAuth needs a Token")
	check(cfg.BackoffBase > 0, "BackoffBase must be positive, got %s", cfg.BackoffBase)
	check(cfg.BackoffMax >= cfg.BackoffBase, "BackoffMax (%s) must not be less than BackoffBase (%s)", cfg.BackoffMax, cfg.BackoffBase)
	check(cfg.MaxBodyBytes > 0, "MaxBodyBytes must be positive, got %d", cfg.MaxBodyBytes)
	check(cfg.MaxBatchBodyBytes > 0, "MaxBatchBodyBytes must be positive, got %d", cfg.MaxBatchBodyBytes)
	check(cfg.LongPollInterval > 0, "LongPollInterval must be positive, got %s", cfg.LongPollInterval)
	check(cfg.MaxLongPolls > 0, "MaxLongPolls must be positive, got %d", cfg.MaxLongPolls)
	return problems.Err()
}

// Route is one registered (method, path pattern) pair, in net/http.ServeMux syntax
// without the method: "/api/tasks/{id}".
type Route struct {
	Method  string
	Pattern string
}

// Server is the HTTP API. It implements http.Handler; create it with New and stop it
// with Close.
type Server struct {
	cfg       Config
	mux       *http.ServeMux
	routes    []Route
	methods   []string // every method some route uses, for 405 answers
	tokenHash [sha256.Size]byte
	waker     *waker
	longPolls chan struct{} // a semaphore of MaxLongPolls slots
	presence  *workers.HTTPPresence

	closeOnce sync.Once
	stop      context.CancelFunc
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("api: invalid config: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{
		cfg:       cfg,
		mux:       http.NewServeMux(),
		tokenHash: sha256.Sum256([]byte(cfg.Token)),
		waker:     newWaker(ctx, cfg.Store, cfg.Logger),
		longPolls: make(chan struct{}, cfg.MaxLongPolls),
		presence:  workers.NewHTTPPresence(cfg.Store, 0),
		stop:      stop,
	}

	s.handle("POST", "/api/tasks", s.createTask)
	s.handle("POST", "/api/tasks/batch", s.createTaskBatch)
	s.handle("GET", "/api/tasks", s.listTasks)
	s.handle("GET", "/api/tasks/{id}", s.getTask)
	s.handle("GET", "/api/tasks/{id}/attempts", s.listAttempts)
	s.handle("POST", "/api/tasks/{id}/cancel", s.cancelTask)
	s.handle("POST", "/api/tasks/{id}/replay", s.replayTask)
	s.handle("GET", "/api/stats", s.stats)
	s.handle("GET", "/api/dead-letters", s.listDeadLetters)
	s.handle("POST", "/api/dead-letters/replay", s.replayDeadLetters)
	s.handle("GET", "/api/schedules", s.listSchedules)
	s.handle("POST", "/api/schedules", s.createSchedule)
	s.handle("GET", "/api/schedules/{name}", s.getSchedule)
	s.handle("PATCH", "/api/schedules/{name}", s.updateSchedule)
	s.handle("DELETE", "/api/schedules/{name}", s.deleteSchedule)
	s.handle("POST", "/api/schedules/{name}/trigger", s.triggerSchedule)
	s.handle("POST", "/api/schedules/{name}/pause", s.pauseSchedule)
	s.handle("POST", "/api/schedules/{name}/resume", s.resumeSchedule)
	s.handle("POST", "/api/schedules/{name}/reschedule", s.rescheduleSchedule)
	s.handle("GET", "/api/schedules/{name}/runs", s.listScheduleRuns)
	s.handle("GET", "/api/workers", s.listWorkers)
	s.handle("GET", "/api/queues", s.listQueues)
	s.handle("GET", "/api/queues/{queue}", s.getQueue)
	s.handle("PATCH", "/api/queues/{queue}", s.patchQueue)
	s.handle("POST", "/api/queues/{queue}/pause", s.pauseQueue)
	s.handle("POST", "/api/queues/{queue}/resume", s.resumeQueue)
	s.handle("POST", "/api/flows", s.createFlow)
	s.handle("GET", "/api/flows", s.listFlows)
	s.handle("GET", "/api/flows/{id}", s.getFlow)
	s.handle("POST", "/api/flows/{id}/cancel", s.cancelFlow)
	s.handle("POST", "/api/flows/{id}/replay", s.replayFlow)
	s.handle("POST", "/api/queues/{queue}/claim", s.claim)
	s.handle("POST", "/api/tasks/{id}/heartbeat", s.heartbeat)
	s.handle("POST", "/api/tasks/{id}/complete", s.complete)
	s.handle("POST", "/api/tasks/{id}/fail", s.fail)
	s.handle("GET", "/api/openapi.json", s.openAPI)
	s.handle("GET", "/healthz", s.healthz)
	s.handle("GET", "/readyz", s.readyz)
	s.route("GET", "/metrics", cfg.MetricsHandler)
	return s, nil
}

// Close ends the long polls in progress (they answer with what they have) and stops the
// wake-up subscription. It does not close the Store. The Server must not be used after.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.stop()
		s.waker.close()
	})
}

// Routes lists every route the Server answers, in registration order.
func (s *Server) Routes() []Route {
	return slices.Clone(s.routes)
}

// apiHandler is a handler that reports failures by returning them; serveError turns them
// into the JSON error answer.
type apiHandler func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(method, pattern string, h apiHandler) {
	s.route(method, pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.serveError(w, r, err)
		}
	}))
}

func (s *Server) route(method, pattern string, h http.Handler) {
	if strings.HasPrefix(pattern, "/api/") { // probes and scrapes make no traces
		h = s.traced(method+" "+pattern, h)
	}
	s.mux.Handle(method+" "+pattern, h)
	s.routes = append(s.routes, Route{Method: method, Pattern: pattern})
	if !slices.Contains(s.methods, method) {
		s.methods = append(s.methods, method)
	}
}

// traced wraps a route in a server span named after it, continuing the request's W3C
// traceparent. Routes are wrapped, not ServeHTTP: refused requests (auth, browser
// guard, no route) make no span.
func (s *Server) traced(name string, h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, name,
		otelhttp.WithTracerProvider(s.cfg.TracerProvider),
		otelhttp.WithPropagators(tracing.Propagator))
}

// ServeHTTP hands the dashboard its paths, applies browserguard's checks, authenticates
// the request and routes it; requests no route takes get a JSON 404 or 405 rather than
// ServeMux's plain-text ones.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Dashboard != nil && !apiPath(r.URL.Path) {
		s.cfg.Dashboard.ServeHTTP(w, r)
		return
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.cfg.Logger.Error("api: panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
			writeError(w, http.StatusInternalServerError, codeInternal, "internal error")
		}
	}()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !s.guarded(w, r) {
		return
	}
	if s.needsToken(r) {
		// A client that keeps presenting wrong tokens is refused before its token is
		// compared (authlimit): guessing the token takes forever.
		if _, refused := s.cfg.AuthLimiter.Refuse(w, r); refused {
			writeError(w, http.StatusTooManyRequests, codeTooManyRequests, "too many wrong tokens from this address; try again later")
			return
		}
		if !s.authorized(r) {
			if r.Header.Get("Authorization") != "" {
				s.cfg.AuthLimiter.Failed(r)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="rota"`)
			writeError(w, http.StatusUnauthorized, codeUnauthorized, "missing or wrong bearer token")
			return
		}
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.noRoute(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// apiPath reports whether path is the API's (or a probe's) rather than the dashboard's.
func apiPath(path string) bool {
	switch path {
	case "/api", "/healthz", "/readyz", "/metrics":
		return true
	}
	return strings.HasPrefix(path, "/api/")
}

// guarded applies browserguard's rules (cross-site browser requests; without a token,
// Host names other than an IP address or localhost) and answers 403 to a request they
// refuse. The probes are left out: they tell only whether the process is up and ready,
// and a load balancer or kubelet may address the server by any name.
func (s *Server) guarded(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		return true
	}
	err := browserguard.Check(r, s.cfg.Token != "")
	var he *browserguard.HostError
	switch {
	case err == nil:
		return true
	case errors.As(err, &he):
		writeError(w, http.StatusForbidden, codeHostNotAllowed, he.Error())
	default:
		writeError(w, http.StatusForbidden, codeCrossOrigin,
			"a cross-site browser request was refused and nothing was changed: call the API from a program, not from a page on another site")
	}
	return false
}

// needsToken reports whether r must carry the token. It lists what stays open rather
// than what is protected, so that a path no route knows (or a spelling of one that the
// mux would redirect) is protected too.
func (s *Server) needsToken(r *http.Request) bool {
	if s.cfg.Token == "" {
		return false
	}
	switch r.URL.Path {
	case "/healthz", "/readyz":
		return false
	case "/metrics":
		return s.cfg.MetricsAuth
	}
	return true
}

// authorized compares the bearer token in constant time. Comparing hashes keeps the
// comparison constant-time in the token's length too.
func (s *Server) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) == 1
}

// noRoute answers a request that matched no pattern: 405 with Allow when the path
// exists for other methods, 404 otherwise.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	probe := *r
	for _, m := range s.methods {
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "" {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) == 0 {
		writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("no route for %s", r.URL.Path))
		return
	}
	slices.Sort(allow)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed,
		fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
}
