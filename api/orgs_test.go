package api

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOrgSerializationByRole compares whole org objects, nulls included,
// as each role sees them, before and after the org has usage, webhook URLs
// and an origin: users only for owners and usage only for crawlers and up
// (null for the others), storage never, webhookUrls always with every
// event's key, quotas with the baseline's three keys and upstream's
// execution-time ones, the execution-time counters (crawlExecSeconds {}
// for viewers) and the quota history.
func TestOrgSerializationByRole(t *testing.T) {
	e := newEnv(t)
	ids := map[string]string{}
	for _, as := range []string{asAdmin, asOwner, asCrawler, asViewer} {
		ids[as] = e.mustJSON(as, "GET", "/api/users/me", nil, 200)["id"].(string)
	}
	members := map[string]any{}
	for as, role := range map[string]float64{asOwner: 40, asCrawler: 20, asViewer: 10} {
		members[ids[as]] = map[string]any{"role": role, "name": as, "email": as + "@example.com"}
	}
	noURLs := map[string]any{"crawlStarted": nil, "crawlFinished": nil, "uploadFinished": nil,
		"addedToCollection": nil, "removedFromCollection": nil}
	org := map[string]any{
		"id": e.org.String(), "name": "My Organization", "users": members, "usage": map[string]any{},
		"default": true, "bytesStored": 0.0, "origin": nil, "webhookUrls": noURLs,
		"quotas": map[string]any{"maxConcurrentCrawls": 0.0, "maxPagesPerCrawl": 0.0, "storageQuota": 0.0,
			"maxExecMinutesPerMonth": 0.0, "extraExecMinutes": 0.0, "giftedExecMinutes": 0.0},
		"crawlExecSeconds": map[string]any{}, "monthlyExecSeconds": map[string]any{}, "giftedExecSeconds": map[string]any{},
		"extraExecSeconds": map[string]any{}, "giftedExecSecondsAvailable": 0.0, "extraExecSecondsAvailable": 0.0,
		"storageQuotaReached": false, "execMinutesQuotaReached": false,
		// Added with crawler proxies, as upstream's org answers have them today.
		"allowSharedProxies": false, "allowedProxies": []any{},
		// Added with read-only orgs, as upstream's.
		"readOnly": false, "readOnlyReason": nil,
	}
	updates := 0
	// withoutUpdates drops the quota history, whose times vary, after
	// checking its length.
	withoutUpdates := func(o any, as string) any {
		t.Helper()
		m := maps.Clone(o.(map[string]any))
		if ups, _ := m["quotaUpdates"].([]any); len(ups) != updates {
			t.Errorf("quotaUpdates as %s: %v, want %d", as, m["quotaUpdates"], updates)
		}
		delete(m, "quotaUpdates")
		return m
	}
	check := func(want map[string]any) {
		t.Helper()
		for _, tc := range []struct {
			as                 string
			seesUsers, seesUse bool
		}{{asAdmin, true, true}, {asOwner, true, true}, {asCrawler, false, true}, {asViewer, false, false}} {
			w := maps.Clone(want)
			if !tc.seesUsers {
				w["users"] = nil
			}
			if !tc.seesUse {
				w["usage"] = nil
				w["crawlExecSeconds"] = map[string]any{}
			}
			if diff := cmp.Diff(w, withoutUpdates(e.mustJSON(tc.as, "GET", e.orgPath(""), nil, 200), tc.as)); diff != "" {
				t.Errorf("GET org as %s (-want +got):\n%s", tc.as, diff)
			}
			var item any
			for _, it := range e.mustJSON(tc.as, "GET", "/api/orgs", nil, 200)["items"].([]any) {
				if get(it, "id") == e.org.String() {
					item = it
				}
			}
			if diff := cmp.Diff(w, withoutUpdates(item, tc.as)); diff != "" {
				t.Errorf("org list item as %s (-want +got):\n%s", tc.as, diff)
			}
		}
	}
	check(org)

	// Usage as the post-crawl tasks store it; a webhook URL (and with it
	// the origin, the request's scheme and host) and quotas through their
	// routes.
	if _, err := e.store.Raw().Collection("organizations").UpdateByID(t.Context(), e.org,
		map[string]any{"$set": map[string]any{"usage.2026-03": 125, "crawlExecSeconds.2026-03": 250}}); err != nil {
		t.Fatal(err)
	}
	e.mustJSON(asOwner, "POST", e.orgPath("/event-webhook-urls"), map[string]any{"crawlFinished": "https://hooks.example/done"}, 200)
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{
		"maxConcurrentCrawls": 2, "maxPagesPerCrawl": 10, "storageQuota": 1000, "maxExecMinutesPerMonth": 60}, 200)
	org["usage"] = map[string]any{"2026-03": 125.0}
	org["origin"] = "http://example.com"
	urls := maps.Clone(noURLs)
	urls["crawlFinished"] = "https://hooks.example/done"
	org["webhookUrls"] = urls
	org["quotas"] = map[string]any{"maxConcurrentCrawls": 2.0, "maxPagesPerCrawl": 10.0, "storageQuota": 1000.0,
		"maxExecMinutesPerMonth": 60.0, "extraExecMinutes": 0.0, "giftedExecMinutes": 0.0}
	org["crawlExecSeconds"] = map[string]any{"2026-03": 250.0}
	updates = 1
	check(org)

	list := e.mustJSON(asViewer, "GET", "/api/orgs", nil, 200)
	if list["total"] != 1.0 || list["page"] != 1.0 || list["pageSize"] != 1000.0 {
		t.Fatalf("viewer's org list: %v", list)
	}
}

