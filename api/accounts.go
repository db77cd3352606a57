package api

import (
	"errors"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// registerIn is POST /api/auth/register.
type registerIn struct {
	Email       *string `json:"email"`
	Password    *string `json:"password"`
	Name        *string `json:"name"`
	InviteToken *string `json:"inviteToken"`
	NewOrg      *bool   `json:"newOrg"`
	NewOrgName  *string `json:"newOrgName"`
}

// emailIn is the body of the routes that take only an e-mail.
type emailIn struct {
	Email *string `json:"email"`
}

// verifyIn is POST /api/auth/verify.
type verifyIn struct {
	Token *string `json:"token"`
}

// resetPasswordIn is POST /api/auth/reset-password.
type resetPasswordIn struct {
	Token    *string `json:"token"`
	Password *string `json:"password"`
}

// userUpdateIn is PATCH /api/users/me (the first three fields) and the
// superuser's PATCH /api/users/{id} (all of them).
type userUpdateIn struct {
	Name        *string `json:"name"`
	Email       *string `json:"email"`
	Password    *string `json:"password"`
	IsActive    *bool   `json:"is_active"`
	IsSuperuser *bool   `json:"is_superuser"`
	IsVerified  *bool   `json:"is_verified"`
}

// normalizeEmail checks an e-mail address as upstream's validator does
// (one @, a dotted domain, no spaces) and lower-cases its domain.
func normalizeEmail(s string) (string, bool) {
	local, domain, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok || local == "" || strings.Contains(domain, "@") || strings.ContainsAny(local+domain, " \t\r\n<>,;") ||
		!strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.Contains(domain, "..") {
		return "", false
	}
	return local + "@" + strings.ToLower(domain), true
}

// checkEmail validates a required e-mail field at loc and returns it
// normalized.
func checkEmail(v *validator, email *string, loc ...any) string {
	if email == nil {
		v.missing(loc...)
		return ""
	}
	return checkEmailValue(v, *email, loc...)
}

// checkEmailValue validates an e-mail address at loc: UTF-8 without
// control characters, at most maxShortString characters, and shaped as
// normalizeEmail wants. It returns the address normalized ("" if bad).
func checkEmailValue(v *validator, email string, loc ...any) string {
	switch {
	case !utf8.ValidString(email):
		v.add(msgNotUTF8, "value_error.unicode", loc...)
		return ""
	case strings.IndexFunc(email, unicode.IsControl) >= 0:
		v.add("value must not contain control characters", "value_error.email", loc...)
		return ""
	case !v.maxLen(email, maxShortString, loc...):
		return ""
	}
	norm, ok := normalizeEmail(email)
	if !ok {
		v.add("value is not a valid email address", "value_error.email", loc...)
	}
	return norm
}

// register creates an account: with an invite, the invitee joins its org
// with its role and counts as verified; without one (only when
// registration is open) the user joins the default org as owner, as
// upstream, and gets a verification e-mail.
func (s *Server) register(c echo.Context) error {
	var in registerIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	var v validator
	email := checkEmail(&v, in.Email, "body", "email")
	if in.Password == nil {
		v.missing("body", "password")
	}
	if in.NewOrg == nil {
		v.missing("body", "newOrg")
	}
	var token uuid.UUID
	if in.InviteToken != nil {
		var err error
		if token, err = uuid.Parse(*in.InviteToken); err != nil || token.Version() != 4 {
			v.add("value is not a valid uuid", "type_error.uuid", "body", "inviteToken")
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	var inv *store.Invite
	switch {
	case in.InviteToken != nil:
		var err error
		inv, err = s.store.GetInvite(ctx, token, s.inviteCutoff())
		if errors.Is(err, store.ErrNotFound) || err == nil && !strings.EqualFold(inv.Email, email) {
			return badRequest("Invalid Invite Code")
		}
		if err != nil {
			return err
		}
	case !s.cfg.RegistrationEnabled:
		return badRequest("Invite Token Required")
	}
	name := deref1(in.Name)
	if name == "" {
		name = email
	}
	hash, err := s.passwords.hash(ctx, *in.Password)
	if err != nil {
		return err
	}
	u := &store.User{ID: uuid.New(), Email: email, Name: name, HashedPassword: hash, IsActive: true, IsVerified: inv != nil}
	if err := s.store.CreateUser(ctx, u); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return badRequest("REGISTER_USER_ALREADY_EXISTS")
		}
		return err
	}
	oid, role := uuid.Nil, store.RoleOwner
	if inv != nil {
		oid, role = inv.OID, inv.Role
	}
	if oid == uuid.Nil {
		def, err := s.store.GetDefaultOrg(ctx)
		if err != nil {
			return err
		}
		oid = def.ID
	}
	if err := s.store.SetOrgUserRole(ctx, oid, u.ID, role); err != nil {
		return err
	}
	if inv != nil {
		if err := s.store.DeleteInvite(ctx, inv.ID); err != nil {
			return err
		}
	} else if tok, err := s.verifyToken(u); err == nil {
		s.mailVerification(s.origin(c), u, tok)
	} else {
		s.log.Error("verification token", "err", err)
	}
	return c.JSON(http.StatusCreated, toUserOut(u))
}

// requestVerifyToken mails a verification link to an active, unverified
// user; it answers 202 whoever asks, so it reveals no accounts.
func (s *Server) requestVerifyToken(c echo.Context) error {
	u, err := s.userForMail(c)
	if err != nil {
		return err
	}
	if u != nil && u.IsActive && !u.IsVerified {
		tok, err := s.verifyToken(u)
		if err != nil {
			return err
		}
		s.mailVerification(s.origin(c), u, tok)
	}
	return c.JSON(http.StatusAccepted, nil)
}

// userForMail reads {"email"} and returns its user, or nil if none.
func (s *Server) userForMail(c echo.Context) (*store.User, error) {
	var in emailIn
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	var v validator
	email := checkEmail(&v, in.Email, "body", "email")
	if err := v.err(); err != nil {
		return nil, err
	}
	u, err := s.store.GetUserByEmail(c.Request().Context(), email)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return u, err
}

// verify marks the user a verification token names as verified. The token
// is good once: a verified user is refused.
func (s *Server) verify(c echo.Context) error {
	var in verifyIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Token == nil {
		return validationError{missingField("body", "token")}
	}
	bad := badRequest("VERIFY_USER_BAD_TOKEN")
	claims, id, err := s.parseAccountToken(*in.Token, verifyAudience)
	if err != nil || claims.Email == "" {
		return bad
	}
	ctx := c.Request().Context()
	u, err := s.store.GetUserByEmail(ctx, claims.Email)
	if errors.Is(err, store.ErrNotFound) || err == nil && u.ID != id {
		return bad
	}
	if err != nil {
		return err
	}
	if u.IsVerified {
		return badRequest("VERIFY_USER_ALREADY_VERIFIED")
	}
	if err := s.store.UpdateUser(ctx, u.ID, store.UserUpdate{IsVerified: store.Some(true)}); err != nil {
		return err
	}
	u.IsVerified = true
	return c.JSON(http.StatusOK, toUserOut(u))
}

// forgotPassword mails a reset link to an active user; it answers 202
// whoever asks, so it reveals no accounts.
func (s *Server) forgotPassword(c echo.Context) error {
	u, err := s.userForMail(c)
	if err != nil {
		return err
	}
	if u != nil && u.IsActive {
		tok, err := s.resetToken(u)
		if err != nil {
			return err
		}
		s.mailPasswordReset(s.origin(c), u, tok)
	}
	return c.JSON(http.StatusAccepted, nil)
}

// resetPassword sets a new password with a reset token. The token names
// the password it replaces, so it works once and only until it expires.
func (s *Server) resetPassword(c echo.Context) error {
	var in resetPasswordIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	var v validator
	if in.Token == nil {
		v.missing("body", "token")
	}
	if in.Password == nil {
		v.missing("body", "password")
	}
	if err := v.err(); err != nil {
		return err
	}
	bad := badRequest("RESET_PASSWORD_BAD_TOKEN")
	claims, id, err := s.parseAccountToken(*in.Token, resetAudience)
	if err != nil {
		return bad
	}
	ctx := c.Request().Context()
	u, err := s.store.GetUser(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return bad
	}
	if err != nil {
		return err
	}
	if !u.IsActive || !hmacEqual(claims.PasswordFgp, s.passwordFingerprint(u)) {
		return bad
	}
	hash, err := s.passwords.hash(ctx, *in.Password)
	if err != nil {
		return err
	}
	if err := s.store.UpdateUser(ctx, u.ID, store.UserUpdate{HashedPassword: store.Some(hash)}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, nil)
}

// updateMe changes the caller's name, e-mail or password (other keys are
// ignored). A new e-mail must be verified again.
func (s *Server) updateMe(c echo.Context) error {
	var in userUpdateIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	in.IsActive, in.IsSuperuser, in.IsVerified = nil, nil, nil
	return s.applyUserUpdate(c, currentUser(c), in)
}

// userByIDParam loads the {id} user of the superuser's routes.
func (s *Server) userByIDParam(c echo.Context) (*store.User, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return nil, validationError{{Loc: []any{"path", "id"}, Msg: "value is not a valid uuid", Type: "type_error.uuid"}}
	}
	u, err := s.store.GetUser(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound("Not Found")
	}
	return u, err
}

