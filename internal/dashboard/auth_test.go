package dashboard

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/api"
	"github.com/rotaqueue/rota/internal/authlimit"
	"github.com/rotaqueue/rota/internal/store"
)

const testToken = "s3cret-token-of-the-api"

// login posts the token and returns the browser's session cookie.
func login(t *testing.T, b *browser, next string) *http.Cookie {
	t.Helper()
	p := b.post("/login", url.Values{"token": {testToken}, "next": {next}}).want(t, http.StatusSeeOther)
	if loc := p.header.Get("Location"); loc != next {
		t.Fatalf("login went to %q, want %q", loc, next)
	}
	c := b.cookies[sessionCookie]
	if c == nil {
		t.Fatal("login set no session cookie")
	}
	return c
}

func TestLoginRequired(t *testing.T) {
	st := memoryStore(t)
	task := createTask(t, st, store.CreateParams{})
	d := newDashboard(t, Config{Store: st, Token: testToken})
	b := newBrowser(t, d)

	// Every page redirects to the login, remembering where it was going.
	for path, next := range map[string]string{
		"/":                          "%2F",
		"/tasks?status=PENDING":      "%2Ftasks%3Fstatus%3DPENDING",
		"/tasks/" + task.ID.String(): "%2Ftasks%2F" + task.ID.String(),
		"/dead-letters":              "%2Fdead-letters",
		"/schedules":                 "%2Fschedules",
		"/schedules/x":               "%2Fschedules%2Fx",
		"/no-such-page":              "%2Fno-such-page",
	} {
		p := b.get(path).want(t, http.StatusSeeOther)
		if loc := p.header.Get("Location"); loc != "/login?next="+next {
			t.Errorf("GET %s: Location %q, want /login?next=%s", path, loc, next)
		}
	}
	// A live-update fetch is redirected too (the script then loads the login page).
	b.partial("/tasks").want(t, http.StatusSeeOther)

	// Every POST is refused without a redirect, and changes nothing.
	for _, path := range []string{"/tasks/" + task.ID.String() + "/cancel", "/tasks/" + task.ID.String() + "/replay",
		"/dead-letters/replay", "/schedules/x/pause", "/logout"} {
		p := b.post(path, url.Values{"csrf": {d.keys.csrfToken("")}}).want(t, http.StatusForbidden)
		p.wantFlash(t, "error", "not logged in")
	}
	wantStatus(t, st, task.ID, store.StatusPending)

	// The login page and the assets are public.
	b.get("/login").want(t, http.StatusOK).contains(t, `<form id="login-form" method="post" action="/login">`,
		`<input id="token" name="token" type="password"`, `<button id="login-submit" type="submit"`).lacks(t, `data-nav=`)
	css, _ := d.assets.url("app.css")
	b.get(css).want(t, http.StatusOK)
}

func TestLogin(t *testing.T) {
	st := memoryStore(t)
	d := newDashboard(t, Config{Store: st, Token: testToken})
	b := newBrowser(t, d)

	// A wrong token re-renders the form with an error and sets no cookie.
	for _, wrong := range []string{"", "wrong", testToken[:5], testToken + "x"} {
		p := b.post("/login", url.Values{"token": {wrong}, "next": {"/tasks"}}).want(t, http.StatusUnauthorized)
		p.wantFlash(t, "error", "Wrong token").contains(t, `id="login-form"`, `name="next" value="/tasks"`)
		if len(p.setCookies) != 0 || len(b.cookies) != 0 {
			t.Fatalf("a wrong token set cookies: %v", p.setCookies)
		}
	}

	c := login(t, b, "/tasks?status=DEAD")
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", c)
	}
	if c.Value == testToken || strings.Contains(c.Value, testToken) || c.MaxAge != int(DefaultSessionTTL/time.Second) {
		t.Fatalf("cookie value %q / max-age %d: must not be the token, and last the session TTL", c.Value, c.MaxAge)
	}
	b.get("/").want(t, http.StatusOK).contains(t, `<button id="logout" type="submit"`)
	b.get("/login?next=/schedules").want(t, http.StatusSeeOther) // already logged in: go on

	// The redirect target stays on this site.
	for _, next := range []string{"https://evil.example/", "//evil.example/x", `/\evil.example`, "javascript:alert(1)", "/login"} {
		nb := newBrowser(t, d)
		p := nb.post("/login", url.Values{"token": {testToken}, "next": {next}}).want(t, http.StatusSeeOther)
		if loc := p.header.Get("Location"); loc != "/" {
			t.Errorf("next %q: went to %q, want /", next, loc)
		}
	}

	// Logout clears the cookie; pages then redirect again.
	p := b.post("/logout", url.Values{"csrf": {b.csrf("/")}}).want(t, http.StatusSeeOther)
	if p.header.Get("Location") != "/login" || b.cookies[sessionCookie] != nil {
		t.Fatalf("logout: Location %q, cookie %v", p.header.Get("Location"), b.cookies[sessionCookie])
	}
	b.get("/").want(t, http.StatusSeeOther)
}

