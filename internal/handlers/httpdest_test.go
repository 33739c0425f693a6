package handlers

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// hopServer is a test server that records every request it sees and, for a request
// with ?next=URL, redirects there (302).
type hopServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newHopServer(t *testing.T) *hopServer {
	t.Helper()
	s := &hopServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Clone(context.Background()))
		s.mu.Unlock()
		if next := r.URL.Query().Get("next"); next != "" {
			http.Redirect(w, r, next, http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *hopServer) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

func (s *hopServer) hostPort() string { return strings.TrimPrefix(s.URL, "http://") }

func (s *hopServer) port() string { _, p, _ := net.SplitHostPort(s.hostPort()); return p }

// via returns a URL of s that redirects to next.
func (s *hopServer) via(path, next string) string {
	return s.URL + path + "?next=" + url.QueryEscape(next)
}

func work(t *testing.T, h *httpHandler, payload map[string]any) error {
	t.Helper()
	return h.Work(context.Background(), job("http", httpPayloadJSON(t, payload), 1))
}

// Item 8: with ROTA_HTTP_ALLOW_HOSTS, a payload's Host header cannot pick another
// virtual host behind an allowed address.
func TestHTTPHostHeaderMustNameTheURLHost(t *testing.T) {
	t.Parallel()
	srv := newHopServer(t)
	h := newHTTPHandler(Config{AllowHosts: []string{srv.hostPort()}})

	for _, host := range []string{"admin.internal", "admin.internal:" + srv.port(), "127.0.0.1:1"} {
		err := work(t, h, map[string]any{"url": srv.URL, "headers": map[string]string{"Host": host}})
		if outcome(err) != "permanent" || !strings.Contains(err.Error(), "Host header") {
			t.Errorf("Host %q: %s (%v), want a permanent Host header error", host, outcome(err), err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("server saw %d requests with a smuggled Host, want 0", n)
	}
	// Naming the URL's own host, with or without its port, is fine.
	for _, host := range []string{srv.hostPort(), "127.0.0.1"} {
		if err := work(t, h, map[string]any{"url": srv.URL, "headers": map[string]string{"host": host}}); err != nil {
			t.Errorf("Host %q (the url's own): %v", host, err)
		}
	}
	// Without an allow-list there is nothing to get around: the Host header is sent.
	if err := work(t, newHTTPHandler(Config{}), map[string]any{"url": srv.URL, "headers": map[string]string{"Host": "vhost.example"}}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if got := reqs[len(reqs)-1].Host; got != "vhost.example" {
		t.Fatalf("without an allow-list the server saw Host %q, want vhost.example", got)
	}
}

// Item 8: every hop of a redirect chain is checked against the allow-list, not only the
// first one.
func TestHTTPRedirectChainCheckedHopByHop(t *testing.T) {
	t.Parallel()
	a, b, denied := newHopServer(t), newHopServer(t), newHopServer(t)
	h := newHTTPHandler(Config{AllowHosts: []string{a.hostPort(), b.hostPort()}})

	err := work(t, h, map[string]any{"url": a.via("/a", b.via("/b", denied.URL+"/secret"))})
	if outcome(err) != "permanent" || !strings.Contains(err.Error(), "not in ROTA_HTTP_ALLOW_HOSTS") {
		t.Fatalf("redirect chain to a host not allowed: %s (%v), want a permanent allow-list error", outcome(err), err)
	}
	if len(a.requests()) != 1 || len(b.requests()) != 1 || len(denied.requests()) != 0 {
		t.Fatalf("requests seen: a %d, b %d, denied %d; want 1, 1, 0",
			len(a.requests()), len(b.requests()), len(denied.requests()))
	}
}

// Item 8: a redirect to another origin carries none of the payload's headers. net/http
// alone forwards Authorization and Cookie to the same host name on another port, and a
// custom header such as X-Api-Key to any host.
func TestHTTPRedirectDropsPayloadHeaders(t *testing.T) {
	t.Parallel()
	a, b := newHopServer(t), newHopServer(t)
	h := newHTTPHandler(Config{})
	secrets := map[string]string{
		"Authorization":       "Bearer secret-token",
		"Cookie":              "session=secret",
		"Proxy-Authorization": "Basic c2VjcmV0",
		"X-Api-Key":           "secret-key",
	}
	localhostB := "http://localhost:" + b.port()
	for _, c := range []struct{ name, start string }{
		// a -> a (same origin: the headers stay) -> b on another port -> back to a.
		{"another port", a.via("/1", a.via("/2", b.via("/3", a.URL+"/4?token=x")))},
		// a -> b under another name (net/http strips Authorization and Cookie, not X-Api-Key).
		{"another name", a.via("/5", localhostB+"/6")},
	} {
		if err := work(t, h, map[string]any{"url": c.start, "headers": secrets}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	reqs := append(a.requests(), b.requests()...)
	if len(reqs) != 6 {
		t.Fatalf("servers saw %d requests, want 6", len(reqs))
	}
	for _, r := range reqs {
		sameOrigin := r.URL.Path == "/1" || r.URL.Path == "/2" || r.URL.Path == "/5"
		for k, v := range secrets {
			if got := r.Header.Get(k); sameOrigin && got != v || !sameOrigin && got != "" {
				t.Errorf("%s %s: %s = %q (payload origin: %v)", r.Host, r.URL.Path, k, got, sameOrigin)
			}
		}
		if !sameOrigin && r.Header.Get("Referer") != "" {
			t.Errorf("%s %s: Referer %q leaks the previous URL", r.Host, r.URL.Path, r.Header.Get("Referer"))
		}
		if r.Header.Get("Rota-Task-Id") == "" || r.Header.Get("User-Agent") != userAgent {
			t.Errorf("%s %s: Rota's own headers are missing: %v", r.Host, r.URL.Path, r.Header)
		}
	}
}

// Item 8: ROTA_HTTP_DENY_PRIVATE refuses loopback and private destinations, judged by
// the address dialed: an IP in the URL, a name that resolves to one, a mapped IPv6 form.
func TestHTTPDenyPrivate(t *testing.T) {
	t.Parallel()
	srv := newHopServer(t)
	port := srv.port()
	h := newHTTPHandler(Config{DenyPrivate: true, AllowHosts: []string{"127.0.0.1", "localhost", "rebind.test", "[::1]", "[::ffff:127.0.0.1]", "10.1.2.3", "169.254.169.254"}})
	// A name the allow-list accepts that "resolves" to loopback: the test's stand-in for
	// a DNS answer an attacker controls. Only the dialer sees the address.
	transport := h.client.Transport.(*http.Transport)
	dial := transport.DialContext
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, p, _ := net.SplitHostPort(addr); host == "rebind.test" {
			addr = net.JoinHostPort("127.0.0.1", p)
		}
		return dial(ctx, network, addr)
	}
	if transport.Proxy != nil {
		t.Error("deny-private still uses proxies from the environment: the guard would vet the proxy's address")
	}

	for _, u := range []string{
		srv.URL,
		"http://localhost:" + port,
		"http://rebind.test:" + port,
		"http://[::1]:" + port,
		"http://[::ffff:127.0.0.1]:" + port,
		"http://10.1.2.3:" + port,
		"http://169.254.169.254/latest/meta-data/",
	} {
		err := work(t, h, map[string]any{"url": u, "timeout_ms": 5000})
		if outcome(err) != "permanent" || !strings.Contains(err.Error(), "refused by ROTA_HTTP_DENY_PRIVATE") {
			t.Errorf("%s: %s (%v), want a permanent deny-private refusal", u, outcome(err), err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("the loopback server saw %d requests", n)
	}
}

// Item 8: a redirect's destination is dialed through the same guard. The first server
// stands for a public one (the guard lets exactly its address through); the redirect
// to another loopback address is refused.
func TestHTTPDenyPrivateOnRedirect(t *testing.T) {
	t.Parallel()
	public, internal := newHopServer(t), newHopServer(t)
	publicAddr := netip.MustParseAddrPort(public.hostPort())
	h := newHTTPHandler(Config{DenyPrivate: true})
	h.dialGuard = func(ap netip.AddrPort) error {
		if ap == publicAddr {
			return nil
		}
		return refusePrivate(ap)
	}
	err := work(t, h, map[string]any{"url": public.via("/", internal.URL+"/admin")})
	if outcome(err) != "permanent" || !strings.Contains(err.Error(), "127.0.0.1 is a loopback address") {
		t.Fatalf("redirect to loopback: %s (%v), want a permanent deny-private refusal", outcome(err), err)
	}
	if len(public.requests()) != 1 || len(internal.requests()) != 0 {
		t.Fatalf("requests seen: public %d, internal %d; want 1, 0", len(public.requests()), len(internal.requests()))
	}
}

func TestPrivateReason(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":              "loopback",
		"127.9.9.9":              "loopback",
		"::1":                    "loopback",
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:10.0.0.1":        "private",
		"64:ff9b::a00:1":         "private", // NAT64 of 10.0.0.1
		"10.1.2.3":               "private",
		"172.16.0.1":             "private",
		"172.31.255.255":         "private",
		"192.168.1.1":            "private",
		"fc00::1":                "private",
		"fd12:3456::1":           "private",
		"169.254.169.254":        "cloud metadata",
		"fd00:ec2::254":          "cloud metadata",
		"::ffff:169.254.169.254": "cloud metadata",
		"169.254.1.1":            "link-local",
		"fe80::1":                "link-local",
		"fe80::1%eth0":           "link-local",
		"0.0.0.0":                "unspecified",
		"0.1.2.3":                "unspecified",
		"::":                     "unspecified",
		"100.64.0.1":             "carrier-grade NAT",
		"100.127.255.255":        "carrier-grade NAT",
		"224.0.0.1":              "multicast",
		"ff02::1":                "multicast",
		"255.255.255.255":        "reserved",
		"8.8.8.8":                "",
		"1.1.1.1":                "",
		"100.128.0.1":            "",
		"172.32.0.1":             "",
		"2001:4860:4860::8888":   "",
		"::ffff:8.8.8.8":         "",
		"64:ff9b::808:808":       "",
	} {
		if got := privateReason(netip.MustParseAddr(addr)); got != want {
			t.Errorf("privateReason(%s) = %q, want %q", addr, got, want)
		}
	}
}

// Item 8: what a failed response puts in last_error is bounded, valid UTF-8 even when
// the cut falls inside a character, and a huge status line is cut too.
func TestHTTPErrorBodyBounded(t *testing.T) {
	t.Parallel()
	body := "x" + strings.Repeat("é", 5000) // 2 bytes each: byte 512 is inside one
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	err := work(t, newHTTPHandler(Config{}), map[string]any{"url": srv.URL})
	if outcome(err) != "retry" {
		t.Fatalf("500: %s (%v)", outcome(err), err)
	}
	msg := err.Error()
	if !utf8.ValidString(msg) || !strings.HasSuffix(msg, "é…") || len(msg) > 200+errorBodyLength {
		t.Fatalf("error (%d bytes) is not a bounded, valid UTF-8 cut: %q", len(msg), msg)
	}

	// A raw server answering with a 20 kB reason phrase.
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for line, err := br.ReadString('\n'); err == nil && line != "\r\n"; line, err = br.ReadString('\n') {
		}
		_, _ = c.Write([]byte("HTTP/1.1 503 " + strings.Repeat("ü", 10000) + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
	}()
	err = work(t, newHTTPHandler(Config{}), map[string]any{"url": "http://" + ln.Addr().String()})
	if msg := err.Error(); outcome(err) != "retry" || !strings.Contains(msg, "503") || !utf8.ValidString(msg) || len(msg) > 300 {
		t.Fatalf("huge status line: %s, error (%d bytes) %q", outcome(err), len(msg), msg)
	}
}

func TestHostHeaderMatchesAndOrigin(t *testing.T) {
	for _, c := range []struct {
		url, host string
		want      bool
	}{
		{"http://api.example.com/x", "api.example.com", true},
		{"http://api.example.com/x", "API.example.com:80", true},
		{"https://api.example.com/x", "api.example.com:443", true},
		{"https://api.example.com/x", "api.example.com:80", false},
		{"http://api.example.com:8080/x", "api.example.com", true},
		{"http://api.example.com:8080/x", "api.example.com:8081", false},
		{"http://[::1]:8080/", "[::1]:8080", true},
		{"http://[::1]:8080/", "[::1]", true},
		{"http://[::1]:8080/", "[::2]", false},
		{"http://api.example.com/", "admin.example.com", false},
		{"http://api.example.com/", "api.example.com.", false},
	} {
		u, _ := url.Parse(c.url)
		if got := hostHeaderMatches(c.host, u); got != c.want {
			t.Errorf("hostHeaderMatches(%q, %s) = %v, want %v", c.host, c.url, got, c.want)
		}
	}
	same := func(a, b string) bool {
		ua, _ := url.Parse(a)
		ub, _ := url.Parse(b)
		return origin(ua) == origin(ub)
	}
	if !same("http://A.example.com/x", "http://a.example.com:80/y") || same("http://a.example.com/", "https://a.example.com/") ||
		same("http://a.example.com/", "http://b.a.example.com/") || same("http://a:1/", "http://a:2/") {
		t.Error("origin: want scheme, host (any case) and port (default filled in) to decide")
	}
}
