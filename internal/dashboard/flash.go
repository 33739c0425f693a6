package dashboard

import (
	"crypto/hmac"
	"encoding/base64"
	"net/http"
	"strings"
)

// A flash is the one-line outcome of an action, shown once on the page the action
// redirects back to. It travels in a short-lived cookie signed with the flash key, so
// that nothing but this server can put words on its pages.

type flashKind string

const (
	flashOK    flashKind = "ok"
	flashError flashKind = "error"
)

type flash struct {
	Kind    flashKind
	Message string
}

// flashMaxAge: the redirect that shows a flash follows at once.
const flashMaxAge = 60

// maxFlashBytes keeps the cookie well under browsers' 4 KiB limit.
const maxFlashBytes = 1500

func (d *Dashboard) setFlash(w http.ResponseWriter, r *http.Request, kind flashKind, msg string) {
	if len(msg) > maxFlashBytes {
		msg = truncate(msg, maxFlashBytes)
	}
	payload := base64.RawURLEncoding.EncodeToString([]byte(string(kind) + "\x00" + msg))
	http.SetCookie(w, &http.Cookie{
		Name:     flashCookie,
		Value:    payload + "." + macString(d.keys.flash, payload),
		Path:     "/",
		MaxAge:   flashMaxAge,
		HttpOnly: true,
		Secure:   secureRequest(r),
		SameSite: http.SameSiteStrictMode,
	})
}

// takeFlash returns the request's flash (nil when none or not ours) and clears it.
func (d *Dashboard) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: secureRequest(r), SameSite: http.SameSiteStrictMode})
	payload, sig, ok := strings.Cut(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(macString(d.keys.flash, payload))) {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil
	}
	kind, msg, ok := strings.Cut(string(raw), "\x00")
	if !ok || (flashKind(kind) != flashOK && flashKind(kind) != flashError) {
		return nil
	}
	return &flash{Kind: flashKind(kind), Message: msg}
}

// redirectBack ends an action: 303 to the page the form came from (its "back" field, a
// path on this site) or to fallback, with a flash.
func (d *Dashboard) redirectBack(w http.ResponseWriter, r *http.Request, fallback string, kind flashKind, msg string) {
	d.setFlash(w, r, kind, msg)
	to := fallback
	if back := r.PostForm.Get("back"); back != "" && localPath(back) == back {
		to = back
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
