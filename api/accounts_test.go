package api

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// canLogin reports whether email/password is accepted.
func (e *env) canLogin(email, password string) bool {
	e.t.Helper()
	form := url.Values{"username": {email}, "password": {password}}
	req := httptest.NewRequest("POST", "/api/auth/jwt/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return rec.Code == 200
}

// TestOpenRegistrationAndVerification: without an invite (registration
// open) a user joins the default org as owner, unverified, and verifies
// through the e-mailed token, once. An expired token is refused.
func TestOpenRegistrationAndVerification(t *testing.T) {
	e := newMailEnv(t, func(c *Config) { c.RegistrationEnabled = true })
	addr := uniqueEmail("open")
	user := e.mustJSON("", "POST", "/api/auth/register",
		map[string]any{"email": addr, "password": "pw-open", "newOrg": true, "newOrgName": "ignored"}, 201)
	if user["is_verified"] != false || user["name"] != addr || user["is_active"] != true {
		t.Fatalf("registered: %v", user)
	}
	e.tokens["open"] = e.login(addr, "pw-open")
	if role := e.roleIn("open"); role != 40 {
		t.Fatalf("open registration role %v, want 40 (upstream makes them owner of the default org)", role)
	}
	e.wantDetail(e.do("", "POST", "/api/auth/register", map[string]any{"email": strings.ToUpper(addr[:1]) + addr[1:],
		"password": "x", "newOrg": false}), 400, "REGISTER_USER_ALREADY_EXISTS")

	mail := waitMail(t, addr, subjectVerify)
	token := linkIn(t, mail, `https://app\.example\.com/verify\?token=(\S+)`)
	verified := e.mustJSON("", "POST", "/api/auth/verify", map[string]any{"token": token}, 200)
	if verified["is_verified"] != true || verified["email"] != addr {
		t.Fatalf("verify: %v", verified)
	}
	e.wantDetail(e.do("", "POST", "/api/auth/verify", map[string]any{"token": token}), 400, "VERIFY_USER_ALREADY_VERIFIED")
	e.wantDetail(e.do("", "POST", "/api/auth/verify", map[string]any{"token": "not-a-token"}), 400, "VERIFY_USER_BAD_TOKEN")

	// A changed e-mail must be verified again; a token mailed for it
	// expires after an hour.
	addr2 := uniqueEmail("open-changed")
	me := e.mustJSON("open", "PATCH", "/api/users/me", map[string]any{"email": addr2, "is_superuser": true}, 200)
	if me["is_verified"] != false || me["email"] != addr2 || me["is_superuser"] != false {
		t.Fatalf("after e-mail change: %v", me)
	}
	if r := e.do("", "POST", "/api/auth/request-verify-token", map[string]any{"email": addr2}); r.Code != 202 || string(r.Body) != "null\n" {
		t.Fatalf("request-verify-token: %d %q", r.Code, r.Body)
	}
	late := linkIn(t, waitMail(t, addr2, subjectVerify), `/verify\?token=(\S+)`)
	e.wantDetail(e.do("", "POST", "/api/auth/verify", map[string]any{"token": token}), 400, "VERIFY_USER_BAD_TOKEN")
	e.advance(accountTokenLifetime + time.Minute)
	e.wantDetail(e.do("", "POST", "/api/auth/verify", map[string]any{"token": late}), 400, "VERIFY_USER_BAD_TOKEN")
}

// TestRegistrationNeedsInvite: with registration closed (the default) an
// account needs an invite.
func TestRegistrationNeedsInvite(t *testing.T) {
	e := newEnv(t)
	e.wantDetail(e.do("", "POST", "/api/auth/register", map[string]any{"email": "closed@example.com", "password": "x",
		"newOrg": false}), 400, "Invite Token Required")
	e.wantDetail(e.do("", "POST", "/api/auth/register", map[string]any{"email": "closed@example.com", "password": "x",
		"newOrg": false, "inviteToken": "5b1f3a0e-8f5c-4a55-9e4b-2b7f4c1d9a10"}), 400, "Invalid Invite Code")
	for _, body := range []map[string]any{
		{"email": "closed@example.com", "password": "x"},
		{"email": "not-an-email", "password": "x", "newOrg": false},
		{"email": "closed@example.com", "password": "x", "newOrg": false, "inviteToken": "nope"},
	} {
		if r := e.do("", "POST", "/api/auth/register", body); r.Code != 422 {
			t.Errorf("register %v: %d %s", body, r.Code, r.Body)
		}
	}
	if e.canLogin("closed@example.com", "x") {
		t.Fatal("refused registration created an account")
	}
}

// TestForgotAndResetPassword: the mailed reset token sets a new password
// once; a used or expired token is refused with upstream's detail, and
// unknown addresses get the same 202.
func TestForgotAndResetPassword(t *testing.T) {
	e := newMailEnv(t, nil)
	addr := uniqueEmail("forgetful")
	e.mustJSON(asAdmin, "POST", e.orgPath("/add-user"), map[string]any{"email": addr, "password": "old-pw", "name": "F", "role": 10}, 200)
	for _, who := range []string{addr, "nobody@example.com"} {
		if r := e.do("", "POST", "/api/auth/forgot-password", map[string]any{"email": who}); r.Code != 202 {
			t.Fatalf("forgot-password %s: %d %s", who, r.Code, r.Body)
		}
	}
	token := linkIn(t, waitMail(t, addr, subjectReset), `https://app\.example\.com/reset-password\?token=(\S+)`)
	if r := e.do("", "POST", "/api/auth/reset-password", map[string]any{"token": token, "password": "new-pw"}); r.Code != 200 || string(r.Body) != "null\n" {
		t.Fatalf("reset: %d %s", r.Code, r.Body)
	}
	if e.canLogin(addr, "old-pw") || !e.canLogin(addr, "new-pw") {
		t.Fatal("password not replaced")
	}
	e.wantDetail(e.do("", "POST", "/api/auth/reset-password", map[string]any{"token": token, "password": "again"}),
		400, "RESET_PASSWORD_BAD_TOKEN")
	if !e.canLogin(addr, "new-pw") {
		t.Fatal("a used token changed the password")
	}

	e.mustJSON("", "POST", "/api/auth/forgot-password", map[string]any{"email": addr}, 202)
	expired := linkIn(t, waitMails(t, addr, subjectReset, 2), `/reset-password\?token=(\S+)`)
	e.advance(accountTokenLifetime + time.Minute)
	e.wantDetail(e.do("", "POST", "/api/auth/reset-password", map[string]any{"token": expired, "password": "late"}),
		400, "RESET_PASSWORD_BAD_TOKEN")
	if !e.canLogin(addr, "new-pw") {
		t.Fatal("an expired token changed the password")
	}
}

// TestUpdateMe: name, e-mail and password of the caller.
func TestUpdateMe(t *testing.T) {
	e := newEnv(t)
	me := e.mustJSON(asViewer, "PATCH", "/api/users/me", map[string]any{"name": "Vera", "password": "pw-vera"}, 200)
	if me["name"] != "Vera" || me["is_verified"] != true {
		t.Fatalf("patch me: %v", me)
	}
	if !e.canLogin("viewer@example.com", "pw-vera") || e.canLogin("viewer@example.com", "pw-viewer") {
		t.Fatal("password not changed")
	}
	e.wantDetail(e.do(asViewer, "PATCH", "/api/users/me", map[string]any{"email": "Crawler@Example.com"}), 400, "UPDATE_USER_EMAIL_ALREADY_EXISTS")
	if r := e.do(asViewer, "PATCH", "/api/users/me", map[string]any{"email": "bad"}); r.Code != 422 {
		t.Fatalf("bad e-mail: %d", r.Code)
	}
}

// TestSuperuserManagesUsers: GET, PATCH and DELETE /users/{id}.
func TestSuperuserManagesUsers(t *testing.T) {
	e := newEnv(t)
	id := e.mustJSON(asViewer, "GET", "/api/users/me", nil, 200)["id"].(string)
	e.wantDetail(e.do(asOwner, "GET", "/api/users/"+id, nil), 403, "Forbidden")
	if r := e.do(asAdmin, "GET", "/api/users/not-a-uuid", nil); r.Code != 422 {
		t.Fatalf("bad id: %d", r.Code)
	}
	e.wantDetail(e.do(asAdmin, "GET", "/api/users/5b1f3a0e-8f5c-4a55-9e4b-2b7f4c1d9a10", nil), 404, "Not Found")
	if u := e.mustJSON(asAdmin, "GET", "/api/users/"+id, nil, 200); u["email"] != "viewer@example.com" {
		t.Fatalf("get user: %v", u)
	}
	u := e.mustJSON(asAdmin, "PATCH", "/api/users/"+id, map[string]any{"is_active": false, "is_verified": false}, 200)
	if u["is_active"] != false || u["is_verified"] != false {
		t.Fatalf("patch user: %v", u)
	}
	if e.canLogin("viewer@example.com", "pw-viewer") {
		t.Fatal("inactive user logged in")
	}
	if r := e.do(asViewer, "GET", "/api/users/me", nil); r.Code != 401 {
		t.Fatalf("inactive user's token: %d", r.Code)
	}
	if r := e.do(asAdmin, "DELETE", "/api/users/"+id, nil); r.Code != 204 || len(r.Body) != 0 {
		t.Fatalf("delete: %d %q", r.Code, r.Body)
	}
	e.wantDetail(e.do(asAdmin, "DELETE", "/api/users/"+id, nil), 404, "Not Found")
}
