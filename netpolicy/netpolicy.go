// Package netpolicy tells internal network addresses from public ones, for
// every place trawler checks where a user-given URL leads: crawl seeds,
// profile-browser URLs, and the requests trawler itself makes to webhooks
// and org storages, which it guards at connect time (Transport). An
// address is internal when it belongs to this host, this network or the
// cluster rather than to the public web; an operator's allow-list lets
// chosen internal ranges through.
package netpolicy

import (
	"fmt"
	"net/netip"
	"strings"
)

// internalRanges are the ranges netip's predicates do not name.
var internalRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network": Linux connects 0.x to the host itself
	netip.MustParsePrefix("100.64.0.0/10"), // CGNAT, also used for cluster pod and Service ranges
}

// Internal reports whether ip is loopback, link-local (cloud metadata
// lives at 169.254.169.254), private (10/8, 172.16/12, 192.168/16,
// fc00::/7), CGNAT, unspecified or "this network", or multicast. An
// IPv4-mapped IPv6 address is judged as the IPv4 address it carries,
// since that is where a connection to it goes.
func Internal(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsUnspecified() || ip.IsMulticast() {
		return true
	}
	for _, p := range internalRanges {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// AllowList is the operator's list of internal ranges that user-given
// URLs may reach on purpose (an intranet site to crawl, a webhook
// receiver inside the network, say).
type AllowList []netip.Prefix

// ParseAllowList reads comma-separated CIDR ranges or single addresses;
// an empty list allows nothing.
func ParseAllowList(list string) (AllowList, error) {
	var out AllowList
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			// An IPv4-mapped range is the IPv4 range it carries, as Refuses
			// judges addresses.
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an IP address nor a CIDR range: %w", item, err)
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
	}
	return out, nil
}

// Refuses reports whether ip is internal and outside the allow-list.
func (a AllowList) Refuses(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !Internal(ip) {
		return false
	}
	for _, p := range a {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
