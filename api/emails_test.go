package api

import (
	"strings"
	"testing"
)

// An invite to "\u0000@x.y" got 200, an invite e-mail of 304 characters
// was accepted (the documented limit is 256), and PATCH /users/me with
// {"email": "\xff@x.y"} stored "�@x.y". Every route that takes an e-mail
// refuses control characters, text that is not UTF-8 and more than 256
// characters with a 422 naming the field, and stores nothing.
func TestEmailsAreChecked(t *testing.T) {
	e := newEnvWith(t, func(c *Config, _ *Deps) { c.RegistrationEnabled = true })
	long := strings.Repeat("a", 300) + "@x.y" // 304 characters
	for _, c := range []struct {
		email string
		msg   string
	}{
		{"\u0000@x.y", "must not contain control characters"},
		{"a\u0085b@x.y", "must not contain control characters"},
		{"a@x.y\u007f", "must not contain control characters"},
		{"%00@x.y", "must not contain control characters"}, // invites decode %-escapes
		{"%FF@x.y", "not valid UTF-8"},
		{long, "at most 256 characters"},
	} {
		e.want422(e.do(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": c.email, "role": 10}),
			`"loc":["body","email"]`, c.msg)
	}
	if r := e.mustJSON(asOwner, "GET", e.orgPath("/invites"), nil, 200); r["total"] != 0.0 {
		t.Fatalf("refused invites stored: %v", r)
	}
	e.mustJSON(asOwner, "POST", e.orgPath("/invite"), map[string]any{"email": strings.Repeat("a", 252) + "@x.y", "role": 10}, 200)

	for _, email := range []string{"\u0000@x.y", long, "a\tb@x.y"} {
		for _, call := range []struct {
			as, method, path string
			body             map[string]any
		}{
			{asViewer, "PATCH", "/api/users/me", map[string]any{"email": email}},
			{asAdmin, "PATCH", "/api/users/" + e.userID(asViewer), map[string]any{"email": email}},
			{asAnonymous, "POST", "/api/auth/register", map[string]any{"email": email, "password": "pw", "newOrg": false}},
			{asAdmin, "POST", e.orgPath("/add-user"), map[string]any{"email": email, "password": "pw", "name": "n", "role": 10}},
			{asAnonymous, "POST", "/api/auth/forgot-password", map[string]any{"email": email}},
		} {
			if r := e.do(call.as, call.method, call.path, call.body); r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","email"]`) {
				t.Errorf("%s %s with %q: %d %s", call.method, call.path, email, r.Code, r.Body)
			}
		}
	}
	// JSON carrying a byte that is not UTF-8 is refused before any field.
	e.want422(e.do(asViewer, "PATCH", "/api/users/me", `{"email": "`+"\xff"+`@x.y"}`), `"loc":["body",11]`, "not valid UTF-8")
	if me := e.mustJSON(asViewer, "GET", "/api/users/me", nil, 200); me["email"] != "viewer@example.com" {
		t.Fatalf("e-mail changed to %q", me["email"])
	}
}

// userID is the id of the user a test token belongs to.
func (e *env) userID(as string) string {
	e.t.Helper()
	return e.mustJSON(as, "GET", "/api/users/me", nil, 200)["id"].(string)
}
