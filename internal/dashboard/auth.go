package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Sessions and CSRF tokens are stateless: both are HMAC-SHA256 values that any server
// holding the same API token can check, so there is no session table and a restart logs
// nobody out.
//
//	secret  = HMAC(token, "rota dashboard v1")      (no token: 32 random bytes per process)
//	cookie  = "<issued unix>.<base64url HMAC(session key, issued)>"
//	csrf    = base64url HMAC(csrf key, cookie)       (no token: HMAC(csrf key, ""))
//
// with each key = HMAC(secret, its purpose). The cookie is not the token and cannot be
// turned back into it, so a stolen cookie is no Bearer token for the API; it expires after
// SessionTTL. Logging out clears the cookie in the browser; a copy taken before stays
// valid until it expires (changing the token ends every session at once).

const (
	sessionCookie = "rota_session"
	flashCookie   = "rota_flash"
)

type keys struct {
	authRequired bool
	tokenHash    [sha256.Size]byte
	session      []byte
	csrf         []byte
	flash        []byte
}

func newKeys(token string) (keys, error) {
	var secret []byte
	if token != "" {
		secret = mac([]byte(token), "rota dashboard v1")
	} else {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return keys{}, fmt.Errorf("random key: %w", err)
		}
	}
	return keys{
		authRequired: token != "",
		tokenHash:    sha256.Sum256([]byte(token)),
		session:      mac(secret, "session"),
		csrf:         mac(secret, "csrf"),
		flash:        mac(secret, "flash"),
	}, nil
}

func mac(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

func macString(key []byte, msg string) string {
	return base64.RawURLEncoding.EncodeToString(mac(key, msg))
}

// tokenMatches compares a submitted token with the configured one in constant time
// (comparing hashes keeps it constant in the token's length too).
func (k keys) tokenMatches(submitted string) bool {
	got := sha256.Sum256([]byte(submitted))
	return subtle.ConstantTimeCompare(got[:], k.tokenHash[:]) == 1
}

// newSession returns a cookie value issued at now.
func (k keys) newSession(now time.Time) string {
	issued := strconv.FormatInt(now.Unix(), 10)
	return issued + "." + macString(k.session, issued)
}

// validSession checks a cookie value's MAC (in constant time) and age.
func (k keys) validSession(value string, now time.Time, ttl time.Duration) bool {
	issued, sig, ok := strings.Cut(value, ".")
	if !ok {
		return false
	}
	if !hmac.Equal([]byte(sig), []byte(macString(k.session, issued))) {
		return false
	}
	unix, err := strconv.ParseInt(issued, 10, 64)
	if err != nil {
		return false
	}
	at := time.Unix(unix, 0)
	// A little slack for the clocks of servers sharing the token.
	return !at.After(now.Add(time.Minute)) && now.Sub(at) < ttl
}

// csrfToken is the token the forms of a session carry.
func (k keys) csrfToken(session string) string { return macString(k.csrf, session) }

func (k keys) validCSRF(session, submitted string) bool {
	return submitted != "" && hmac.Equal([]byte(submitted), []byte(k.csrfToken(session)))
}

// session returns the request's session cookie value and whether it is valid. Without a
// token every request has the empty session.
func (d *Dashboard) session(r *http.Request) (string, bool) {
	if !d.keys.authRequired {
		return "", true
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || !d.keys.validSession(c.Value, d.cfg.Now(), d.cfg.SessionTTL) {
		return "", false
	}
	return c.Value, true
}

// checkBearer authenticates a request by "Authorization: Bearer <token>" (DESIGN.md
// section 7: the dashboard takes the API token as the API does), when a token is set.
// valid reports the right token. A wrong one is answered with 401 (and counts toward
// the wrong-token limiter the API and the login share), a client over its budget with
// 429; answered reports either. Other schemes, such as a proxy's Basic credentials, are
// left to the session cookie.
func (d *Dashboard) checkBearer(w http.ResponseWriter, r *http.Request) (valid, answered bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !d.keys.authRequired || !ok || !strings.EqualFold(scheme, "Bearer") {
		return false, false
	}
	if secs, refused := d.cfg.AuthLimiter.Refuse(w, r); refused {
		// Refused before the token is compared, like the API and the login (authlimit).
		d.renderError(w, r, http.StatusTooManyRequests, fmt.Sprintf("Too many wrong tokens from your address. Try again in %d s.", secs))
		return false, true
	}
	if !d.keys.tokenMatches(strings.TrimSpace(token)) {
		d.cfg.AuthLimiter.Failed(r)
		w.Header().Set("WWW-Authenticate", `Bearer realm="rota"`)
		d.renderError(w, r, http.StatusUnauthorized, "Wrong bearer token. Send the server's API token (ROTA_API_TOKEN), or log in.")
		return false, true
	}
	return true, false
}

// secureRequest reports whether the browser reached us over TLS (directly, or through a
// proxy that says so); cookies are then marked Secure.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (d *Dashboard) setSessionCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   secureRequest(r),
		SameSite: http.SameSiteStrictMode,
	})
}

type loginView struct {
	Next string
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if !d.keys.authRequired {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if _, ok := d.session(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	d.render(w, r, http.StatusOK, "login", pageData{Title: "Log in", Data: loginView{Next: next}})
}

// login checks the token; success sets the session cookie and goes to next.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostForm.Get("next"))
	if !d.keys.authRequired {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if secs, refused := d.cfg.AuthLimiter.Refuse(w, r); refused {
		// Refused before the token is compared: guessing it takes forever (authlimit).
		d.render(w, r, http.StatusTooManyRequests, "login", pageData{
			Title: "Log in",
			Flash: &flash{Kind: flashError, Message: fmt.Sprintf("Too many wrong tokens from your address. Try again in %d s.", secs)},
			Data:  loginView{Next: next},
		})
		return
	}
	if !d.keys.tokenMatches(strings.TrimSpace(r.PostForm.Get("token"))) {
		d.cfg.AuthLimiter.Failed(r)
		d.render(w, r, http.StatusUnauthorized, "login", pageData{
			Title: "Log in",
			Flash: &flash{Kind: flashError, Message: "Wrong token. Use the server's API token (ROTA_API_TOKEN)."},
			Data:  loginView{Next: next},
		})
		return
	}
	d.setSessionCookie(w, r, d.keys.newSession(d.cfg.Now()), int(d.cfg.SessionTTL/time.Second))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	d.setSessionCookie(w, r, "", -1)
	if !d.keys.authRequired {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site: a path starting with one '/', never
// the login page itself. Anything else becomes "/".
func safeNext(next string) string {
	p := localPath(next)
	if p == "/login" || strings.HasPrefix(p, "/login?") {
		return "/"
	}
	return p
}

// localPath returns raw when it is a path on this site ("/x?y"), else "/". "//host" and
// "/\host" are refused: browsers read both as another host.
func localPath(raw string) string {
	if raw == "" || raw[0] != '/' || strings.HasPrefix(raw, "//") || strings.HasPrefix(raw, "/\\") ||
		strings.ContainsAny(raw, "\r\n\t") {
		return "/"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return raw
}
