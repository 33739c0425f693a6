package dashboard

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rotaqueue/rota/internal/authlimit"
	"github.com/rotaqueue/rota/internal/browserguard"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/statscache"
	"github.com/rotaqueue/rota/internal/validate"
	"github.com/rotaqueue/rota/internal/workers"
)

// Config configures a Dashboard. Every zero field but Store means its default; New fills
// the defaults and validates the result.
type Config struct {
	// Store holds the tasks and schedules. Required. The Dashboard never closes it.
	Store store.Store

	// Token, when non-empty, is the API token: the login form asks for it, and the
	// session cookie and CSRF tokens are derived from it (so every server sharing the
	// token accepts the same sessions). Empty means no login; CSRF protection still
	// applies, with a key made at random per process. Surrounding whitespace is dropped,
	// as the API does; whitespace or control characters inside are refused.
	Token string
	// SessionTTL is how long a login lasts. Default: DefaultSessionTTL.
	SessionTTL time.Duration
	// AuthLimiter refuses logins from a client address that keeps entering wrong
	// tokens. Share the API's (api.Config.AuthLimiter). Default: authlimit.New's
	// defaults, with Now as its clock.
	AuthLimiter *authlimit.Limiter

	// PollInterval is how often open pages fetch their live regions. Default: 1s.
	PollInterval time.Duration

	// Logger receives the details of internal errors (which users only see as "internal
	// error"). Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock for ages and session expiry. Default: time.Now.
	Now func() time.Time
	// Stats shares one Stats query with the API and the queue gauges of the same
	// process (statscache). Default: a cache of its own on Store.
	Stats *statscache.Cache
	// Workers shares the short-lived cache of the live workers with the API and the
	// rota_workers gauges (the Workers page and the overview's unserved queues).
	// Default: a cache of its own on Store.
	Workers *workers.Cache
}

// Defaults.
const (
	DefaultSessionTTL   = 12 * time.Hour
	DefaultPollInterval = time.Second
)

// maxFormBytes bounds the body of every POST: the forms hold a few short fields.
const maxFormBytes = 64 << 10

func (cfg Config) withDefaults() Config {
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AuthLimiter == nil {
		cfg.AuthLimiter = authlimit.New(authlimit.Config{Now: cfg.Now})
	}
	if cfg.Workers == nil && cfg.Store != nil {
		cfg.Workers = workers.NewCache(cfg.Store, workers.CacheConfig{})
	}
	return cfg
}

func (cfg *Config) validate() error {
	// Every problem at once, as the API's and the worker's configs do.
	var problems validate.Problems
	problems.Check(cfg.Store != nil, "Store is required")
	// The login form's token is compared trimmed, so the configured one is trimmed too.
	token, err := validate.Token(cfg.Token)
	problems.Add(err)
	cfg.Token = token
	problems.Check(cfg.SessionTTL >= time.Minute, "SessionTTL must be at least a minute, got %s", cfg.SessionTTL)
	problems.Check(cfg.PollInterval >= 100*time.Millisecond, "PollInterval must be at least 100ms, got %s", cfg.PollInterval)
	return problems.Err()
}

// Dashboard is the web UI. It implements http.Handler for every path it owns (all but
// the API's); create it with New.
type Dashboard struct {
	cfg        Config
	mux        *http.ServeMux
	keys       keys
	pages      *pageSet
	assets     *assetSet
	throughput *throughputCache
	stats      *sharedStats
}

