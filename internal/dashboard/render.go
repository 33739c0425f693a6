package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

//go:embed templates/*.html
var templateFiles embed.FS

// partialHeader marks the live-update fetches of static/live.js: the answer is only the
// inside of <main id="content">, which the script swaps in.
const partialHeader = "X-Rota-Partial"

// The pages; each is templates/<name>.html parsed together with layout.html (the
// document around <main id="content">) and shared.html (pieces every page uses).
var pageNames = []string{"login", "error", "overview", "tasks", "task", "dead_letters", "replay_confirm", "schedules", "schedule", "queues", "workers", "flows", "flow"}

type pageSet struct {
	byName map[string]*template.Template
}

func loadPages(assets *assetSet) (*pageSet, error) {
	funcs := templateFuncs()
	funcs["asset"] = assets.url
	ps := &pageSet{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/shared.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", name, err)
		}
		ps.byName[name] = t
	}
	return ps, nil
}

// pageData is what every template gets. Handlers set Title, Nav, Data and sometimes
// Flash; render fills in the rest.
type pageData struct {
	Title string
	Nav   string // which header link is current
	Flash *flash
	Data  any

	Bare   bool      // no navigation (the login page)
	Auth   bool      // a login exists: show the logout button
	CSRF   string    // the hidden csrf field of every form
	Back   string    // this page's path and query: where actions return to
	Now    time.Time // the one "now" of the page, for ages
	PollMS int       // live updates every PollMS; 0 = the page does not poll
}

// isPartial reports whether r is a live-update fetch.
func isPartial(r *http.Request) bool { return r.Header.Get(partialHeader) == "1" }

// render writes page name with status. A live-update fetch gets only the content
// region, and never takes the flash (the full page it belongs to shows it).
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, p pageData) {
	t := d.pages.byName[name]
	if t == nil {
		panic("dashboard: no page template " + name)
	}
	sess, _ := d.session(r)
	p.Bare = name == "login"
	p.Auth = d.keys.authRequired && !p.Bare
	p.CSRF = d.keys.csrfToken(sess)
	p.Back = localPath(r.URL.RequestURI())
	p.Now = d.cfg.Now().UTC()
	// The answers to a POST (an error, a confirmation) have no URL of their own to poll.
	if name != "login" && name != "error" && name != "replay_confirm" {
		p.PollMS = int(d.cfg.PollInterval / time.Millisecond)
	}
	partial := isPartial(r)
	if !partial && p.Flash == nil {
		p.Flash = d.takeFlash(w, r)
	}
	tmpl := "layout.html"
	if partial {
		tmpl = "content"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, p); err != nil {
		d.cfg.Logger.Error("dashboard: render page", "page", name, "error", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Add("Vary", partialHeader)
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// renderPage renders a list page; when err is set it shows it as a flash with its status
// and the page without rows (its filter form stays, to correct the input).
func (d *Dashboard) renderPage(w http.ResponseWriter, r *http.Request, err error, name string, p pageData) {
	status := http.StatusOK
	if err != nil {
		var msg string
		status, msg = d.errorStatus(r, err)
		p.Flash = &flash{Kind: flashError, Message: msg}
	}
	d.render(w, r, status, name, p)
}

type errorView struct {
	Status  int
	Heading string
	Message string
}

// renderError shows an error page: the message as a .flash-error, with status.
func (d *Dashboard) renderError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, r, status, "error", pageData{
		Title: http.StatusText(status),
		Flash: &flash{Kind: flashError, Message: msg},
		Data:  errorView{Status: status, Heading: http.StatusText(status), Message: msg},
	})
}

// errorStatus maps a store error to the status and message a user sees. Messages of the
// store's sentinel errors are written for people and name only what the user sent;
// anything else (a lost connection, a bug) is logged and shown as "internal error".
func (d *Dashboard) errorStatus(r *http.Request, err error) (int, string) {
	var ue *userError
	switch {
	case errors.As(err, &ue):
		return ue.status, ue.msg
	case errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, store.ErrIllegalTransition), errors.Is(err, store.ErrConflict):
		return http.StatusConflict, err.Error()
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return 499, "request canceled"
	}
	d.cfg.Logger.Error("dashboard: internal error", "method", r.Method, "path", r.URL.Path, "error", err)
	return http.StatusInternalServerError, "Internal error; the server log has the details."
}

// fail renders the error page for err.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := d.errorStatus(r, err)
	d.renderError(w, r, status, msg)
}

// userError is a request the dashboard refuses with a message of its own: malformed
// input (400) or a name that matches nothing (404).
type userError struct {
	status int
	msg    string
}

func (e *userError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &userError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &userError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}
