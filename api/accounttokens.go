package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// Audiences of the one-hour tokens mailed for verification and password
// reset, as upstream's auth library issues them.
const (
	verifyAudience = "fastapi-users:verify"
	resetAudience  = "fastapi-users:reset"
	// accountTokenLifetime is how long those tokens are valid (upstream: 1 h).
	accountTokenLifetime = time.Hour
)

// accountClaims are the claims of verification and reset tokens. A
// verification token names the e-mail it verifies; a reset token carries
// a fingerprint of the password it replaces, so it stops working once
// used (or once the password changed otherwise): single use without
// server-side state.
type accountClaims struct {
	UserID      string `json:"user_id"`
	Email       string `json:"email,omitempty"`
	PasswordFgp string `json:"password_fgpt,omitempty"`
	jwt.RegisteredClaims
}

func (s *Server) signAccountToken(audience string, claims accountClaims) (string, error) {
	claims.Audience = jwt.ClaimStrings{audience}
	claims.ExpiresAt = jwt.NewNumericDate(s.clock.Now().Add(accountTokenLifetime))
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.cfg.JWTSecret)
	if err != nil {
		return "", fmt.Errorf("signing %s token: %w", audience, err)
	}
	return signed, nil
}

// parseAccountToken checks signature, audience and expiry and returns the
// claims with the user id parsed.
func (s *Server) parseAccountToken(raw, audience string) (accountClaims, uuid.UUID, error) {
	var claims accountClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return s.cfg.JWTSecret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(audience),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.clock.Now))
	if err != nil {
		return claims, uuid.Nil, fmt.Errorf("parsing %s token: %w", audience, err)
	}
	id, err := uuid.Parse(claims.UserID)
	if err != nil {
		return claims, uuid.Nil, fmt.Errorf("parsing %s token: user id: %w", audience, err)
	}
	return claims, id, nil
}

func (s *Server) verifyToken(u *store.User) (string, error) {
	return s.signAccountToken(verifyAudience, accountClaims{UserID: u.ID.String(), Email: u.Email})
}

func (s *Server) resetToken(u *store.User) (string, error) {
	return s.signAccountToken(resetAudience, accountClaims{UserID: u.ID.String(), PasswordFgp: s.passwordFingerprint(u)})
}

// passwordFingerprint identifies the user's current password hash without
// revealing it.
func (s *Server) passwordFingerprint(u *store.User) string {
	mac := hmac.New(sha256.New, s.cfg.JWTSecret)
	mac.Write([]byte(u.HashedPassword))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// hmacEqual compares fingerprints in constant time.
func hmacEqual(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }
