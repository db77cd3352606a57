package api

import (
	"net/url"
	"regexp"
	"testing"
	"time"
)

const inviteSubjectDefaultOrg = `You've been invited to join "My Organization" on Browsertrix Cloud`

// roleIn returns the role me-with-orgs shows for the default org, or 0.
func (e *env) roleIn(as string) float64 {
	e.t.Helper()
	me := e.mustJSON(as, "GET", "/api/users/me-with-orgs", nil, 200)
	for _, o := range me["orgs"].([]any) {
		if o.(map[string]any)["id"] == e.org.String() {
			return o.(map[string]any)["role"].(float64)
		}
	}
	return 0
}

// TestInviteNewUser: an owner invites an address without an account; the
// invitee reads the e-mail, looks the invite up, registers with its token
// and logs in as a member with the role given. The token then is spent.
func TestInviteNewUser(t *testing.T) {
	e := newMailEnv(t, nil)
	addr := uniqueEmail("new")
	out := e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": addr, "role": 20}, 200)
	if out["invited"] != "new_user" {
		t.Fatalf("invite: %v", out)
	}
	list := e.mustJSON(asOwner, "GET", e.orgPath("/invites"), nil, 200)
	if list["total"] != 1.0 || get(list["items"].([]any)[0], "email") != addr {
		t.Fatalf("invites: %v", list)
	}

	mail := waitMail(t, addr, inviteSubjectDefaultOrg)
	token := linkIn(t, mail, `https://app\.example\.com/join/([0-9a-f-]{36})\?email=`+regexp.QuoteMeta(addr))

	info := e.mustJSON("", "GET", "/api/users/invite/"+token+"?email="+url.QueryEscape(addr), nil, 200)
	want := map[string]any{"id": token, "inviterEmail": "owner@example.com", "oid": e.org.String(), "role": 20.0,
		"email": addr, "inviterName": asOwner, "orgName": "My Organization"}
	for k, v := range want {
		if info[k] != v {
			t.Errorf("invite info %s = %v, want %v (%v)", k, info[k], v, info)
		}
	}
	e.wantDetail(e.do("", "GET", "/api/users/invite/"+token+"?email=other%40example.com", nil), 400, "Invalid Invite Code")

	user := e.mustJSON("", "POST", "/api/auth/register", map[string]any{"email": addr, "password": "pw-new",
		"name": "New Member", "inviteToken": token, "newOrg": false}, 201)
	if user["is_verified"] != true || user["is_superuser"] != false || user["email"] != addr {
		t.Fatalf("registered user: %v", user)
	}
	e.tokens["new"] = e.login(addr, "pw-new")
	if role := e.roleIn("new"); role != 20 {
		t.Fatalf("new member's role %v, want 20", role)
	}
	e.mustJSON("new", "GET", e.orgPath("/crawlconfigs"), nil, 200)

	if n := e.mustJSON(asOwner, "GET", e.orgPath("/invites"), nil, 200)["total"]; n != 0.0 {
		t.Fatalf("invite still listed after registration: %v", n)
	}
	e.wantDetail(e.do("", "POST", "/api/auth/register", map[string]any{"email": addr, "password": "x",
		"inviteToken": token, "newOrg": false}), 400, "Invalid Invite Code")
}

// TestInviteExistingUser: an existing user's invite is accepted through
// the e-mail's link while logged in, once.
func TestInviteExistingUser(t *testing.T) {
	e := newMailEnv(t, nil)
	addr := uniqueEmail("existing")
	otherOrg := e.mustJSON(asAdmin, "GET", "/api/orgs", nil, 200)["items"].([]any)[1].(map[string]any)["id"].(string)
	e.mustJSON(asAdmin, "POST", "/api/orgs/"+otherOrg+"/add-user",
		map[string]any{"email": addr, "password": "pw-ex", "name": "Existing", "role": 10}, 200)
	e.tokens["ex"] = e.login(addr, "pw-ex")

	out := e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": addr, "role": 10}, 200)
	if out["invited"] != "existing_user" {
		t.Fatalf("invite: %v", out)
	}
	mail := waitMail(t, addr, inviteSubjectDefaultOrg)
	key := linkIn(t, mail, `https://app\.example\.com/invite/accept/([0-9a-f]{32})\?email=`+regexp.QuoteMeta(addr))

	info := e.mustJSON("ex", "GET", "/api/users/me/invite/"+key, nil, 200)
	if _, hasRole := info["role"]; hasRole || info["orgName"] != "My Organization" || info["inviterName"] != asOwner {
		t.Fatalf("invite info (role 10 is left out): %v", info)
	}
	if _, hasEmail := info["email"]; hasEmail {
		t.Fatalf("existing-user invite info has an email: %v", info)
	}
	e.wantDetail(e.do(asViewer, "GET", "/api/users/me/invite/"+key, nil), 400, "Invalid Invite Code")

	if e.roleIn("ex") != 0 {
		t.Fatal("member before accepting")
	}
	e.mustJSON("ex", "POST", "/api/orgs/invite-accept/"+key, nil, 200)
	if role := e.roleIn("ex"); role != 10 {
		t.Fatalf("role after accepting %v, want 10", role)
	}
	e.wantDetail(e.do("ex", "POST", "/api/orgs/invite-accept/"+key, nil), 400, "Invalid Invite Code")
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": addr, "role": 10}),
		400, "User already a member of this organization.")
}

