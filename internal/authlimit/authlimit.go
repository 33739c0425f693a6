// Package authlimit slows down guessing of the API token: a client (by network address)
// that keeps presenting a wrong token is refused for a while, before its token is even
// compared. Right tokens cost a client nothing, and neither do requests without one.
//
// The API and the dashboard's login share one Limiter, so a guesser cannot alternate
// between them. Addresses are the connection's (http.Request.RemoteAddr): behind a
// proxy every client shares the proxy's, and a guesser there locks everyone out of
// logging in for a short while, which is the safer way to fail.
package authlimit

import (
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of New: ten wrong tokens at once, then one more per six seconds.
const (
	DefaultBurst = 10
	DefaultEvery = 6 * time.Second
	// maxIdleClients bounds the memory of a Limiter: past it, the clients whose budget is
	// whole again (they carry no information) are dropped.
	maxIdleClients = 4096
)

// Limiter counts wrong tokens per client address. The zero value is not usable; use New.
type Limiter struct {
	every time.Duration
	burst int
	now   func() time.Time

	mu      sync.Mutex
	clients map[string]*rate.Limiter
}

// New returns a Limiter that allows burst wrong tokens per client, refilled at one per
// every. Zero values mean the defaults; now is the clock (nil: time.Now).
func New(burst int, every time.Duration, now func() time.Time) *Limiter {
	if burst <= 0 {
		burst = DefaultBurst
	}
	if every <= 0 {
		every = DefaultEvery
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{every: every, burst: burst, now: now, clients: map[string]*rate.Limiter{}}
}

// Blocked reports whether the client at remoteAddr has used up its wrong tokens, and
// when it may try again.
func (l *Limiter) Blocked(remoteAddr string) (blocked bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.clients[client(remoteAddr)]
	if lim == nil {
		return false, 0
	}
	tokens := lim.TokensAt(l.now())
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - tokens) * float64(l.every))
}

// Failed records a wrong token from the client at remoteAddr.
func (l *Limiter) Failed(remoteAddr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	key := client(remoteAddr)
	lim := l.clients[key]
	if lim == nil {
		if len(l.clients) >= maxIdleClients {
			l.forgetWhole(now)
		}
		lim = rate.NewLimiter(rate.Every(l.every), l.burst)
		l.clients[key] = lim
	}
	lim.AllowN(now, 1)
}

// forgetWhole drops the clients whose budget has refilled.
func (l *Limiter) forgetWhole(now time.Time) {
	for k, lim := range l.clients {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.clients, k)
		}
	}
}

// client is the host part of an address ("203.0.113.7:51234" -> "203.0.113.7"): a
// guesser's every connection comes from a new port.
func client(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}
