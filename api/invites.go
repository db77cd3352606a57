package api

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// inviteIn is POST /api/orgs/{oid}/invite.
type inviteIn struct {
	Email *string     `json:"email"`
	Role  *store.Role `json:"role"`
}

// invitedOut answers an invite: "new_user" or "existing_user".
type invitedOut struct {
	Invited string `json:"invited"`
}

// inviteOut is a pending invite in the lists.
type inviteOut struct {
	ID           uuid.UUID  `json:"id"`
	Created      string     `json:"created"`
	InviterEmail string     `json:"inviterEmail"`
	OID          uuid.UUID  `json:"oid"`
	Role         store.Role `json:"role"`
	Email        *string    `json:"email"`
}

func toInviteOut(inv *store.Invite) inviteOut {
	out := inviteOut{ID: inv.ID, Created: fmtTimeFrac(inv.Created), InviterEmail: inv.InviterEmail, OID: inv.OID, Role: inv.Role}
	if inv.Email != "" {
		out.Email = &inv.Email
	}
	return out
}

// inviteInfoOut is what an invitee sees of an invite: as upstream, null
// and default fields are left out (role when it is viewer, 10).
type inviteInfoOut struct {
	ID           uuid.UUID   `json:"id"`
	Created      string      `json:"created"`
	InviterEmail string      `json:"inviterEmail"`
	OID          uuid.UUID   `json:"oid"`
	Role         *store.Role `json:"role,omitempty"`
	Email        string      `json:"email,omitempty"`
	InviterName  string      `json:"inviterName,omitempty"`
	OrgName      string      `json:"orgName,omitempty"`
}

// removedCountOut answers the deletion of invites.
type removedCountOut struct {
	Removed bool  `json:"removed"`
	Count   int64 `json:"count"`
}

// fmtTimeFrac formats the sub-second timestamps of invites and webhook
// notifications as upstream shows them (microseconds when not whole).
func fmtTimeFrac(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond() == 0 {
		return t.Format(timeLayout)
	}
	return t.Format(timeLayout + ".000000")
}

// inviteCutoff is the creation time before which invites have expired.
func (s *Server) inviteCutoff() time.Time { return s.clock.Now().Add(-s.cfg.InviteLifetime) }

// decodedEmail undoes URL-encoding of an e-mail, as upstream does for
// invite addresses (user%2Bx%40example.com is user+x@example.com).
func decodedEmail(s string) string {
	if d, err := url.PathUnescape(s); err == nil {
		return d
	}
	return s
}

var errInvalidInvite = badRequest("Invalid Invite Code")

// invite invites someone to the org: a person without an account gets an
// invite to register, an existing user one to accept while logged in.
// The invite is stored before the e-mail is sent (in the background).
func (s *Server) invite(c echo.Context) error {
	var in inviteIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	var v validator
	var email string
	if in.Email == nil {
		v.missing("body", "email")
	} else {
		email = decodedEmail(*in.Email) // stored as typed, as upstream
		checkEmailValue(&v, email, "body", "email")
	}
	validateRole(&v, in.Role)
	if err := v.err(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	caller, org := currentUser(c), currentOrg(c)
	inv := &store.Invite{ID: uuid.New(), Created: s.clock.Now().UTC().Truncate(time.Millisecond),
		InviterEmail: caller.Email, OID: org.ID, Role: *in.Role}
	invitee, err := s.store.GetUserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		inv.Email = email
		if err := s.store.CreateInvite(ctx, inv, s.inviteCutoff()); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return forbidden("This user has already been invited")
			}
			return err
		}
		s.mailNewUserInvite(c, inv, org)
		return c.JSON(http.StatusOK, invitedOut{Invited: "new_user"})
	}
	if err != nil {
		return err
	}
	if invitee.ID == caller.ID {
		return badRequest("Can't invite ourselves!")
	}
	if _, member := org.Users[invitee.ID.String()]; member {
		return badRequest("User already a member of this organization.")
	}
	if err := s.store.AddUserInvite(ctx, invitee.ID, *inv); err != nil {
		return err
	}
	s.mailExistingUserInvite(c, inv, org, invitee, caller.Name)
	return c.JSON(http.StatusOK, invitedOut{Invited: "existing_user"})
}

// listOrgInvites lists the org's live invites of people without an
// account (existing users' invites are on their accounts).
func (s *Server) listOrgInvites(c echo.Context) error {
	oid := currentOrg(c).ID
	return s.listInvites(c, &oid)
}

