package api

import (
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// loadOrg resolves {oid}, checks that the caller is a member (404 for
// non-members, so org ids do not leak) and holds the role the route needs
// (403 with upstream's detail), and stores org and role in the context.
func (s *Server) loadOrg(a access) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			raw := c.Param("oid")
			unknown := func() error { return orgNotFoundFor(a, raw) }
			oid, err := uuid.Parse(raw)
			if err != nil {
				return unknown()
			}
			org, err := s.store.GetOrg(c.Request().Context(), oid)
			if errors.Is(err, store.ErrNotFound) {
				return unknown()
			}
			if err != nil {
				return err
			}
			u := currentUser(c)
			role := org.RoleOf(u)
			switch {
			case role < store.RoleViewer:
				return unknown()
			case (a == accessOrgCrawler || a == accessOrgCrawlerHead) && role < store.RoleCrawler:
				return forbidden(detailNoCrawlPermission)
			case (a == accessOrgOwner || a == accessOrgOwnerSuperuserHead) && role < store.RoleOwner:
				return forbidden(detailNoOwnerPermission)
			case (a == accessOrgSuperuser || a == accessOrgSuperuserHead || a == accessOrgOwnerSuperuserHead) && !u.IsSuperuser:
				return forbidden(detailNotAllowed)
			}
			c.Set("org", org)
			c.Set("role", role)
			return next(c)
		}
	}
}

// orgNotFoundFor is the 404 of an org the caller may not see: upstream
// HEAD's "org_not_found" on routes added since 2023, the 2023 detail
// naming the id on the others.
func orgNotFoundFor(a access, raw string) error {
	if a == accessOrgCrawlerHead || a == accessOrgSuperuserHead || a == accessOrgOwnerSuperuserHead {
		return notFound(detailOrgNotFound)
	}
	return orgNotFound(raw)
}

// currentOrg is the org of an /api/orgs/{oid}/... route.
func currentOrg(c echo.Context) *store.Org { return c.Get("org").(*store.Org) }

// currentRole is the caller's role in currentOrg (100 for superusers).
func currentRole(c echo.Context) store.Role { return c.Get("role").(store.Role) }

// orgOutFor serializes org for a caller with role, looking up member
// names only when the caller may see them.
func (s *Server) orgOutFor(c echo.Context, o *store.Org, role store.Role) (orgOut, error) {
	var members map[uuid.UUID]store.User
	if role >= store.RoleOwner && len(o.Users) > 0 {
		ids := make([]uuid.UUID, 0, len(o.Users))
		for id := range o.Users {
			if uid, err := uuid.Parse(id); err == nil {
				ids = append(ids, uid)
			}
		}
		var err error
		if members, err = s.store.ListUsersByIDs(c.Request().Context(), ids); err != nil {
			return orgOut{}, err
		}
	}
	return toOrgOut(o, role, members), nil
}