func TestSessionCookieOverTLSIsSecure(t *testing.T) {
	d := newDashboard(t, Config{Store: memoryStore(t), Token: testToken})
	b := newBrowser(t, d)
	b.tls = true
	if c := login(t, b, "/"); !c.Secure {
		t.Fatal("session cookie set over TLS is not Secure")
	}
}

func TestSessionChecks(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	d := newDashboard(t, Config{Store: memoryStore(t), Token: testToken, Now: clock, SessionTTL: time.Hour})
	valid := d.keys.newSession(now)
	other := newDashboard(t, Config{Store: memoryStore(t), Token: "another-token", Now: clock})
	for name, value := range map[string]string{
		"expired":          d.keys.newSession(now.Add(-time.Hour - time.Second)),
		"issued in future": d.keys.newSession(now.Add(time.Hour)),
		"other token":      other.keys.newSession(now),
		"tampered time":    strings.Replace(valid, "1", "2", 1),
		"tampered mac":     valid[:len(valid)-2] + "AA",
		"the token":        testToken,
		"empty":            "",
		"no mac":           strings.Split(valid, ".")[0],
	} {
		b := newBrowser(t, d)
		b.cookies[sessionCookie] = &http.Cookie{Name: sessionCookie, Value: value}
		if p := b.get("/"); p.status != http.StatusSeeOther {
			t.Errorf("session %s: status %d, want 303 to login", name, p.status)
		}
	}
	b := newBrowser(t, d)
	b.cookies[sessionCookie] = &http.Cookie{Name: sessionCookie, Value: valid}
	b.get("/").want(t, http.StatusOK)
	// Servers sharing the token accept each other's sessions.
	twin := newDashboard(t, Config{Store: memoryStore(t), Token: testToken, Now: clock})
	newBrowserWith(t, twin, valid).get("/").want(t, http.StatusOK)
}

func newBrowserWith(t *testing.T, d *Dashboard, session string) *browser {
	b := newBrowser(t, d)
	b.cookies[sessionCookie] = &http.Cookie{Name: sessionCookie, Value: session}
	return b
}

