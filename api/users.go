package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

func (s *Server) me(c echo.Context) error {
	return c.JSON(http.StatusOK, toUserOut(currentUser(c)))
}

// meWithOrgs lists the caller's orgs with their role (100 for superusers,
// who see every org).
func (s *Server) meWithOrgs(c echo.Context) error {
	u := currentUser(c)
	f := store.OrgFilter{}
	if !u.IsSuperuser {
		f.Member = &u.ID
	}
	orgs, _, err := s.store.ListOrgs(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := userWithOrgsOut{userOut: toUserOut(u), Orgs: make([]userOrgOut, len(orgs))}
	for i, o := range orgs {
		out.Orgs[i] = userOrgOut{ID: o.ID, Name: o.Name, Default: o.Default, Role: o.RoleOf(u)}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) settings(c echo.Context) error {
	return c.JSON(http.StatusOK, settingsOut{
		RegistrationEnabled:        s.cfg.RegistrationEnabled,
		JWTTokenLifetime:           int64(s.cfg.TokenLifetime.Seconds()),
		DefaultBehaviorTimeSeconds: s.cfg.DefaultBehaviorTimeSeconds,
		MaxPagesPerCrawl:           s.cfg.MaxPagesPerCrawl,
		PausedExpiryMinutes:        int64(s.cfg.PausedCrawlLimit / time.Minute),
		DefaultPageLoadTimeSeconds: s.cfg.DefaultPageLoadTimeSeconds,
	})
}
