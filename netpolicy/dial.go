package netpolicy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrInternalAddress is why a guarded connection was refused: the address
// it was about to reach is internal and outside the allow-list.
var ErrInternalAddress = errors.New("internal address refused")

// Control is a net.Dialer Control function that refuses to connect to an
// address the allow-list refuses. The dialer calls it with the resolved
// address of each attempt, just before connecting, so a name that
// resolves (or re-resolves, as in DNS rebinding) to an internal address
// is refused as surely as a literal one.
func (a AllowList) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Not an IP connection (a Unix socket, say): nothing to judge, but
		// nothing a user-given URL should lead to either.
		return fmt.Errorf("%w: %q is not an IP address", ErrInternalAddress, address)
	}
	if a.Refuses(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrInternalAddress, ap.Addr().Unmap())
	}
	return nil
}

// Transport returns an HTTP transport for requests to user-given URLs
// (webhooks, an org's own storage): its dialer refuses internal addresses
// outside the allow-list at connect time, redirects included. It uses no
// proxy, since a proxy would connect to the target on trawler's behalf,
// out of the guard's sight.
func (a AllowList) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: a.Control}
	t.DialContext = d.DialContext
	return t
}
