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
// plugin enforces it; these checks refuse such URLs when they are given,
// with a 422 naming the field, for clusters that do not enforce it and so
// the user learns why. Only IP literals and localhost are judged: a name
// may resolve differently by the time the crawler fetches it, which is
// the policy's job (docs/security.md).

// internalHost adds a field error when raw is a URL whose host is an
// internal address outside the operator's allow-list. Malformed URLs are
// the other checks' business.
func (s *Server) internalHost(v *validator, raw string, loc ...any) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return
	}
	addr, ok := netpolicy.HostAddr(u.Hostname())
	if !ok || !s.cfg.AllowedInternal.Refuses(addr) {
		return
	}
	v.add(fmt.Sprintf("%s is an internal address (loopback, link-local, private, CGNAT, multicast or unspecified), which crawls may not reach", addr),
		"value_error.url.host.internal", loc...)
}

// internalSeeds refuses a crawl config whose seeds or sitemaps name
// internal addresses; loc is the config's path in the body.
func (s *Server) internalSeeds(cfg *rawConfigIn, loc ...any) error {
	var v validator
	for i, sd := range cfg.Seeds {
		sl := at(loc, "seeds", i)
		if sd.URL != nil {
			s.internalHost(&v, *sd.URL, at(sl, "url")...)
		}
		if u, ok := sd.Sitemap.url(); ok {
			s.internalHost(&v, u, at(sl, "sitemap")...)
		}
	}
	return v.err()
}

// internalBrowserURL refuses a profile browser URL at an internal address.
func (s *Server) internalBrowserURL(raw string) error {
	var v validator
	s.internalHost(&v, raw, "body", "url")
	return v.err()
}
