package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// orgReadOnlyIn is POST /orgs/{oid}/read-only (upstream's): readOnly is
// required; the reason is kept only while the org is read-only.
type orgReadOnlyIn struct {
	ReadOnly       *bool   `json:"readOnly"`
	ReadOnlyReason *string `json:"readOnlyReason"`
}

func (in *orgReadOnlyIn) validate() error {
	var v validator
	if in.ReadOnly == nil {
		v.missing("body", "readOnly")
	}
	return v.err()
}

// setOrgReadOnly sets the org read-only (no crawl starts, no seed file,
// running crawls pause within an accounting tick) or writable again. A
// superuser's: it is how an operator stops an org's use without deleting
// it.
func (s *Server) setOrgReadOnly(c echo.Context) error {
	var in orgReadOnlyIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	if err := s.store.SetOrgReadOnly(c.Request().Context(), currentOrg(c).ID, *in.ReadOnly, deref1(in.ReadOnlyReason)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

// nonEmpty is s, or nil (JSON null) when it is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
