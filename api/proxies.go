package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// errProxyNotFound is a proxyId the org may not use, or one no longer
// configured (upstream's 400; profile browsers answer 404, see
// errBrowserProxyNotFound).
var (
	errProxyNotFound        = badRequest("proxy_not_found")
	errBrowserProxyNotFound = notFound("proxy_not_found")
)

// proxyOut is one proxy on the wire (upstream CrawlerProxy). The URL is
// answered as upstream does; key material never is, only whether the
// proxy has it.
type proxyOut struct {
	ID               string `json:"id"`
	URL              string `json:"url"`
	Label            string `json:"label"`
	Description      string `json:"description"`
	CountryCode      string `json:"country_code"`
	HasHostPublicKey bool   `json:"has_host_public_key"`
	HasPrivateKey    bool   `json:"has_private_key"`
	Shared           bool   `json:"shared"`
}

// proxiesOut is GET /crawlconfigs/crawler-proxies (upstream
// CrawlerProxies).
type proxiesOut struct {
	DefaultProxyID string     `json:"default_proxy_id"`
	Servers        []proxyOut `json:"servers"`
}

// orgProxiesIn is POST /orgs/{oid}/proxies; both fields are required.
type orgProxiesIn struct {
	AllowSharedProxies *bool     `json:"allowSharedProxies"`
	AllowedProxies     *[]string `json:"allowedProxies"`
}

func (in *orgProxiesIn) validate() error {
	var v validator
	if in.AllowSharedProxies == nil {
		v.missing("body", "allowSharedProxies")
	}
	if in.AllowedProxies == nil {
		v.missing("body", "allowedProxies")
	}
	return v.err()
}

// proxies returns the configured proxies. A proxy file made invalid by an
// edit keeps the list read last, and the error is logged.
func (s *Server) proxies() k8s.CrawlerProxies {
	list, err := s.cfg.CrawlerProxies.Proxies()
	if err != nil {
		s.log.Error("reading the crawler proxies; using the list read last", "err", err)
	}
	return list
}

// sharedProxy reports a proxy open to orgs that allow shared proxies:
// one configured as shared, or the default proxy.
func (s *Server) sharedProxy(p k8s.CrawlerProxy) bool {
	return p.Shared || p.ID == s.cfg.CrawlerProxies.DefaultID()
}

// orgMayUse reports whether org may send crawls through p.
func (s *Server) orgMayUse(org *store.Org, p k8s.CrawlerProxy) bool {
	return s.sharedProxy(p) && org.AllowSharedProxies || slices.Contains(org.AllowedProxies, p.ID)
}

// usableProxy checks that id names a configured proxy org may use
// (errProxyNotFound otherwise).
func (s *Server) usableProxy(org *store.Org, id string) error {
	p, ok := s.proxies().Lookup(id)
	if !ok || !s.orgMayUse(org, p) {
		return errProxyNotFound
	}
	return nil
}

func (s *Server) toProxyOut(p k8s.CrawlerProxy) proxyOut {
	return proxyOut{ID: p.ID, URL: p.URL, Label: p.Label, Description: p.Description, CountryCode: p.CountryCode,
		HasHostPublicKey: p.HasHostPublicKey(), HasPrivateKey: p.HasPrivateKey(), Shared: s.sharedProxy(p)}
}

// listCrawlerProxies is GET /orgs/{oid}/crawlconfigs/crawler-proxies: the
// proxies the org may use, in configuration order.
func (s *Server) listCrawlerProxies(c echo.Context) error {
	org := currentOrg(c)
	out := proxiesOut{DefaultProxyID: s.cfg.CrawlerProxies.DefaultID(), Servers: []proxyOut{}}
	for _, p := range s.proxies() {
		if s.orgMayUse(org, p) {
			out.Servers = append(out.Servers, s.toProxyOut(p))
		}
	}
	return c.JSON(http.StatusOK, out)
}

// listAllCrawlerProxies is the superuser's list of every proxy.
func (s *Server) listAllCrawlerProxies(c echo.Context) error {
	out := proxiesOut{DefaultProxyID: s.cfg.CrawlerProxies.DefaultID(), Servers: []proxyOut{}}
	for _, p := range s.proxies() {
		out.Servers = append(out.Servers, s.toProxyOut(p))
	}
	return c.JSON(http.StatusOK, out)
}

// setOrgProxies is POST /orgs/{oid}/proxies: which proxies the org may
// use. Ids are stored as given, as upstream does: one configured later
// becomes usable then.
func (s *Server) setOrgProxies(c echo.Context) error {
	var in orgProxiesIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	if err := s.store.SetOrgProxies(c.Request().Context(), currentOrg(c).ID, *in.AllowSharedProxies, *in.AllowedProxies); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

// crawlProxy is the proxy a crawl of wf goes through: its profile's when
// it has one, else its own, checked again now; without one, the default
// proxy, which every org may use. A manual run of a proxy the org may no
// longer use, or one no longer configured, is errProxyNotFound; a
// scheduled run checks only that the proxy is still configured (as
// upstream), and is skipped otherwise.
func (s *Server) crawlProxy(ctx context.Context, org *store.Org, wf *store.CrawlConfig, manual bool) (string, error) {
	id := deref1(wf.ProxyID)
	if wf.ProfileID != nil {
		p, err := s.store.GetProfile(ctx, org.ID, *wf.ProfileID)
		if err != nil {
			return "", err
		}
		id = p.ProxyID
	}
	if id == "" {
		return s.cfg.CrawlerProxies.DefaultID(), nil
	}
	p, ok := s.proxies().Lookup(id)
	if !ok || manual && !s.orgMayUse(org, p) {
		return "", errProxyNotFound
	}
	return id, nil
}
