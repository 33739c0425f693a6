// Package browserguard keeps web pages on other sites from using a visitor's browser
// against Rota's HTTP server. The API and the dashboard apply the same two rules:
//
//   - Cross-origin: net/http's CrossOriginProtection refuses a browser's cross-site
//     request with an unsafe method (POST, PATCH, DELETE): Sec-Fetch-Site, or Origin
//     against Host. Clients that are not browsers (the CLI, workers, curl) send neither
//     header and pass.
//   - Host, only when the server has no API token: a page that rebinds its own DNS name
//     to the server's address (DNS rebinding) is same-origin to the browser, so the first
//     rule lets it through, but its requests carry its own name in Host. Without a token
//     nothing else would stop it, so the server then answers only requests addressed to
//     an IP address or localhost (any port). With a token the rule is off: the page
//     cannot learn the token, and the dashboard's cookie belongs to the real name.
package browserguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ErrCrossOrigin is Check's answer to a cross-origin browser request with an unsafe method.
var ErrCrossOrigin = errors.New("cross-origin request refused")

// HostError is Check's answer to a request addressed to a DNS name while the server has
// no token. Its message tells the operator what to do.
type HostError struct {
	Host string
}

func (e *HostError) Error() string {
	return fmt.Sprintf("host %q refused: without an API token the server only answers requests addressed to an IP address or localhost "+
		"(a guard against DNS rebinding); set ROTA_API_TOKEN, or reach the server by IP address or localhost", e.Host)
}

// crossOrigin has no trusted origins or bypasses; it keeps no per-request state.
var crossOrigin = http.NewCrossOriginProtection()

// Check applies both rules to r; hasToken says whether the server has an API token.
// It returns nil, ErrCrossOrigin or a *HostError.
func Check(r *http.Request, hasToken bool) error {
	if !hasToken && !addressHost(r.Host) {
		return &HostError{Host: r.Host}
	}
	if crossOrigin.Check(r) != nil {
		return ErrCrossOrigin
	}
	return nil
}

// addressHost reports whether a Host header names an IP address or localhost, with or
// without a port. An empty Host passes: browsers always send one.
func addressHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}
