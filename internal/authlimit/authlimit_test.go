package authlimit

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestWrongTokensBlockTheClientForAWhile(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Config{Burst: 3, Every: 10 * time.Second, Now: func() time.Time { return now }})
	guesser, other := request("198.51.100.9:4000"), request("198.51.100.10:4000")

	for i := range 3 {
		if blocked, _ := l.Blocked(guesser); blocked {
			t.Fatalf("blocked after %d wrong tokens, want 3 allowed", i)
		}
		l.Failed(request(fmt.Sprintf("198.51.100.9:%d", 5000+i))) // a new port each time: the same client
	}
	blocked, retry := l.Blocked(guesser)
	if !blocked || retry != 10*time.Second {
		t.Fatalf("after 3 wrong tokens: blocked %v, retry after %s; want true and 10s", blocked, retry)
	}
	if blocked, _ := l.Blocked(other); blocked {
		t.Fatal("another client is blocked too")
	}

	now = now.Add(4 * time.Second)
	if blocked, retry := l.Blocked(guesser); !blocked || retry != 6*time.Second {
		t.Fatalf("4s later: blocked %v, retry after %s; want true and 6s", blocked, retry)
	}
	now = now.Add(6 * time.Second)
	if blocked, _ := l.Blocked(guesser); blocked {
		t.Fatal("still blocked once a wrong token's budget came back")
	}
	l.Failed(guesser)
	if blocked, _ := l.Blocked(guesser); !blocked {
		t.Fatal("one refilled token, used: want blocked again")
	}
}

func TestForgetsClientsWhoseBudgetIsWhole(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Config{Burst: 2, Every: time.Second, Now: func() time.Time { return now }})
	for i := range maxIdleClients {
		l.Failed(request(fmt.Sprintf("10.0.%d.%d:1", i/256, i%256)))
	}
	now = now.Add(time.Minute) // every budget is whole again
	l.Failed(request("192.0.2.1:1"))
	if n := len(l.clients); n != 1 {
		t.Fatalf("%d clients remembered, want only the new one", n)
	}
}

// TestClientIdentity pins who a request is counted against: the peer, its IPv6 /64, or,
// behind a trusted proxy, the right-most forwarded address that is not a trusted proxy.
func TestClientIdentity(t *testing.T) {
	proxies, err := ParsePrefixes("10.0.0.0/8, 192.0.2.7 ,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	l := New(Config{TrustedProxies: proxies})
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"a direct client", "203.0.113.5:4000", nil, "203.0.113.5"},
		{"a direct client cannot choose its identity", "203.0.113.5:4000", []string{"198.51.100.1"}, "203.0.113.5"},
		{"an IPv4-mapped IPv6 peer", "[::ffff:203.0.113.5]:4000", nil, "203.0.113.5"},
		{"IPv6 clients are counted per /64", "[2001:db8:1:2:aaaa::1]:4000", nil, "2001:db8:1:2::/64"},
		{"behind a trusted proxy", "192.0.2.7:4000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"a chain of trusted proxies", "10.1.2.3:4000", []string{"203.0.113.5, 10.9.9.9", "192.0.2.7"}, "203.0.113.5"},
		{"spoofed hops left of the real client are ignored", "192.0.2.7:4000", []string{"198.51.100.1, 203.0.113.5"}, "203.0.113.5"},
		{"a forwarded address with a port", "192.0.2.7:4000", []string{"[2001:db8::9]:5555"}, "2001:db8::/64"},
		{"a trusted IPv6 proxy", "[fd00::1]:4000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"a trusted proxy without the header", "192.0.2.7:4000", nil, "192.0.2.7"},
		{"only trusted hops", "192.0.2.7:4000", []string{"10.0.0.1"}, "192.0.2.7"},
		{"a hop that is no address", "192.0.2.7:4000", []string{"unknown"}, "forwarded:unknown"},
		{"an untrusted peer's header is ignored", "192.0.2.8:4000", []string{"203.0.113.5"}, "192.0.2.8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := l.client(request(tc.remote, tc.xff...)); got != tc.want {
				t.Fatalf("client %q, want %q", got, tc.want)
			}
		})
	}
}

// TestClientsBehindAProxyAreCountedApart: a guesser behind a trusted proxy blocks only
// itself, not everyone else who comes through the same proxy.
func TestClientsBehindAProxyAreCountedApart(t *testing.T) {
	proxies, err := ParsePrefixes("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	l := New(Config{Burst: 2, Every: time.Hour, TrustedProxies: proxies})
	guesser := request("127.0.0.1:4000", "203.0.113.5")
	for range 2 {
		l.Failed(guesser)
	}
	if blocked, _ := l.Blocked(guesser); !blocked {
		t.Fatal("the guesser is not blocked")
	}
	if blocked, _ := l.Blocked(request("127.0.0.1:4001", "203.0.113.6")); blocked {
		t.Fatal("another client behind the same proxy is blocked too")
	}
	// The guesser cannot escape by writing its own X-Forwarded-For: the proxy appends
	// the real address on the right.
	if blocked, _ := l.Blocked(request("127.0.0.1:4002", "198.51.100.1, 203.0.113.5")); !blocked {
		t.Fatal("a spoofed X-Forwarded-For hop unblocked the guesser")
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes(" 10.1.2.3/8, 192.0.2.7, ::ffff:192.0.2.8, 2001:db8::/32,, ")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "192.0.2.8/32", "2001:db8::/32"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, err := ParsePrefixes(""); err != nil || len(got) != 0 {
		t.Fatalf("empty list: %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.internal", "10.0.0.1:80", "10.0.0.0/8 192.0.2.7"} {
		if _, err := ParsePrefixes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// request returns a request whose connection comes from remoteAddr, with one
// X-Forwarded-For header line per forwardedFor.
func request(remoteAddr string, forwardedFor ...string) *http.Request {
	r := httptest.NewRequest("GET", "/api/stats", nil)
	r.RemoteAddr = remoteAddr
	for _, v := range forwardedFor {
		r.Header.Add("X-Forwarded-For", v)
	}
	return r
}