// listAllInvites is the superuser's list over every org.
func (s *Server) listAllInvites(c echo.Context) error { return s.listInvites(c, nil) }

func (s *Server) listInvites(c echo.Context, oid *uuid.UUID) error {
	q := newQuery(c)
	p := q.page()
	if err := q.err(); err != nil {
		return err
	}
	invites, total, err := s.store.ListInvites(c.Request().Context(),
		store.InviteFilter{OID: oid, NotBefore: s.inviteCutoff(), Paging: p.paging()})
	if err != nil {
		return err
	}
	items := make([]inviteOut, len(invites))
	for i := range invites {
		items[i] = toInviteOut(&invites[i])
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

func (s *Server) deleteInvites(c echo.Context) error {
	var in emailIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Email == nil {
		return validationError{missingField("body", "email")}
	}
	email := decodedEmail(*in.Email)
	if !utf8.ValidString(email) {
		return validationError{{Loc: []any{"body", "email"}, Msg: msgNotUTF8, Type: "value_error.unicode"}}
	}
	n, err := s.store.DeleteInvitesByEmail(c.Request().Context(), currentOrg(c).ID, email)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, removedCountOut{Removed: true, Count: n})
}

// inviteInfo shows a new-user invite to whoever holds its token and
// e-mail (the join page, before registering). E-mails compare ignoring
// case (upstream compared exactly, so an invite to User@Example.COM could
// not be redeemed).
func (s *Server) inviteInfo(c echo.Context) error {
	email := c.QueryParam("email")
	if !c.QueryParams().Has("email") {
		return validationError{missingField("query", "email")}
	}
	token, err := uuid.Parse(c.Param("token"))
	if err != nil {
		return errInvalidInvite
	}
	inv, err := s.store.GetInvite(c.Request().Context(), token, s.inviteCutoff())
	if errors.Is(err, store.ErrNotFound) || err == nil && !strings.EqualFold(inv.Email, email) {
		return errInvalidInvite
	}
	if err != nil {
		return err
	}
	return s.writeInviteInfo(c, inv)
}

// myInviteInfo shows one of the caller's own invites.
func (s *Server) myInviteInfo(c echo.Context) error {
	inv, ok := currentUser(c).Invites[inviteKeyParam(c)]
	if !ok || inv.Created.Before(s.inviteCutoff()) {
		return errInvalidInvite
	}
	inv.Email = ""
	return s.writeInviteInfo(c, &inv)
}

func (s *Server) writeInviteInfo(c echo.Context, inv *store.Invite) error {
	ctx := c.Request().Context()
	org, err := s.store.GetOrg(ctx, inv.OID)
	if errors.Is(err, store.ErrNotFound) {
		return badRequest("Invalid Invite Code, No Such Organization")
	}
	if err != nil {
		return err
	}
	out := inviteInfoOut{ID: inv.ID, Created: fmtTimeFrac(inv.Created), InviterEmail: inv.InviterEmail, OID: inv.OID,
		Email: inv.Email, OrgName: org.Name}
	if inv.Role != store.RoleViewer {
		out.Role = &inv.Role
	}
	if inviter, err := s.store.GetUserByEmail(ctx, inv.InviterEmail); err == nil {
		out.InviterName = inviter.Name
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// acceptInvite redeems one of the caller's invites: they join its org
// with its role. Each invite works once.
func (s *Server) acceptInvite(c echo.Context) error {
	ctx := c.Request().Context()
	u := currentUser(c)
	inv, err := s.store.TakeUserInvite(ctx, u.ID, inviteKeyParam(c))
	if errors.Is(err, store.ErrNotFound) {
		return errInvalidInvite
	}
	if err != nil {
		return err
	}
	if inv.Created.Before(s.inviteCutoff()) {
		return errInvalidInvite
	}
	err = s.store.SetOrgUserRole(ctx, inv.OID, u.ID, inv.Role)
	if errors.Is(err, store.ErrNotFound) {
		return badRequest("Invalid Invite Code, No Such Organization")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, addedOut{Added: true})
}

// inviteKeyParam is the {token} of an existing user's invite in the form
// it is stored (32 hex digits); the hyphenated form works too.
func inviteKeyParam(c echo.Context) string {
	raw := c.Param("token")
	if id, err := uuid.Parse(raw); err == nil {
		return store.InviteKey(id)
	}
	return raw
}
