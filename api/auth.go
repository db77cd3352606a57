package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

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

func decodeLogin(c echo.Context) (loginIn, error) {
	r := c.Request()
	if err := r.ParseForm(); err != nil {
		return loginIn{}, validationError{{Loc: []any{"body"}, Msg: "invalid form body", Type: "value_error"}}
	}
	in := loginIn{Username: r.PostForm.Get("username"), Password: r.PostForm.Get("password")}
	var verr validationError
	for _, f := range []struct{ name, val string }{{"username", in.Username}, {"password", in.Password}} {
		if _, ok := r.PostForm[f.name]; !ok {
			verr = append(verr, missingField("body", f.name))
		}
	}
	if gt, ok := r.PostForm["grant_type"]; ok && gt[0] != "password" {
		verr = append(verr, fieldError{Loc: []any{"body", "grant_type"},
			Msg: `string does not match regex "password"`, Type: "value_error.str.regex"})
	}
	if verr != nil {
		return loginIn{}, verr
	}
	return in, nil
}

// login checks the e-mail and password and issues a token.
func (s *Server) login(c echo.Context) error {
	in, err := decodeLogin(c)
	if err != nil {
		return err
	}
	u, err := s.store.GetUserByEmail(c.Request().Context(), in.Username)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if u == nil || !u.IsActive || bcrypt.CompareHashAndPassword([]byte(u.HashedPassword), []byte(in.Password)) != nil {
		return badRequest("LOGIN_BAD_CREDENTIALS")
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

// hashPassword is bcrypt at the library's default cost.
func hashPassword(pw string) (string, error) {
	// bcrypt rejects passwords over 72 bytes; upstream's passlib silently
	// truncates, so do the same rather than refuse an existing password.
	b := []byte(pw)
	if len(b) > 72 {
		b = b[:72]
	}
	h, err := bcrypt.GenerateFromPassword(b, bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hashing password: %w", err)
	}
	return string(h), nil
}

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
	hash, err := hashPassword(s.cfg.SuperuserPassword)
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
