package api

import (
	"strings"
	"testing"
)

func TestOrgSerializationByRole(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		as                 string
		hasUsers, hasUsage bool
	}{
		{asAdmin, true, true}, {asOwner, true, true}, {asCrawler, false, true}, {asViewer, false, false},
	} {
		o := e.mustJSON(tc.as, "GET", e.orgPath("/"), nil, 200)
		_, users := o["users"]
		_, usage := o["usage"]
		_, storage := o["storage"]
		if users != tc.hasUsers || usage != tc.hasUsage || storage {
			t.Errorf("%s sees users=%v usage=%v storage=%v: %v", tc.as, users, usage, storage, o)
		}
		for _, k := range []string{"id", "name", "default", "bytesStored", "origin", "webhookUrls", "quotas"} {
			if _, ok := o[k]; !ok {
				t.Errorf("%s: org lacks %s", tc.as, k)
			}
		}
	}
	o := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200)
	var found bool
	for _, m := range o["users"].(map[string]any) {
		if get(m, "email") == "viewer@example.com" && get(m, "role") == 10.0 && get(m, "name") == asViewer {
			found = true
		}
	}
	if !found {
		t.Fatalf("owner's view lacks the viewer: %v", o["users"])
	}
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
		"maxConcurrentCrawls": 2, "maxPagesPerCrawl": 10, "storageQuota": 1000, "maxExecMinutesPerMonth": 60}, 200)
	if q["updated"] != true {
		t.Fatal(q)
	}
	o := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200)
	if get(o, "quotas", "maxPagesPerCrawl") != 10.0 || get(o, "quotas", "maxExecMinutesPerMonth") != 60.0 {
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
