package api

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/trawlerhq/trawler/netpolicy"
)

// Crawlers and profile browsers run inside the cluster and archive what
// they fetch for the user to download, so a seed of
// http://169.254.169.254/ would hand out the cloud's metadata. The
// chart's egress NetworkPolicy stops the connection where a network
// plugin enforces it; this check refuses such URLs when they are given,
// with a 422 naming the field, for clusters that do not enforce it and so
// the user learns why. Only IP literals and localhost are judged: a name
// may resolve differently by the time the crawler fetches it, which is
// the policy's job (docs/security.md).

// The same holds for the requests trawler makes itself to user-given
// URLs (webhooks, an org's own storage), which could otherwise reach the
// metadata service or a cluster Service from inside: those URLs are
// refused here when they are set, against outbound.allowed_cidrs, and
// netpolicy's guard refuses them again at connect time, whatever a name
// resolves to then.

// internalHost adds a field error when raw is a URL whose host is an
// internal address outside allowed (crawler.allowed_internal_cidrs for
// crawls, outbound.allowed_cidrs for trawler's own requests); who is
// what may not reach it, for the message. Malformed URLs are the other
// checks' business.
func (v *validator) internalHost(raw string, allowed netpolicy.AllowList, who string, loc ...any) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return
	}
	addr, ok := netpolicy.HostAddr(u.Hostname())
	if !ok || !allowed.Refuses(addr) {
		return
	}
	v.add(fmt.Sprintf("%s is an internal address (loopback, link-local, private, CGNAT, multicast or unspecified), which %s may not reach", addr, who),
		"value_error.url.host.internal", loc...)
}
