// Package authlimit slows down guessing of the API token: a client that keeps presenting
// a wrong token is refused for a while, before its token is even compared. Right tokens
// cost a client nothing, and neither do requests without one.
//
// The API and the dashboard's login share one Limiter, so a guesser cannot alternate
// between them. A client is its network address: an IPv4 address, or the /64 an IPv6
// address is in (one host is usually given a whole /64, so counting single IPv6
// addresses would give it 2^64 budgets). Behind a reverse proxy every connection comes
// from the proxy; list the proxy in TrustedProxies and the client is read from the
// X-Forwarded-For header the proxy appends to instead. Without that, a guesser behind
// the proxy locks every client out for a short while, which is the safer way to fail.
package authlimit

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
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

// Limiter counts wrong tokens per client. The zero value is not usable; use New.
type Limiter struct {
	every   time.Duration
	burst   int
	now     func() time.Time
	proxies []netip.Prefix

	mu      sync.Mutex
	clients map[string]*rate.Limiter
}

// Config configures a Limiter. Zero values mean the defaults.
type Config struct {
	// Burst wrong tokens are allowed at once, then one more per Every.
	Burst int
	Every time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// TrustedProxies are the reverse proxies in front of the server: a request that
	// comes from one of them is counted against the client its X-Forwarded-For header
	// names, not against the proxy. Only the addresses these proxies appended are
	// believed (the header is read from the right); anything to their left may be
	// written by the client itself.
	TrustedProxies []netip.Prefix
}

// New returns a Limiter configured by cfg.
func New(cfg Config) *Limiter {
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limiter{every: cfg.Every, burst: cfg.Burst, now: cfg.Now, proxies: cfg.TrustedProxies,
		clients: map[string]*rate.Limiter{}}
}

// ParsePrefixes parses a comma-separated list of addresses and CIDR prefixes
// ("10.0.0.0/8, 192.0.2.7, fd00::/8"), the form of --trusted-proxies. A single address
// stands for itself.
func ParsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if strings.Contains(part, "/") {
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR prefix (such as 10.0.0.0/8)", part)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR prefix (such as 10.0.0.0/8)", part)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Blocked reports whether the client that sent r has used up its wrong tokens, and when
// it may try again.
func (l *Limiter) Blocked(r *http.Request) (blocked bool, retryAfter time.Duration) {
	key := l.client(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.clients[key]
	if lim == nil {
		return false, 0
	}
	tokens := lim.TokensAt(l.now())
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - tokens) * float64(l.every))
}

// Refuse is Blocked for a handler about to answer r: when the client is blocked it sets
// the Retry-After header and returns the whole seconds it gives, for the message.
func (l *Limiter) Refuse(w http.ResponseWriter, r *http.Request) (retrySeconds int, refused bool) {
	blocked, retry := l.Blocked(r)
	if !blocked {
		return 0, false
	}
	retrySeconds = int(math.Ceil(retry.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(retrySeconds))
	return retrySeconds, true
}

// Failed records a wrong token from the client that sent r.
func (l *Limiter) Failed(r *http.Request) {
	key := l.client(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
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

// client names the client that sent r: the connection's peer, or, when the peer is a
// trusted proxy, the right-most X-Forwarded-For address that is not one.
func (l *Limiter) client(r *http.Request) string {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if !l.trusted(peer) {
		return key(peer)
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" {
			continue
		}
		a, ok := parseAddr(hop)
		if !ok {
			// Not an address, so not written by a proxy of ours: the client's own text.
			return "forwarded:" + hop
		}
		if !l.trusted(a) {
			return key(a)
		}
	}
	return key(peer) // no header, or every hop is a proxy of ours
}

func (l *Limiter) trusted(a netip.Addr) bool {
	for _, p := range l.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseAddr reads an address with or without a port ("203.0.113.7:51234", "[2001:db8::1]:80",
// "2001:db8::1"); a guesser's every connection comes from a new port.
func parseAddr(s string) (netip.Addr, bool) {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// key is the unit a budget belongs to: an IPv4 address, or an IPv6 address's /64.
func key(a netip.Addr) string {
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}
