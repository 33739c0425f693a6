package handlers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// Where the http kind may send a request, and what follows a redirect. Three checks:
//   - the allow-list (ROTA_HTTP_ALLOW_HOSTS) on the URL of every hop (allowList, in http.go);
//   - with the allow-list set, a payload Host header must name the URL's own host, or it
//     would reach another virtual host behind an allowed address (hostHeaderMatches);
//   - with ROTA_HTTP_DENY_PRIVATE, the address actually dialed, after DNS, for every
//     connection (denyPrivateControl), so neither a name resolving to an internal address
//     nor a redirect to one gets through.
// And a redirect that leaves the payload's origin carries none of the payload's headers.

var errDestinationRefused = errors.New("refused by ROTA_HTTP_DENY_PRIVATE")

// Address ranges refused with ROTA_HTTP_DENY_PRIVATE beyond what netip classifies.
var (
	sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598, carrier-grade NAT
	thisNetwork        = netip.MustParsePrefix("0.0.0.0/8")     // RFC 1122 "this network"
	reservedV4         = netip.MustParsePrefix("240.0.0.0/4")   // RFC 1112 reserved, and the broadcast address
	nat64WellKnown     = netip.MustParsePrefix("64:ff9b::/96")  // RFC 6052: the IPv4 address is in the last 4 bytes
	metadataAddresses  = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, ...
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	}
)

// privateReason says why ROTA_HTTP_DENY_PRIVATE refuses addr ("loopback", ...), or ""
// when addr is a public address. An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is
// judged as the IPv4 address it carries, and so is one in the NAT64 prefix.
func privateReason(addr netip.Addr) string {
	addr = addr.Unmap()
	switch {
	case addr.IsUnspecified(), thisNetwork.Contains(addr):
		return "unspecified"
	case addr.IsLoopback():
		return "loopback"
	case isMetadataAddress(addr):
		return "cloud metadata"
	case addr.IsLinkLocalUnicast():
		return "link-local"
	case addr.IsPrivate():
		return "private"
	case sharedAddressSpace.Contains(addr):
		return "carrier-grade NAT"
	case addr.IsMulticast():
		return "multicast"
	case reservedV4.Contains(addr):
		return "reserved"
	case nat64WellKnown.Contains(addr):
		b := addr.As16()
		return privateReason(netip.AddrFrom4([4]byte(b[12:])))
	}
	return ""
}

func isMetadataAddress(addr netip.Addr) bool {
	for _, m := range metadataAddresses {
		if addr == m {
			return true
		}
	}
	return false
}

// refusePrivate is the dial guard of ROTA_HTTP_DENY_PRIVATE.
func refusePrivate(ap netip.AddrPort) error {
	if reason := privateReason(ap.Addr()); reason != "" {
		return fmt.Errorf("%s is a %s address (%w)", ap.Addr(), reason, errDestinationRefused)
	}
	return nil
}

// dialControl returns a net.Dialer.ControlContext that runs guard on the address about
// to be connected: the resolved IP, not the name in the URL, so a DNS answer that changes
// between a check and the connection (DNS rebinding) cannot get past it.
func dialControl(guard func(netip.AddrPort) error) func(context.Context, string, string, syscall.RawConn) error {
	return func(_ context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("cannot read the dialed address %q (%w)", address, errDestinationRefused)
		}
		return guard(ap)
	}
}

// hostHeaderMatches reports whether a payload's Host header v names u's own host (the
// port may be left out).
func hostHeaderMatches(v string, u *url.URL) bool {
	host, port, err := net.SplitHostPort(v)
	if err != nil { // no port
		host, port = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]"), ""
	}
	return strings.EqualFold(host, u.Hostname()) && (port == "" || port == effectivePort(u))
}

// origin is u's scheme, host and port, the unit to which a payload's headers belong.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), effectivePort(u))
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// leftOrigin reports whether the redirect chain (via, then req) has been to another
// origin than the first request's, at this hop or an earlier one.
func leftOrigin(req *http.Request, via []*http.Request) bool {
	first := origin(via[0].URL)
	if origin(req.URL) != first {
		return true
	}
	for _, r := range via[1:] {
		if origin(r.URL) != first {
			return true
		}
	}
	return false
}

// rotaHeaders are the headers a redirect that left the payload's origin keeps: the ones
// Rota sets itself. net/http copies the first request's headers to every hop and strips
// only Authorization, Cookie and their kind, and only when the host name changes (not
// for another port, nor for a subdomain); a payload's X-Api-Key would follow anywhere.
var rotaHeaders = []string{"Content-Type", "Rota-Task-Id", "Rota-Attempt"}

// stripPayloadHeaders leaves only rotaHeaders (and Rota's User-Agent) on req. Referer
// goes too: it would show the previous URL, whose query may hold a secret.
func stripPayloadHeaders(req *http.Request) {
	kept := http.Header{}
	for _, k := range rotaHeaders {
		if v := req.Header.Values(k); len(v) > 0 {
			kept[k] = v
		}
	}
	kept.Set("User-Agent", userAgent)
	req.Header = kept
}