// New returns a Dashboard for cfg.
func New(cfg Config) (*Dashboard, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("dashboard: invalid config: %w", err)
	}
	k, err := newKeys(cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	assets, err := loadAssets()
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	pages, err := loadPages(assets)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	d := &Dashboard{
		cfg:        cfg,
		mux:        http.NewServeMux(),
		keys:       k,
		pages:      pages,
		assets:     assets,
		throughput: newThroughputCache(cfg.Store),
		stats:      newSharedStats(cfg.Store, cfg.Now, cfg.Stats),
	}

	d.get("/assets/{file}", d.serveAsset)
	d.get("/login", d.loginPage)
	d.post("/login", d.login)
	d.post("/logout", d.logout)
	d.get("/{$}", d.overview)
	d.get("/tasks", d.taskList)
	d.get("/tasks/search", d.taskSearch)
	d.get("/tasks/{id}", d.taskPage)
	d.post("/tasks/{id}/cancel", d.cancelTask)
	d.post("/tasks/{id}/replay", d.replayTask)
	d.get("/flows", d.flowList)
	d.get("/flows/{id}", d.flowPage)
	d.post("/flows/{id}/cancel", d.cancelFlow)
	d.post("/flows/{id}/replay", d.replayFlow)
	d.get("/dead-letters", d.deadLetterList)
	d.post("/dead-letters/replay", d.replayDeadLetters)
	d.get("/workers", d.workerList)
	d.get("/schedules", d.scheduleList)
	d.get("/queues", d.queueList)
	d.post("/queues/limits", d.setQueueLimits)
	d.post("/queues/{queue}/pause", d.pauseQueue)
	d.post("/queues/{queue}/resume", d.resumeQueue)
	d.get("/schedules/{name}", d.schedulePage)
	d.post("/schedules/{name}/pause", d.pauseSchedule)
	d.post("/schedules/{name}/resume", d.resumeSchedule)
	d.post("/schedules/{name}/trigger", d.triggerSchedule)
	d.post("/schedules/{name}/reschedule", d.rescheduleSchedule)
	d.mux.HandleFunc(noPage, func(w http.ResponseWriter, r *http.Request) {
		d.renderError(w, r, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})
	return d, nil
}

// noPage is the catch-all pattern: paths no page has get 404.
const noPage = "/"

func (d *Dashboard) get(pattern string, h http.HandlerFunc) { d.mux.HandleFunc("GET "+pattern, h) }

// post registers a mutating route. ServeHTTP has bounded and parsed its form and checked
// its origin, session and csrf field before the handler runs.
func (d *Dashboard) post(pattern string, h http.HandlerFunc) { d.mux.HandleFunc("POST "+pattern, h) }

// ServeHTTP applies, in order: security headers, panic recovery, browserguard's checks
// (cross-site requests with an unsafe method; without a token, Host names other than an
// IP address or localhost), the session check (when a token is set: the session cookie
// or the token as a Bearer token), 404 for paths without a page, the CSRF token on every
// POST but the login and those with the Bearer token, and then the route.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			d.cfg.Logger.Error("dashboard: panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
			d.renderError(w, r, http.StatusInternalServerError, "Internal error; the server log has the details.")
		}
	}()
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead
	// A browser's cross-site form post stops here, even one carrying a valid session
	// cookie and csrf value; so does a DNS-rebinding page when there is no token.
	if err := browserguard.Check(r, d.keys.authRequired); err != nil {
		var he *browserguard.HostError
		if errors.As(err, &he) {
			d.renderError(w, r, http.StatusForbidden, fmt.Sprintf("This server has no API token, so it only answers requests "+
				"addressed to an IP address or localhost, not to %q (a guard against DNS rebinding); nothing was changed. "+
				"Open the dashboard by IP address or at localhost, or set ROTA_API_TOKEN on the server.", he.Host))
			return
		}
		d.renderError(w, r, http.StatusForbidden, "This request came from another site and was refused; nothing was changed. Use the dashboard's own forms.")
		return
	}
	public := r.URL.Path == "/login" || strings.HasPrefix(r.URL.Path, "/assets/")
	sess, ok := d.session(r)
	// A Bearer token is looked at only without a valid session: a proxy in front (an
	// OAuth one, say) may add its own Authorization to a logged-in browser's requests,
	// and that is neither a wrong Rota token nor a guess to count.
	var bearer bool
	if !ok {
		var answered bool
		if bearer, answered = d.checkBearer(w, r); answered {
			return
		}
	}
	if !public && !ok && !bearer {
		if safe {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(localPath(r.URL.RequestURI())), http.StatusSeeOther)
			return
		}
		d.renderError(w, r, http.StatusForbidden, "You are not logged in (or your session expired); nothing was changed. Log in and try again.")
		return
	}
	if _, pattern := d.mux.Handler(r); pattern == noPage {
		// 404 before the form checks: a POST to no page (a client given a wrong base
		// URL, say) is told so, not that its csrf field is missing.
		d.mux.ServeHTTP(w, r)
		return
	}
	if !safe {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			d.renderError(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
			return
		}
		// Browsers never attach a Bearer token on their own, so a page on another site
		// cannot make one send it: such a request needs no csrf field.
		if r.URL.Path != "/login" && !bearer && !d.keys.validCSRF(sess, r.PostForm.Get("csrf")) {
			d.renderError(w, r, http.StatusForbidden, "The form's security token is missing or wrong (the page may be from an old session); nothing was changed. Reload the page and try again.")
			return
		}
	}
	d.mux.ServeHTTP(w, r)
}

// setSecurityHeaders: the pages load only their own script and stylesheet (no inline
// script or style), may not be framed, and are never cached (they show live state and
// carry CSRF tokens). Assets override Cache-Control.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}