func TestCSRF(t *testing.T) {
	for _, token := range []string{testToken, ""} {
		name := "with token"
		if token == "" {
			name = "without token"
		}
		t.Run(name, func(t *testing.T) {
			st := memoryStore(t)
			task := createTask(t, st, store.CreateParams{})
			d := newDashboard(t, Config{Store: st, Token: token})
			b := newBrowser(t, d)
			if token != "" {
				login(t, b, "/")
			} else {
				b.get("/login").want(t, http.StatusSeeOther) // no login without a token
			}
			page := "/tasks/" + task.ID.String()
			good := b.csrf(page)
			cancel := page + "/cancel"

			otherSession := d.keys.csrfToken(d.keys.newSession(time.Now().Add(-time.Minute)))
			otherProcess := newDashboard(t, Config{Store: st, Token: token}).keys.csrfToken("")
			for what, form := range map[string]url.Values{
				"no csrf field":      {},
				"empty csrf":         {"csrf": {""}},
				"wrong csrf":         {"csrf": {"AAAA" + good[4:]}},
				"another's csrf":     {"csrf": {otherSession}},
				"the session itself": {"csrf": {sessionValue(b)}},
			} {
				if token == "" && what == "another's csrf" {
					form = url.Values{"csrf": {otherProcess}}
				}
				b.post(cancel, form).want(t, http.StatusForbidden).wantFlash(t, "error", "security token")
			}
			wantStatus(t, st, task.ID, store.StatusPending)

			// A cross-site form post is refused even with a valid token and cookie.
			for header, value := range map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"} {
				req := httptest.NewRequest(http.MethodPost, cancel, strings.NewReader(url.Values{"csrf": {good}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set(header, value)
				b.do(req).want(t, http.StatusForbidden).wantFlash(t, "error", "another site")
			}
			wantStatus(t, st, task.ID, store.StatusPending)

			// Same-origin with the right token works.
			req := httptest.NewRequest(http.MethodPost, cancel, strings.NewReader(url.Values{"csrf": {good}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			b.do(req).want(t, http.StatusSeeOther)
			wantStatus(t, st, task.ID, store.StatusCanceled)
		})
	}
}

func sessionValue(b *browser) string {
	if c := b.cookies[sessionCookie]; c != nil {
		return c.Value
	}
	return ""
}

func TestSecurityHeaders(t *testing.T) {
	b := newBrowser(t, newDashboard(t, Config{Store: memoryStore(t), Token: testToken}))
	for _, p := range []page{b.get("/login"), b.get("/"), b.post("/tasks/x/cancel", nil), b.get("/nope")} {
		h := p.header
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("headers %v", h)
		}
	}
	// No inline script or style anywhere: the policy would block it.
	body := b.get("/login").body
	if strings.Contains(body, "<script>") || strings.Contains(body, "style=") || strings.Contains(body, "<style") {
		t.Fatal("the page has inline script or style")
	}
}

// TestServedWithTheAPI: mounted in the API server, the dashboard takes every path but
// the API's; its cookie is no Bearer token, and the API still wants the token.
func TestServedWithTheAPI(t *testing.T) {
	st := memoryStore(t)
	d := newDashboard(t, Config{Store: st, Token: testToken})
	srv, err := api.New(api.Config{Store: st, Token: testToken, Dashboard: d, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	b := newBrowser(t, srv)
	cookie := login(t, b, "/")
	b.get("/").want(t, http.StatusOK).contains(t, `id="queue-counts"`)
	b.get("/healthz").want(t, http.StatusOK).contains(t, `"ok"`)

	for _, auth := range []string{"", "Bearer " + cookie.Value} {
		req := httptest.NewRequest(http.MethodGet, "/api/tasks", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if p := b.do(req); p.status != http.StatusUnauthorized {
			t.Fatalf("GET /api/tasks with %q and the session cookie: status %d, want 401", auth, p.status)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/api/tasks", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	b.do(req).want(t, http.StatusOK)
}

// TestLoginThrottlesWrongTokens: after too many wrong tokens from one address, the login
// form refuses even the right one (429, Retry-After) until the budget refills.
func TestLoginThrottlesWrongTokens(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	d := newDashboard(t, Config{Store: memoryStore(t), Token: testToken, Now: clock,
		AuthLimiter: authlimit.New(authlimit.Config{Burst: 2, Every: time.Minute, Now: clock})})
	b := newBrowser(t, d)
	for range 2 {
		b.post("/login", url.Values{"token": {"wrong"}, "next": {"/"}}).want(t, http.StatusUnauthorized)
	}
	p := b.post("/login", url.Values{"token": {testToken}, "next": {"/"}}).want(t, http.StatusTooManyRequests)
	p.wantFlash(t, "error", "Too many wrong tokens").contains(t, `id="login-form"`)
	if got := p.header.Get("Retry-After"); got != "60" || b.cookies[sessionCookie] != nil {
		t.Fatalf("throttled login: Retry-After %q, cookie %v; want 60 and no session", got, b.cookies[sessionCookie])
	}
	now = now.Add(time.Minute)
	login(t, b, "/")
}

// TestHostRuleWithoutToken: without a token the dashboard answers only requests
// addressed to an IP address or localhost, so a DNS-rebinding page (same-origin to the
// browser, its own name in Host) can neither read a page nor post a form. With a token
// the rule is off: the login stands in the way.
func TestHostRuleWithoutToken(t *testing.T) {
	st := memoryStore(t)
	task := createTask(t, st, store.CreateParams{})
	d := newDashboard(t, Config{Store: st})
	page := "/tasks/" + task.ID.String()
	good := newBrowser(t, d).csrf(page)

	b := newBrowser(t, d)
	b.host = "rebind.example:8080"
	b.header.Set("Sec-Fetch-Site", "same-origin")
	for _, path := range []string{"/", page, "/no-such-page", "/login"} {
		b.get(path).want(t, http.StatusForbidden).wantFlash(t, "error", `not to "rebind.example:8080"`).contains(t, "ROTA_API_TOKEN")
	}
	b.post(page+"/cancel", url.Values{"csrf": {good}}).want(t, http.StatusForbidden)
	wantStatus(t, st, task.ID, store.StatusPending)

	for _, host := range []string{"localhost:8080", "127.0.0.1", "[::1]:8080", "192.0.2.10:80"} {
		b.host = host
		b.get("/").want(t, http.StatusOK)
	}
	b.post(page+"/cancel", url.Values{"csrf": {good}}).want(t, http.StatusSeeOther)
	wantStatus(t, st, task.ID, store.StatusCanceled)

	withToken := newBrowser(t, newDashboard(t, Config{Store: st, Token: testToken}))
	withToken.host = "rota.example.com"
	withToken.get("/").want(t, http.StatusSeeOther)
	login(t, withToken, "/")
	withToken.get("/").want(t, http.StatusOK)
}

// TestBearerToken: the dashboard takes the API token as a Bearer token (DESIGN.md
// section 7), in place of the session; such a request needs no csrf field (browsers never
// attach the header themselves) but still passes the cross-origin check. A wrong one is
// 401, not a redirect, and counts toward the limiter the API and the login share.
func TestBearerToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := memoryStore(t)
	task := createTask(t, st, store.CreateParams{})
	cancel := "/tasks/" + task.ID.String() + "/cancel"
	d := newDashboard(t, Config{Store: st, Token: testToken, Now: clock, AuthLimiter: authlimit.New(authlimit.Config{Burst: 2, Every: time.Minute, Now: clock})})

	b := newBrowser(t, d)
	b.header.Set("Authorization", "Bearer "+testToken)
	b.get("/").want(t, http.StatusOK).contains(t, `id="queue-counts"`)
	b.partial("/tasks").want(t, http.StatusOK)

	cross := httptest.NewRequest(http.MethodPost, cancel, nil)
	cross.Header.Set("Sec-Fetch-Site", "cross-site")
	b.do(cross).want(t, http.StatusForbidden).wantFlash(t, "error", "another site")
	wantStatus(t, st, task.ID, store.StatusPending)
	b.post(cancel, url.Values{"back": {"/"}}).want(t, http.StatusSeeOther) // no csrf field
	wantStatus(t, st, task.ID, store.StatusCanceled)

	// Another scheme (a proxy's Basic credentials) is not a token: the cookie decides.
	basic := newBrowser(t, d)
	basic.header.Set("Authorization", "Basic dXNlcjpwYXNz")
	basic.get("/").want(t, http.StatusSeeOther)
	login(t, basic, "/")
	basic.get("/").want(t, http.StatusOK)

	// A proxy's own Bearer token (an OAuth proxy's id token) on a logged-in browser's
	// requests is not a wrong Rota token: the session decides and nothing is counted
	// (three would use up this limiter's budget of two, and the wrong tokens below would
	// meet 429 at once).
	proxied := newBrowser(t, d)
	login(t, proxied, "/")
	proxied.header.Set("Authorization", "Bearer proxy-id-token")
	for range 3 {
		proxied.get("/").want(t, http.StatusOK)
	}

	// Wrong tokens: 401 with WWW-Authenticate, counted with the login's.
	wrong := newBrowser(t, d)
	wrong.header.Set("Authorization", "Bearer not-the-token")
	p := wrong.get("/").want(t, http.StatusUnauthorized).wantFlash(t, "error", "Wrong bearer token")
	if p.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	wrong.post(cancel, url.Values{}).want(t, http.StatusUnauthorized)
	p = b.get("/").want(t, http.StatusTooManyRequests) // the right token, from the same address
	if got := p.header.Get("Retry-After"); got != "60" {
		t.Errorf("Retry-After %q, want 60", got)
	}
	newBrowser(t, d).post("/login", url.Values{"token": {testToken}, "next": {"/"}}).want(t, http.StatusTooManyRequests)
	now = now.Add(time.Minute)
	b.get("/").want(t, http.StatusOK)

	// Without a token there is no login, and a Bearer header is no way around the csrf field.
	open := newBrowser(t, newDashboard(t, Config{Store: st}))
	open.header.Set("Authorization", "Bearer anything")
	open.get("/").want(t, http.StatusOK)
	open.post(cancel, url.Values{}).want(t, http.StatusForbidden).wantFlash(t, "error", "security token")
}

// TestPostToNoPageIs404: a POST to a path without a page is 404 before the csrf check,
// so a client given a wrong base URL (rota --server http://host/prefix) is told that
// there is nothing there rather than that its form lacks a field.
func TestPostToNoPageIs404(t *testing.T) {
	for _, token := range []string{"", testToken} {
		b := newBrowser(t, newDashboard(t, Config{Store: memoryStore(t), Token: token}))
		if token != "" {
			b.header.Set("Authorization", "Bearer "+token)
		}
		for _, path := range []string{"/prefix/api/tasks/0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f/cancel", "/prefix/api/dead-letters/replay", "/tasks"} {
			b.post(path, nil).want(t, http.StatusNotFound).wantFlash(t, "error", "There is no page at "+path)
		}
	}
}
