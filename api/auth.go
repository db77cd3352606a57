package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// tokenAudience is the audience upstream's auth library puts in tokens;
// clients that decode tokens expect it.
const tokenAudience = "fastapi-users:auth"

// tokenClaims are the claims of a login token, as upstream issues them.
type tokenClaims struct {
	UserID string `json:"user_id"`
	jwt.RegisteredClaims
}

// UnmarshalJSON is strict where the jwt library is lenient: the time
// claims (exp, nbf, iat) must be JSON numbers (RFC 7519's NumericDate),
// not numeric strings.
func (c *tokenClaims) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	for _, k := range []string{"exp", "nbf", "iat"} {
		if v, ok := raw[k]; ok && !isJSONNumber(v) {
			return fmt.Errorf("claim %s is not a number", k)
		}
	}
	type plain tokenClaims // without this method
	return json.Unmarshal(data, (*plain)(c))
}

// isJSONNumber reports a JSON number literal.
func isJSONNumber(v json.RawMessage) bool {
	var n json.Number
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] != '"' && json.Unmarshal(v, &n) == nil
}

// tokenOut is the body of a successful login or refresh.
type tokenOut struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
}

// issueToken signs a token for user id valid for the configured lifetime.
func (s *Server) issueToken(id uuid.UUID) (tokenOut, error) {
	claims := tokenClaims{
		UserID: id.String(),
		RegisteredClaims: jwt.RegisteredClaims{
			Audience:  jwt.ClaimStrings{tokenAudience},
			ExpiresAt: jwt.NewNumericDate(s.clock.Now().Add(s.cfg.TokenLifetime)),
		},
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.cfg.JWTSecret)
	if err != nil {
		return tokenOut{}, fmt.Errorf("signing token: %w", err)
	}
	return tokenOut{AccessToken: signed, TokenType: "bearer"}, nil
}

// parseToken checks signature, algorithm, audience and expiry and returns
// the user id the token was issued to.
func (s *Server) parseToken(raw string) (uuid.UUID, error) {
	var claims tokenClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return s.cfg.JWTSecret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(tokenAudience),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.clock.Now))
	if err != nil {
		return uuid.Nil, fmt.Errorf("parsing token: %w", err)
	}
	return uuid.Parse(claims.UserID)
}

// bearerToken finds the token in the Authorization header or, for
// websocket and nginx auth_request clients, the auth_bearer query param.
func bearerToken(r *http.Request) string {
	if h := r.Header.Get(echo.HeaderAuthorization); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "bearer") {
			return strings.TrimSpace(token)
		}
		return ""
	}
	return r.URL.Query().Get("auth_bearer")
}

// authenticate resolves the caller from the token and stores the user in
// the echo context. Missing, invalid or expired tokens and inactive users
// all get 401.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := bearerToken(c.Request())
		if raw == "" {
			return unauthorized()
		}
		id, err := s.parseToken(raw)
		if err != nil {
			return unauthorized()
		}
		u, err := s.store.GetUser(c.Request().Context(), id)
		if errors.Is(err, store.ErrNotFound) {
			return unauthorized()
		}
		if err != nil {
			return err
		}
		if !u.IsActive {
			return unauthorized()
		}
		c.Set("user", u)
		return next(c)
	}
}

// currentUser is the authenticated caller.
func currentUser(c echo.Context) *store.User { return c.Get("user").(*store.User) }

// loginIn is the form upstream's login takes (OAuth2 password flow).
type loginIn struct {
	Username string
	Password string
}

// maxLoginFormBytes bounds the login form; its two fields are short.
const maxLoginFormBytes = 64 << 10

// maxPasswordLen bounds passwords (bcrypt reads only their first 72 bytes).
const maxPasswordLen = 1024