func (s *Server) listOrgs(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	if err := q.err(); err != nil {
		return err
	}
	u := currentUser(c)
	f := store.OrgFilter{Paging: p.paging()}
	if !u.IsSuperuser {
		f.Member = &u.ID
	}
	orgs, total, err := s.store.ListOrgs(c.Request().Context(), f)
	if err != nil {
		return err
	}
	items := make([]orgOut, len(orgs))
	for i := range orgs {
		if items[i], err = s.orgOutFor(c, &orgs[i], orgs[i].RoleOf(u)); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

func (s *Server) getOrg(c echo.Context) error {
	org := currentOrg(c)
	out, err := s.orgOutFor(c, org, currentRole(c))
	if err != nil {
		return err
	}
	out.StorageQuotaReached, out.ExecMinutesQuotaReached = org.StorageQuotaReached(), org.ExecMinutesQuotaReached(s.now())
	return c.JSON(http.StatusOK, out)
}

func (s *Server) createOrg(c echo.Context) error {
	var in orgCreateIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := validateOrgName(in.Name); err != nil {
		return err
	}
	org := s.newOrg(*in.Name)
	err := s.store.CreateOrg(c.Request().Context(), org)
	if errors.Is(err, store.ErrConflict) {
		detail := "already_exists"
		return c.JSON(http.StatusOK, orgAddedOut{Added: false, Error: &detail})
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, orgAddedOut{ID: &org.ID, Added: true})
}

func (s *Server) renameOrg(c echo.Context) error {
	var in orgRenameIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := validateOrgName(in.Name); err != nil {
		return err
	}
	err := s.store.RenameOrg(c.Request().Context(), currentOrg(c).ID, *in.Name)
	if errors.Is(err, store.ErrConflict) {
		return badRequest("duplicate_org_name")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

// addOrgUser creates a verified user (an existing one is kept as is) and
// gives them the role in this org only (upstream's side effect of making
// them owner of the default org is not reproduced).
func (s *Server) addOrgUser(c echo.Context) error {
	var in addUserIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	var v validator
	email := checkEmail(&v, in.Email, "body", "email")
	if in.Password == nil {
		v.missing("body", "password")
	} else {
		v.maxLen(*in.Password, maxPasswordLen, "body", "password")
	}
	if in.Name != nil {
		v.maxLen(*in.Name, maxNameLen, "body", "name")
	}
	validateRole(&v, in.Role)
	if err := v.err(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := s.store.GetUserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		u, err = s.createUser(c, email, *in.Password, deref1(in.Name))
	}
	if err != nil {
		return err
	}
	if err := s.store.SetOrgUserRole(ctx, currentOrg(c).ID, u.ID, *in.Role); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, addedOut{Added: true})
}

func (s *Server) createUser(c echo.Context, email, password, name string) (*store.User, error) {
	hash, err := s.passwords.hash(c.Request().Context(), password)
	if err != nil {
		return nil, err
	}
	u := &store.User{ID: uuid.New(), Email: email, Name: name, HashedPassword: hash, IsActive: true, IsVerified: true}
	if err := s.store.CreateUser(c.Request().Context(), u); err != nil {
		return nil, err
	}
	return u, nil
}

// setOrgUserRole changes an existing member's role. Anyone else, known
// or not, gets the same answer, so the route tells nothing about which
// e-mails have accounts; the caller cannot change their own role, and the
// only owner cannot be demoted.
func (s *Server) setOrgUserRole(c echo.Context) error {
	var in userRoleIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	var v validator
	if in.Email == nil {
		v.missing("body", "email")
	} else {
		v.maxLen(*in.Email, maxShortString, "body", "email")
	}
	validateRole(&v, in.Role)
	if err := v.err(); err != nil {
		return err
	}
	noSuchMember := badRequest("No user found for specified e-mail")
	ctx := c.Request().Context()
	u, err := s.store.GetUserByEmail(ctx, *in.Email)
	if errors.Is(err, store.ErrNotFound) {
		return noSuchMember
	}
	if err != nil {
		return err
	}
	if u.ID == currentUser(c).ID {
		return badRequest("Can't change own role!")
	}
	err = s.store.ChangeOrgMember(ctx, currentOrg(c).ID, u.ID, in.Role)
	switch {
	case errors.Is(err, store.ErrNoSuchOrgUser):
		return noSuchMember
	case errors.Is(err, store.ErrLastOwner):
		return badRequest("Can't demote only owner of org")
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

// removeOrgUser removes a member; the only owner stays. An unknown e-mail
// and a non-member get the same 404.
func (s *Server) removeOrgUser(c echo.Context) error {
	var in removeUserIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Email == nil {
		return validationError{missingField("body", "email")}
	}
	ctx := c.Request().Context()
	u, err := s.store.GetUserByEmail(ctx, *in.Email)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("no_such_org_user")
	}
	if err != nil {
		return err
	}
	err = s.store.ChangeOrgMember(ctx, currentOrg(c).ID, u.ID, nil)
	if errors.Is(err, store.ErrLastOwner) {
		return badRequest("Can't remove only owner from org")
	}
	if err != nil {
		return err // a non-member is the store's 404 no_such_org_user
	}
	return c.JSON(http.StatusOK, removedOut{Removed: true})
}

func (s *Server) setOrgQuotas(c echo.Context) error {
	var in quotasIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	if err := s.store.UpdateOrgQuotas(c.Request().Context(), currentOrg(c).ID, toQuotasUpdate(in, s.now())); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}