func (s *Server) getUser(c echo.Context) error {
	u, err := s.userByIDParam(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toUserOut(u))
}

// updateUser is the superuser's edit of any account.
func (s *Server) updateUser(c echo.Context) error {
	u, err := s.userByIDParam(c)
	if err != nil {
		return err
	}
	var in userUpdateIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	return s.applyUserUpdate(c, u, in)
}

// deleteUser removes an account; org memberships keep the stale id, as
// upstream.
func (s *Server) deleteUser(c echo.Context) error {
	u, err := s.userByIDParam(c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteUser(c.Request().Context(), u.ID); err != nil {
		return notFoundAs(err, "Not Found")
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) applyUserUpdate(c echo.Context, u *store.User, in userUpdateIn) error {
	var v validator
	var upd store.UserUpdate
	if in.Email != nil {
		email := checkEmail(&v, in.Email, "body", "email")
		if email != "" && !strings.EqualFold(email, u.Email) {
			upd.Email, upd.IsVerified = store.Some(email), store.Some(false)
			u.Email, u.IsVerified = email, false
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	if in.Name != nil {
		upd.Name, u.Name = store.Some(*in.Name), *in.Name
	}
	if in.Password != nil {
		hash, err := s.passwords.hash(c.Request().Context(), *in.Password)
		if err != nil {
			return err
		}
		upd.HashedPassword = store.Some(hash)
	}
	for _, f := range []struct {
		in  *bool
		dst *store.Maybe[bool]
		out *bool
	}{{in.IsActive, &upd.IsActive, &u.IsActive}, {in.IsSuperuser, &upd.IsSuperuser, &u.IsSuperuser},
		{in.IsVerified, &upd.IsVerified, &u.IsVerified}} {
		if f.in != nil {
			*f.dst, *f.out = store.Some(*f.in), *f.in
		}
	}
	err := s.store.UpdateUser(c.Request().Context(), u.ID, upd)
	if errors.Is(err, store.ErrConflict) {
		return badRequest("UPDATE_USER_EMAIL_ALREADY_EXISTS")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toUserOut(u))
}