func TestOrgNotFound(t *testing.T) {
	e := newEnv(t)
	// A non-member, an unknown org and a malformed id all look the same.
	e.wantDetail(e.do(asOutsider, "GET", e.orgPath(""), nil), 404, "Organization '"+e.org.String()+"' not found")
	unknown := "/api/orgs/00000000-0000-4000-8000-000000000000"
	e.wantDetail(e.do(asAdmin, "GET", unknown, nil), 404, "Organization '00000000-0000-4000-8000-000000000000' not found")
	e.wantDetail(e.do(asAdmin, "GET", "/api/orgs/not-a-uuid/crawls", nil), 404, "Organization 'not-a-uuid' not found")
}

func TestOrgAdmin(t *testing.T) {
	e := newEnv(t)
	created := e.mustJSON(asAdmin, "POST", "/api/orgs/create/", map[string]any{"name": "New Org"}, 200)
	if created["added"] != true || created["id"] == nil {
		t.Fatalf("create: %v", created)
	}
	dup := e.mustJSON(asAdmin, "POST", "/api/orgs/create", map[string]any{"name": "New Org"}, 200)
	if dup["added"] != false || dup["error"] != "already_exists" {
		t.Fatalf("duplicate create: %v", dup)
	}
	e.wantDetail(e.do(asOwner, "POST", "/api/orgs/create", map[string]any{"name": "X"}), 403, "Not Allowed")

	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/rename"), map[string]any{"name": "New Org"}), 400, "duplicate_org_name")
	e.mustJSON(asOwner, "POST", e.orgPath("/rename"), map[string]any{"name": "Renamed"}, 200)
	if o := e.mustJSON(asViewer, "GET", e.orgPath(""), nil, 200); o["name"] != "Renamed" {
		t.Fatalf("rename: %v", o)
	}

	upd := e.mustJSON(asOwner, "PATCH", e.orgPath("/user-role"), map[string]any{"email": "viewer@example.com", "role": 20}, 200)
	if upd["updated"] != true {
		t.Fatal(upd)
	}
	// The former viewer may now create workflows.
	e.createWorkflow(asViewer, workflowBody("by promoted viewer", false))
	e.wantDetail(e.do(asOwner, "PATCH", e.orgPath("/user-role"), map[string]any{"email": "nobody@example.com", "role": 20}),
		400, "No user found for specified e-mail")
	if r := e.do(asOwner, "PATCH", e.orgPath("/user-role"), map[string]any{"email": "viewer@example.com", "role": 30}); r.Code != 422 {
		t.Fatalf("bad role: %d %s", r.Code, r.Body)
	}

	rm := e.mustJSON(asOwner, "POST", e.orgPath("/remove"), map[string]any{"email": "viewer@example.com"}, 200)
	if rm["removed"] != true {
		t.Fatal(rm)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath(""), nil), 404, "Organization '"+e.org.String()+"' not found")
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/remove"), map[string]any{"email": "owner@example.com"}),
		400, "Can't remove only owner from org")

	q := e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{
		"maxConcurrentCrawls": 2, "maxPagesPerCrawl": 10, "storageQuota": 1000}, 200)
	if q["updated"] != true {
		t.Fatal(q)
	}
	o := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200)
	if get(o, "quotas", "maxPagesPerCrawl") != 10.0 {
		t.Fatalf("quotas: %v", o["quotas"])
	}
	if r := e.do(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"storageQuota": -1}); r.Code != 422 {
		t.Fatalf("negative quota: %d %s", r.Code, r.Body)
	}
}