// TestInviteExpires: neither kind of invite can be used after its
// lifetime; the expired one is no longer listed and can be sent again.
func TestInviteExpires(t *testing.T) {
	e := newMailEnv(t, func(c *Config) { c.InviteLifetime = 48 * time.Hour })
	addr := uniqueEmail("late")
	e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": addr, "role": 40}, 200)
	token := linkIn(t, waitMail(t, addr, inviteSubjectDefaultOrg), `/join/([0-9a-f-]{36})\?`)
	e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": "viewer@example.com", "role": 20}, 400)
	existing := uniqueEmail("late-existing")
	otherOrg := e.mustJSON(asAdmin, "GET", "/api/orgs", nil, 200)["items"].([]any)[1].(map[string]any)["id"].(string)
	e.mustJSON(asAdmin, "POST", "/api/orgs/"+otherOrg+"/add-user",
		map[string]any{"email": existing, "password": "pw-le", "name": "Late", "role": 10}, 200)
	e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": existing, "role": 20}, 200)
	key := linkIn(t, waitMail(t, existing, inviteSubjectDefaultOrg), `/invite/accept/([0-9a-f]{32})\?`)

	e.advance(48*time.Hour + time.Minute)
	e.tokens["le"] = e.login(existing, "pw-le")

	e.wantDetail(e.do("", "GET", "/api/users/invite/"+token+"?email="+url.QueryEscape(addr), nil), 400, "Invalid Invite Code")
	e.wantDetail(e.do("", "POST", "/api/auth/register", map[string]any{"email": addr, "password": "x",
		"inviteToken": token, "newOrg": false}), 400, "Invalid Invite Code")
	e.wantDetail(e.do("le", "GET", "/api/users/me/invite/"+key, nil), 400, "Invalid Invite Code")
	e.wantDetail(e.do("le", "POST", "/api/orgs/invite-accept/"+key, nil), 400, "Invalid Invite Code")
	if e.roleIn("le") != 0 {
		t.Fatal("expired invite made a member")
	}
	if n := e.mustJSON(asOwner, "GET", e.orgPath("/invites"), nil, 200)["total"]; n != 0.0 {
		t.Fatalf("expired invite listed: %v", n)
	}
	if n := e.mustJSON(asAdmin, "GET", "/api/users/invites", nil, 200)["total"]; n != 0.0 {
		t.Fatalf("expired invite listed for the superuser: %v", n)
	}
	// Expired, so the address can be invited again.
	e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": addr, "role": 40}, 200)
}

// TestInviteRules: the refusals, the e-mail spellings upstream's tests
// use, and withdrawing invites.
func TestInviteRules(t *testing.T) {
	e := newEnv(t)
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": "owner@example.com", "role": 10}),
		400, "Can't invite ourselves!")
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": "crawler@example.com", "role": 10}),
		400, "User already a member of this organization.")
	for _, bad := range []map[string]any{{"email": "x@example.com", "role": 30}, {"email": "not-an-address", "role": 10}, {"role": 10}} {
		if r := e.do(asOwner, "POST", e.orgPath("/invite"), bad); r.Code != 422 {
			t.Fatalf("invite %v: %d %s", bad, r.Code, r.Body)
		}
	}
	spellings := map[string]string{
		"user%2Bcomment-encoded-org%40example.com":      "user+comment-encoded-org@example.com",
		"diacritic-t%C3%A9st-encoded-org%40example.com": "diacritic-tést-encoded-org@example.com",
		"user+comment-org@example.com":                  "user+comment-org@example.com",
		"diacritic-tést-org@example.com":                "diacritic-tést-org@example.com",
	}
	for sent := range spellings {
		e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": sent, "role": 20}, 200)
	}
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": "User+Comment-Org@example.com", "role": 10}),
		403, "This user has already been invited")
	listed := map[string]bool{}
	for _, it := range e.mustJSON(asOwner, "GET", e.orgPath("/invites"), nil, 200)["items"].([]any) {
		listed[get(it, "email").(string)] = true
		if get(it, "oid") != e.org.String() || get(it, "role") != 20.0 || get(it, "created") == nil || get(it, "id") == nil {
			t.Errorf("invite item %v", it)
		}
	}
	for sent, stored := range spellings {
		if !listed[stored] {
			t.Errorf("invite to %s not listed as %s: %v", sent, stored, listed)
		}
	}
	all := e.mustJSON(asAdmin, "GET", "/api/users/invites", nil, 200)
	if all["total"] != float64(len(spellings)) {
		t.Errorf("superuser's invite list: %v", all)
	}
	e.wantDetail(e.do(asCrawler, "GET", "/api/users/invites", nil), 403, detailNotAllowed)

	out := e.mustJSON(asOwner, "POST", e.orgPath("/invites/delete"), map[string]any{"email": "user%2Bcomment-encoded-org%40example.com"}, 200)
	if out["removed"] != true || out["count"] != 1.0 {
		t.Fatalf("delete: %v", out)
	}
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/invites/delete"), map[string]any{"email": "nobody@example.com"}), 404, "invite_not_found")
	if n := e.mustJSON(asOwner, "GET", e.orgPath("/invites"), nil, 200)["total"]; n != float64(len(spellings)-1) {
		t.Fatalf("after delete: %v invites", n)
	}
}

// TestRemoveMember: removing a member twice, or someone unknown, is 404
// no_such_org_user; the only owner cannot be removed.
func TestRemoveMember(t *testing.T) {
	e := newEnv(t)
	e.mustJSON(asOwner, "POST", e.orgPath("/remove"), map[string]any{"email": "viewer@example.com"}, 200)
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/remove"), map[string]any{"email": "viewer@example.com"}), 404, "no_such_org_user")
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/remove"), map[string]any{"email": "nobody@example.com"}), 404, "no_such_org_user")
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/remove"), map[string]any{"email": "owner@example.com"}), 400, "Can't remove only owner from org")
	if r := e.roleIn(asViewer); r != 0 {
		t.Fatalf("removed viewer still has role %v", r)
	}
}