func decodeLogin(c echo.Context) (loginIn, error) {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxLoginFormBytes)
	if err := r.ParseForm(); err != nil {
		return loginIn{}, validationError{{Loc: []any{"body"}, Msg: "invalid form body", Type: "value_error"}}
	}
	in := loginIn{Username: r.PostForm.Get("username"), Password: r.PostForm.Get("password")}
	var v validator
	for _, f := range []struct {
		name, val string
		limit     int
	}{{"username", in.Username, maxShortString}, {"password", in.Password, maxPasswordLen}} {
		if _, ok := r.PostForm[f.name]; !ok {
			v.missing("body", f.name)
		}
		if !utf8.ValidString(f.val) {
			v.add(msgNotUTF8, "value_error.unicode", "body", f.name)
			continue
		}
		v.maxLen(f.val, f.limit, "body", f.name)
	}
	if gt, ok := r.PostForm["grant_type"]; ok && gt[0] != "password" {
		v.add(`string does not match regex "password"`, "value_error.str.regex", "body", "grant_type")
	}
	if err := v.err(); err != nil {
		return loginIn{}, err
	}
	return in, nil
}

// login checks the e-mail and password and issues a token. Attempts are
// throttled per account and per client address (429
// too_many_login_attempts, as upstream), an unknown or inactive account
// costs the same bcrypt time as a wrong password, and bcrypt runs in the
// bounded slots of s.passwords.
func (s *Server) login(c echo.Context) error {
	in, err := decodeLogin(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	attempt, err := s.logins.begin(ctx, in.Username, c.RealIP())
	var tooMany errTooManyLogins
	if errors.As(err, &tooMany) {
		return tooManyLogins(c.Response().Header(), tooMany)
	}
	if err != nil {
		return err
	}
	u, err := s.store.GetUserByEmail(ctx, in.Username)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	hash := ""
	if u != nil {
		hash = u.HashedPassword
	}
	ok, err := s.passwords.check(ctx, hash, in.Password)
	if err != nil {
		return err
	}
	if !ok || !u.IsActive {
		return badRequest("LOGIN_BAD_CREDENTIALS")
	}
	if err := s.logins.succeeded(ctx, attempt); err != nil {
		return err
	}
	tok, err := s.issueToken(u.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tok)
}

// refresh issues a fresh token to an authenticated caller.
func (s *Server) refresh(c echo.Context) error {
	tok, err := s.issueToken(currentUser(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tok)
}

// logout has nothing to revoke (tokens are stateless) and answers 200 as
// upstream's library does.
func (s *Server) logout(c echo.Context) error { return c.JSON(http.StatusOK, struct{}{}) }

// Bootstrap creates or updates the superuser (its password is reset to
// the configured one on every start) and creates the default org when
// none exists. main runs it once the store is reachable.
func (s *Server) Bootstrap(ctx context.Context) error {
	if err := s.bootstrapSuperuser(ctx); err != nil {
		return err
	}
	return s.bootstrapDefaultOrg(ctx)
}

func (s *Server) bootstrapSuperuser(ctx context.Context) error {
	if s.cfg.SuperuserEmail == "" {
		return nil
	}
	hash, err := s.passwords.hash(ctx, s.cfg.SuperuserPassword)
	if err != nil {
		return err
	}
	u, err := s.store.GetUserByEmail(ctx, s.cfg.SuperuserEmail)
	switch {
	case errors.Is(err, store.ErrNotFound):
		u = &store.User{ID: uuid.New(), Email: s.cfg.SuperuserEmail, Name: "admin"}
		u.HashedPassword, u.IsActive, u.IsSuperuser, u.IsVerified = hash, true, true, true
		if err := s.store.CreateUser(ctx, u); err != nil {
			return fmt.Errorf("creating superuser: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("finding superuser: %w", err)
	}
	upd := store.UserUpdate{HashedPassword: store.Some(hash), IsActive: store.Some(true),
		IsSuperuser: store.Some(true), IsVerified: store.Some(true)}
	if err := s.store.UpdateUser(ctx, u.ID, upd); err != nil {
		return fmt.Errorf("updating superuser: %w", err)
	}
	return nil
}

func (s *Server) bootstrapDefaultOrg(ctx context.Context) error {
	if _, err := s.store.EnsureDefaultOrg(ctx, s.cfg.DefaultOrgName); err != nil {
		return fmt.Errorf("creating default org: %w", err)
	}
	return nil
}

// newOrg is an org with the default storage and no members.
func (s *Server) newOrg(name string) *store.Org {
	id := uuid.New()
	return &store.Org{
		ID:    id,
		Name:  name,
		Users: map[string]store.Role{},
		Storage: store.Storage{Type: "default", Name: k8s.DefaultStorageName,
			Path: id.String() + "/"},
		Usage: map[string]int64{},
	}
}
