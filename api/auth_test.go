package api

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func postForm(e *env, form url.Values) resp {
	req := httptest.NewRequest("POST", "/api/auth/jwt/login/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return resp{Code: rec.Code, Body: rec.Body.Bytes()}
}

func TestLogin(t *testing.T) {
	e := newEnv(t)
	t.Run("OK", func(t *testing.T) {
		r := postForm(e, url.Values{"username": {"ADMIN@example.com"}, "password": {"PASSW0RD!"}})
		if r.Code != 200 || get(r.JSON(), "token_type") != "bearer" || get(r.JSON(), "access_token") == "" {
			t.Fatalf("login: %d %s", r.Code, r.Body)
		}
		tok := get(r.JSON(), "access_token").(string)
		var claims jwt.MapClaims
		if _, err := jwt.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return []byte(testSecret), nil }); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(claims["aud"], []any{"fastapi-users:auth"}) || claims["user_id"] == "" {
			t.Fatalf("claims %v", claims)
		}
		if exp := int64(claims["exp"].(float64)); exp < time.Now().Add(1439*time.Minute).Unix() {
			t.Fatalf("exp %d too early", exp)
		}
	})
	for name, form := range map[string]url.Values{
		"WrongPassword": {"username": {"admin@example.com"}, "password": {"nope"}},
		"UnknownUser":   {"username": {"who@example.com"}, "password": {"PASSW0RD!"}},
	} {
		t.Run(name, func(t *testing.T) { e.wantDetail(postForm(e, form), 400, "LOGIN_BAD_CREDENTIALS") })
	}
	t.Run("MissingPassword", func(t *testing.T) {
		r := postForm(e, url.Values{"username": {"admin@example.com"}})
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","password"]`) {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
}

func TestTokens(t *testing.T) {
	e := newEnv(t)
	expired := func() string {
		claims := tokenClaims{UserID: "x", RegisteredClaims: jwt.RegisteredClaims{
			Audience: jwt.ClaimStrings{tokenAudience}, ExpiresAt: jwt.NewNumericDate(time.Now().Add(-time.Minute))}}
		s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(testSecret))
		return s
	}()
	e.tokens["expired"], e.tokens["garbage"] = expired, "not-a-jwt"
	for _, as := range []string{"", "expired", "garbage"} {
		e.wantDetail(e.do(as, "GET", "/api/users/me", nil), 401, "Unauthorized")
	}
	// The query parameter form used by websockets and nginx auth_request.
	r := e.do("", "GET", "/api/users/me?auth_bearer="+e.tokens[asViewer], nil)
	if r.Code != 200 || get(r.JSON(), "email") != "viewer@example.com" {
		t.Fatalf("auth_bearer: %d %s", r.Code, r.Body)
	}
	me := e.mustJSON(asAdmin, "GET", "/api/users/me/", nil, 200)
	for _, k := range []string{"id", "email", "is_active", "is_superuser", "is_verified", "name"} {
		if _, ok := me[k]; !ok {
			t.Errorf("users/me lacks %s: %v", k, me)
		}
	}
	ref := e.mustJSON(asViewer, "POST", "/api/auth/jwt/refresh", nil, 200)
	e.tokens["refreshed"] = ref["access_token"].(string)
	e.mustJSON("refreshed", "GET", "/api/users/me", nil, 200)
	e.mustJSON(asViewer, "POST", "/api/auth/jwt/logout", nil, 200)
}

func TestMeWithOrgs(t *testing.T) {
	e := newEnv(t)
	admin := e.mustJSON(asAdmin, "GET", "/api/users/me-with-orgs", nil, 200)
	orgs := admin["orgs"].([]any)
	if len(orgs) != 2 || get(orgs[0], "role") != 100.0 || get(orgs[0], "default") != true {
		t.Fatalf("superuser orgs: %v", orgs)
	}
	crawler := e.mustJSON(asCrawler, "GET", "/api/users/me-with-orgs", nil, 200)
	orgs = crawler["orgs"].([]any)
	if len(orgs) != 1 || get(orgs[0], "role") != 20.0 || get(orgs[0], "name") != "My Organization" {
		t.Fatalf("crawler orgs: %v", orgs)
	}
}

func TestSettingsAndHealth(t *testing.T) {
	e := newEnv(t)
	r := e.do("", "GET", "/api/settings", nil)
	want := `{"registrationEnabled":false,"jwtTokenLifetime":86400,"defaultBehaviorTimeSeconds":300,"maxPagesPerCrawl":4,"defaultPageLoadTimeSeconds":120,"pausedExpiryMinutes":10080,"rateLimitDurationMinutes":0}`
	if r.Code != 200 || strings.TrimSpace(string(r.Body)) != want {
		t.Fatalf("settings: %d %s", r.Code, r.Body)
	}
	for _, p := range []string{"/healthz", "/readyz", "/healthz/"} {
		if r := e.do("", "GET", p, nil); r.Code != 200 || strings.TrimSpace(string(r.Body)) != "{}" {
			t.Fatalf("%s: %d %s", p, r.Code, r.Body)
		}
	}
	e.srv.ready = func(ctx context.Context) error { return errors.New("mongodb: unreachable") }
	e.wantDetail(e.do("", "GET", "/readyz", nil), 503, "service_unavailable")
}

func TestBootstrapIsIdempotent(t *testing.T) {
	e := newEnv(t)
	if err := e.srv.Bootstrap(t.Context()); err != nil {
		t.Fatal(err)
	}
	orgs := e.mustJSON(asAdmin, "GET", "/api/orgs", nil, 200)
	if orgs["total"] != 2.0 {
		t.Fatalf("orgs after second bootstrap: %v", orgs)
	}
	e.login("admin@example.com", "PASSW0RD!")
}