func TestValidationShape(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		body, loc string
	}{
		{``, `["body"]`},
		{`{"name": 5}`, `["body","name"]`},
		{`{not json`, `["body",2]`},
	} {
		r := e.do(asAdmin, "POST", "/api/orgs/create", tc.body)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":`+tc.loc) || !strings.Contains(string(r.Body), `"msg":`) ||
			!strings.Contains(string(r.Body), `"type":`) {
			t.Errorf("body %q: %d %s", tc.body, r.Code, r.Body)
		}
	}
}

// An owner could PATCH user-role for any existing user, the superuser
// too, and so add them to the org, and the answer told which e-mails had
// accounts; the only owner could demote themselves. Now user-role changes
// only members, every non-member gets the same answer, nobody changes
// their own role, and an org always keeps an owner.
func TestMembershipRules(t *testing.T) {
	e := newEnv(t)
	members := func() map[string]any {
		return e.mustJSON(asAdmin, "GET", e.orgPath(""), nil, 200)["users"].(map[string]any)
	}
	before := members()
	var answers []string
	for _, email := range []string{"admin@example.com", "non-member@example.com", "nobody@example.com"} {
		r := e.do(asOwner, "PATCH", e.orgPath("/user-role"), map[string]any{"email": email, "role": 40})
		e.wantDetail(r, 400, "No user found for specified e-mail")
		answers = append(answers, string(r.Body))
	}
	if answers[0] != answers[1] || answers[1] != answers[2] {
		t.Fatalf("answers differ between existing and unknown e-mails: %q", answers)
	}
	if after := members(); len(after) != len(before) {
		t.Fatalf("members %v, were %v", after, before)
	}
	e.wantDetail(e.do(asOwner, "PATCH", e.orgPath("/user-role"), map[string]any{"email": "owner@example.com", "role": 10}),
		400, "Can't change own role!")
	e.wantDetail(e.do(asAdmin, "PATCH", e.orgPath("/user-role"), map[string]any{"email": "owner@example.com", "role": 10}),
		400, "Can't demote only owner of org")
	e.wantDetail(e.do(asAdmin, "POST", e.orgPath("/remove"), map[string]any{"email": "owner@example.com"}),
		400, "Can't remove only owner from org")
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/remove"), map[string]any{"email": "non-member@example.com"}),
		404, "no_such_org_user")

	// With a second owner, either may step down.
	e.mustJSON(asOwner, "PATCH", e.orgPath("/user-role"), map[string]any{"email": "crawler@example.com", "role": 40}, 200)
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/user-role"), map[string]any{"email": "owner@example.com", "role": 20}, 200)
	e.wantDetail(e.do(asAdmin, "PATCH", e.orgPath("/user-role"), map[string]any{"email": "crawler@example.com", "role": 20}),
		400, "Can't demote only owner of org")
	for id, m := range members() {
		if get(m, "email") == "owner@example.com" && get(m, "role") != 20.0 {
			t.Fatalf("owner@ is %v, want 20 (member %s)", m, id)
		}
	}
}
