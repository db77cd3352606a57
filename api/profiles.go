package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// Browser profiles (upstream-api-more.md §1): the API starts a profile
// browser (a ProfileJob the operator turns into a pod), relays the user's
// pings and navigations to it, and on commit asks the pod to upload its
// profile to storage, then records the profile.

// browserIDPattern is the shape of the ids this API hands out
// ("prf-" and 10 hex digits); anything else names no browser.
var browserIDPattern = regexp.MustCompile(`^prf-[0-9a-f]{10}$`)

// browserScale is the VNC viewer's scale upstream's frontend is given.
const browserScale = 0.75

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// orgBrowser loads profile browser id if it belongs to the current org
// (any of its crawlers may drive it, as upstream).
func (s *Server) orgBrowser(c echo.Context, id string) (*trawlerv1.ProfileJob, error) {
	if !browserIDPattern.MatchString(id) {
		return nil, notFound("no_such_browser")
	}
	pj, err := s.browsers.GetProfileBrowser(c.Request().Context(), id)
	if errors.Is(err, k8s.ErrProfileJobNotFound) {
		return nil, notFound("no_such_browser")
	}
	if err != nil {
		return nil, err
	}
	if pj.Labels[k8s.LabelOrg] != currentOrg(c).ID.String() {
		return nil, notFound("no_such_browser")
	}
	return pj, nil
}

func (s *Server) browserParam(c echo.Context) (*trawlerv1.ProfileJob, error) {
	return s.orgBrowser(c, c.Param("browserid"))
}

// createBrowser starts a profile browser at the given URL, optionally
// from an existing profile, and answers before its pod is up.
func (s *Server) createBrowser(c echo.Context) error {
	var in browserIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(s.cfg.AllowedInternal); err != nil {
		return err
	}
	// The channel is checked as upstream does; the browser itself runs
	// the default channel's image (docs/compatibility.md).
	if in.CrawlerChannel.given() {
		if _, err := s.crawlerChannel(in.CrawlerChannel.Value); err != nil {
			return err
		}
	}
	ctx, org, user := c.Request().Context(), currentOrg(c), currentUser(c)
	// Unlike a workflow's, a browser's proxy the org may not use is a
	// 404, as upstream; without one the browser takes the default proxy,
	// and the profile records none.
	proxyID := s.cfg.CrawlerProxies.DefaultID()
	if id := in.ProxyID.Value; in.ProxyID.given() && id != "" {
		if err := s.usableProxy(org, id); err != nil {
			return errBrowserProxyNotFound
		}
		proxyID = id
	}
	storageName, storagePath := s.orgStorage(org)
	spec := trawlerv1.ProfileJobSpec{ID: "prf-" + randomHex(5), UserID: user.ID.String(), OID: org.ID.String(),
		StorageName: storageName, StoragePath: storagePath + profilesFolder, StartURL: *in.URL,
		VNCPassword: randomHex(16), ProxyID: proxyID}
	req := k8s.ProfileRequest{Spec: spec}
	if in.ProxyID.given() {
		req.ProxyID = in.ProxyID.Value
	}
	if in.ProfileID != nil {
		base, err := s.store.GetProfile(ctx, org.ID, uuid.MustParse(*in.ProfileID))
		if errors.Is(err, store.ErrNotFound) {
			return badRequest("invalid_base_profile")
		}
		if err != nil {
			return err
		}
		req.Spec.ProfileFilename, req.BaseProfileID = base.Resource.Filename, base.ID.String()
	}
	if err := s.browsers.LaunchProfileBrowser(ctx, req); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, browserOut{BrowserID: spec.ID})
}

// pingBrowser keeps the browser alive for another while and reports the
// origins it has visited.
func (s *Server) pingBrowser(c echo.Context) error {
	pj, err := s.browserParam(c)
	if err != nil {
		return err
	}
	s.extendBrowser(c, pj.Spec.ID)
	origins, err := s.browserPods.ping(c.Request().Context(), pj.Spec.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, browserPingOut{Success: true, Origins: nonNil(origins)})
}

// extendBrowser pushes the browser's expiry back; a failure only means it
// expires sooner, as upstream, so it is logged.
func (s *Server) extendBrowser(c echo.Context, id string) {
	if err := s.browsers.PingProfileBrowser(c.Request().Context(), id); err != nil {
		s.log.Warn("extending profile browser", "browser", id, "err", err)
	}
}

func (s *Server) navigateBrowser(c echo.Context) error {
	pj, err := s.browserParam(c)
	if err != nil {
		return err
	}
	var in urlIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(s.cfg.AllowedInternal); err != nil {
		return err
	}
	if err := s.browserPods.navigate(c.Request().Context(), pj.Spec.ID, *in.URL); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, successOut{Success: true})
}

// getBrowser is what the frontend polls until the browser's VNC session
// can be opened. While the pod is not up yet the browser's life is
// extended too, so a slow start does not let it expire (upstream only
// counted pings).
func (s *Server) getBrowser(c echo.Context) error {
	pj, err := s.browserParam(c)
	if err != nil {
		return err
	}
	id := pj.Spec.ID
	password, err := s.browserPods.vncPassword(c.Request().Context(), id)
	if err != nil {
		s.extendBrowser(c, id)
		return err
	}
	if password == "" {
		return badRequest("browser_not_available")
	}
	oid := currentOrg(c).ID.String()
	token := bearerToken(c.Request())
	path := "browser/" + id + "/ws?oid=" + oid + "&auth_bearer=" + token
	// Form-encoded in upstream's key order (url.Values would sort them).
	query := strings.Join([]string{"path=" + url.QueryEscape(path), "password=" + url.QueryEscape(password),
		"oid=" + url.QueryEscape(oid), "auth_bearer=" + url.QueryEscape(token), "scale=0.75"}, "&")
	scheme := c.Request().Header.Get("X-Forwarded-Proto")
	if scheme == "" {
		scheme = "http"
	}
	host := c.Request().Host
	if host == "" {
		host = "localhost"
	}
	return c.JSON(http.StatusOK, browserAccessOut{Path: path, Password: password, OID: currentOrg(c).ID,
		AuthBearer: token, Scale: browserScale, URL: scheme + "://" + host + "/browser/" + id + "/?" + query})
}

// browserAccess lets nginx auth_request check that the caller may use
// the browser's VNC session.
func (s *Server) browserAccess(c echo.Context) error {
	if _, err := s.browserParam(c); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty{})
}

func (s *Server) deleteBrowser(c echo.Context) error {
	pj, err := s.browserParam(c)
	if err != nil {
		return err
	}
	if err := s.browsers.DeleteProfileBrowser(c.Request().Context(), pj.Spec.ID); err != nil {
		return &apiError{status: http.StatusNotFound, detail: "browser_not_found", cause: err}
	}
	return c.JSON(http.StatusOK, successOut{Success: true})
}
