package api

import (
	"context"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// launchBrowser starts a profile browser in the default org as role.
func (e *env) launchBrowser(as string, body map[string]any) string {
	e.t.Helper()
	out := e.mustJSON(as, "POST", e.orgPath("/profiles/browser"), body, 200)
	id, _ := out["browserid"].(string)
	if !regexp.MustCompile(`^prf-[0-9a-f]{10}$`).MatchString(id) {
		e.t.Fatalf("browserid %v", out)
	}
	return id
}

func (e *env) bytesStored() int64 {
	e.t.Helper()
	o, err := e.store.GetOrg(context.Background(), e.org)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.BytesStored
}

// TestProfileBrowser: launch, the waiting answers while the pod is not
// up, then ping, navigate, the VNC access and delete.
func TestProfileBrowser(t *testing.T) {
	e := newEnv(t)
	browsers := e.orgPath("/profiles/browser")
	for _, bad := range []map[string]any{{}, {"url": "http://localhost:8080/x"}, {"url": "ftp://example.com/"},
		{"url": "https://example.com/", "profileId": "not-a-uuid"}, {"url": "https://example.com/", "profileId": "9b3f8d5e-0000-1000-8000-000000000000"}} {
		if r := e.do(asCrawler, "POST", browsers, bad); r.Code != 422 {
			t.Errorf("%v: %d %s", bad, r.Code, r.Body)
		}
	}
	e.wantDetail(e.do(asCrawler, "POST", browsers, map[string]any{"url": "https://example.com/", "profileId": uuid.NewString()}),
		400, "invalid_base_profile")
	// An IP literal needs no top-level domain (pydantic's HttpUrl); internal
	// ones are refused in internalurls_test.go.
	e.launchBrowser(asCrawler, map[string]any{"url": "http://93.184.215.14:8080/x"})

	id := e.launchBrowser(asCrawler, map[string]any{"url": "https://example.com/login"})
	pj := e.browsers.job(id)
	crawler, _ := e.store.GetUserByEmail(context.Background(), asCrawler+"@example.com")
	if pj.Labels["btrix.org"] != e.org.String() || pj.Labels["btrix.user"] != crawler.ID.String() ||
		pj.Spec.StoragePath != e.org.String()+"/profiles/" || pj.Spec.StorageName != "default" ||
		pj.Spec.StartURL != "https://example.com/login" || len(pj.Spec.VNCPassword) != 32 || pj.Spec.ProfileFilename != "" {
		t.Fatalf("profile job %+v %+v", pj.Labels, pj.Spec)
	}
	path := func(rest string) string { return browsers + "/" + id + rest }

	// Not up yet: upstream's 200 "waiting_for_browser"; the GET the
	// frontend polls keeps the browser alive meanwhile.
	e.wantDetail(e.do(asCrawler, "GET", path(""), nil), 200, "waiting_for_browser")
	e.wantDetail(e.do(asCrawler, "POST", path("/ping"), nil), 200, "waiting_for_browser")
	if n := e.browsers.pingCount(id); n != 2 {
		t.Fatalf("expiry extended %d times, want 2", n)
	}

	e.pod.set(func(p *fakeBrowserPod) { p.up = true })
	got := e.mustJSON(asCrawler, "GET", path(""), nil, 200)
	token := e.tokens[asCrawler]
	wantPath := "browser/" + id + "/ws?oid=" + e.org.String() + "&auth_bearer=" + token
	if got["password"] != "vnc-secret" || got["path"] != wantPath || got["oid"] != e.org.String() ||
		got["auth_bearer"] != token || got["scale"] != 0.75 {
		t.Fatalf("browser access: %v", got)
	}
	u, err := url.Parse(got["url"].(string))
	if err != nil || u.Path != "/browser/"+id+"/" || !strings.HasPrefix(u.RawQuery, "path=") ||
		u.Query().Get("path") != wantPath || u.Query().Get("password") != "vnc-secret" || u.Query().Get("scale") != "0.75" {
		t.Fatalf("browser url %v", got["url"])
	}
	ping := e.mustJSON(asCrawler, "POST", path("/ping"), nil, 200)
	if ping["success"] != true || !slices.Equal(toStrings(ping["origins"]), []string{"https://example.com"}) {
		t.Fatalf("ping: %v", ping)
	}
	e.mustJSON(asCrawler, "POST", path("/navigate"), map[string]any{"url": "https://example.org/account"}, 200)
	if r := e.do(asCrawler, "POST", path("/navigate"), map[string]any{"url": "not a url"}); r.Code != 422 {
		t.Fatalf("bad navigate url: %d", r.Code)
	}
	e.pod.set(func(p *fakeBrowserPod) {
		if !slices.Equal(p.navigated, []string{"https://example.org/account"}) {
			t.Errorf("navigated %v", p.navigated)
		}
	})
	for _, h := range e.pod.hostsSeen() {
		if h != browserHost(id) {
			t.Fatalf("called the pod as %s, want %s", h, browserHost(id))
		}
	}
	e.mustJSON(asCrawler, "GET", path("/access"), nil, 200)

	// Other orgs' browsers and unknown ids are not found.
	others := get(e.mustJSON(asOutsider, "GET", "/api/orgs", nil, 200)["items"].([]any)[0], "id").(string)
	theirs := e.mustJSON(asOutsider, "POST", "/api/orgs/"+others+"/profiles/browser", map[string]any{"url": "https://example.com/"}, 200)["browserid"].(string)
	for _, bad := range []string{theirs, "prf-0000000000", "nonsense"} {
		e.wantDetail(e.do(asCrawler, "GET", browsers+"/"+bad+"/access", nil), 404, "no_such_browser")
	}

	e.mustJSON(asCrawler, "DELETE", path(""), nil, 200)
	e.wantDetail(e.do(asCrawler, "DELETE", path(""), nil), 404, "no_such_browser")
}

// TestProfiles: commit a browser, read, rename, re-commit, use it in a
// workflow and its crawls, and delete it once no workflow uses it.
func TestProfiles(t *testing.T) {
	e := newEnv(t)
	e.pod.set(func(p *fakeBrowserPod) { p.up = true })
	profiles := e.orgPath("/profiles")
	id := e.launchBrowser(asCrawler, map[string]any{"url": "https://example.com/"})

	if r := e.do(asCrawler, "POST", profiles, map[string]any{"browserid": id}); r.Code != 422 {
		t.Fatalf("no name: %d", r.Code)
	}
	e.wantDetail(e.do(asCrawler, "POST", profiles, map[string]any{"name": "x"}), 404, "no_such_browser")
	e.pod.set(func(p *fakeBrowserPod) { p.failSave = true })
	e.wantDetail(e.do(asCrawler, "POST", profiles, map[string]any{"browserid": id, "name": "x"}), 400, "browser_not_valid")
	e.pod.set(func(p *fakeBrowserPod) { p.failSave = false })

	added := e.mustJSON(asOwner, "POST", profiles, map[string]any{"browserid": id, "name": "My Profile"}, 200)
	pid, _ := added["id"].(string)
	if added["added"] != true || added["storageQuotaReached"] != false || pid == "" {
		t.Fatalf("commit: %v", added)
	}
	if e.browsers.job(id) != nil {
		t.Fatal("the browser was not removed after its profile was saved")
	}
	crawler, _ := e.store.GetUserByEmail(context.Background(), asCrawler+"@example.com")
	p := e.mustJSON(asCrawler, "GET", profiles+"/"+pid, nil, 200)
	if p["name"] != "My Profile" || p["description"] != "" || p["userid"] != crawler.ID.String() || p["oid"] != e.org.String() ||
		get(p, "resource", "filename") != "profile-"+pid+".tar.gz" || get(p, "resource", "size") != 1234.0 ||
		get(p, "resource", "def_storage_name") != "default" || len(p["crawlconfigs"].([]any)) != 0 ||
		!slices.Equal(toStrings(p["origins"]), []string{"https://example.com"}) {
		t.Fatalf("profile %v", p)
	}
	if n := e.bytesStored(); n != 1234 {
		t.Fatalf("bytesStored %d", n)
	}
	e.wantDetail(e.do(asViewer, "GET", profiles, nil), 403, detailNoCrawlPermission)
	list := e.mustJSON(asCrawler, "GET", profiles+"?userid="+crawler.ID.String(), nil, 200)
	if list["total"] != 1.0 {
		t.Fatalf("profiles of the launcher: %v", list)
	}
	if list := e.mustJSON(asCrawler, "GET", profiles+"?userid="+uuid.NewString(), nil, 200); list["total"] != 0.0 {
		t.Fatalf("profiles of nobody: %v", list)
	}

	// Metadata, then a re-commit into the same profile: the size is
	// replaced, not added (upstream added it).
	e.mustJSON(asCrawler, "PATCH", profiles+"/"+pid, map[string]any{"name": "Renamed", "description": "d"}, 200)
	e.wantDetail(e.do(asCrawler, "PATCH", profiles+"/"+uuid.NewString(), map[string]any{"name": "x"}), 404, "profile_not_found")
	again := e.launchBrowser(asCrawler, map[string]any{"url": "https://example.com/", "profileId": pid})
	if pj := e.browsers.job(again); pj.Spec.ProfileFilename != "profile-"+pid+".tar.gz" || pj.Labels["btrix.baseprofile"] != pid {
		t.Fatalf("browser from a profile: %+v %v", pj.Spec, pj.Labels)
	}
	e.mustJSON(asCrawler, "PATCH", profiles+"/"+pid, map[string]any{"browserid": again, "name": "Recommitted"}, 200)
	if n := e.bytesStored(); n != 1234 {
		t.Fatalf("bytesStored after re-commit %d", n)
	}
	if p := e.mustJSON(asCrawler, "GET", profiles+"/"+pid, nil, 200); p["name"] != "Recommitted" || p["description"] != "" {
		t.Fatalf("after re-commit %v", p)
	}

	// Workflows and crawls with the profile.
	body := workflowBody("logged in", true)
	body["profileid"] = uuid.NewString()
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), 400, "invalid_profile_id")
	body["profileid"] = pid
	wf := e.createWorkflow(asCrawler, body)
	cid, crawlID := wf["id"].(string), wf["run_now_job"].(string)
	if spec := e.launcher.launched[len(e.launcher.launched)-1].Spec; spec.ProfileFilename != "profile-"+pid+".tar.gz" {
		t.Fatalf("crawl job profile %q", spec.ProfileFilename)
	}
	if w := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200); w["profileid"] != pid || w["profileName"] != "Recommitted" {
		t.Fatalf("workflow %v %v", w["profileid"], w["profileName"])
	}
	if c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+crawlID), nil, 200); c["profileName"] != "Recommitted" {
		t.Fatalf("crawl profileName %v", c["profileName"])
	}
	if refs := e.mustJSON(asCrawler, "GET", profiles+"/"+pid, nil, 200)["crawlconfigs"].([]any); len(refs) != 1 ||
		get(refs[0], "id") != cid || get(refs[0], "name") != "logged in" {
		t.Fatalf("profile's workflows %v", refs)
	}
	inUse := e.mustJSON(asCrawler, "DELETE", profiles+"/"+pid, nil, 200)
	if inUse["error"] != "in_use" || len(inUse["crawlconfigs"].([]any)) != 1 {
		t.Fatalf("delete in use: %v", inUse)
	}
	upd := e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid), map[string]any{"profileid": ""}, 200)
	if upd["settings_changed"] != true {
		t.Fatalf("clearing the profile: %v", upd)
	}
	if w := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200); w["profileid"] != nil || w["profileName"] != nil {
		t.Fatalf("workflow after clearing %v", w)
	}

	deleted := e.mustJSON(asCrawler, "DELETE", profiles+"/"+pid, nil, 200)
	if deleted["success"] != true || deleted["storageQuotaReached"] != false {
		t.Fatalf("delete: %v", deleted)
	}
	e.wantDetail(e.do(asCrawler, "GET", profiles+"/"+pid, nil), 404, "profile_not_found")
	if n := e.bytesStored(); n != 0 {
		t.Fatalf("bytesStored after delete %d", n)
	}
	if c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+crawlID), nil, 200); c["profileName"] != nil {
		t.Fatalf("profileName of a deleted profile %v", c["profileName"])
	}
	if r := e.do(asCrawler, "GET", profiles+"/not-a-uuid", nil); r.Code != 422 {
		t.Fatalf("malformed profile id: %d", r.Code)
	}
}

// TestProfileQuota: a full org cannot save a profile, and the browser is
// not even asked to upload one.
func TestProfileQuota(t *testing.T) {
	e := newEnv(t)
	e.pod.set(func(p *fakeBrowserPod) { p.up = true })
	id := e.launchBrowser(asCrawler, map[string]any{"url": "https://example.com/"})
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"storageQuota": 1}, 200)
	if err := e.store.SaveProfile(context.Background(), &store.Profile{ID: uuid.New(), OID: e.org, Name: "big",
		Resource: store.ProfileFile{Filename: "x", Size: 10}}, false); err != nil {
		t.Fatal(err)
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/profiles"), map[string]any{"browserid": id, "name": "n"}), 403, "storage_quota_reached")
	e.pod.set(func(p *fakeBrowserPod) {
		if len(p.saved) != 0 {
			t.Errorf("browser asked to save %v", p.saved)
		}
	})
}

// TestProfileNamesAreOrgScoped: a workflow or crawl that names another
// org's profile (the API never lets one: this writes it to the store)
// shows no name for it, also in the superuser's list of every org's
// crawls, where that org's own crawl shows it.
func TestProfileNamesAreOrgScoped(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	other := get(e.mustJSON(asOutsider, "GET", "/api/orgs", nil, 200)["items"].([]any)[0], "id").(string)
	theirs := &store.Profile{ID: uuid.New(), OID: uuid.MustParse(other), Name: "theirs", Created: e.srv.now()}
	if err := e.store.SaveProfile(ctx, theirs, false); err != nil {
		t.Fatal(err)
	}
	body := workflowBody("their crawl", true)
	body["profileid"] = theirs.ID.String()
	theirCrawl := e.mustJSON(asOutsider, "POST", "/api/orgs/"+other+"/crawlconfigs/", body, 200)["run_now_job"].(string)

	cid := uuid.MustParse(e.createWorkflow(asCrawler, workflowBody("ours", false))["id"].(string))
	wf, err := e.store.UpdateCrawlConfig(ctx, e.org, cid, store.CrawlConfigUpdate{ProfileID: store.Some(&theirs.ID)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ours := newCrawl(wf, wf.Config, wf.CreatedBy, true, e.srv.now())
	ours.ID = "our-crawl"
	if err := e.store.AddCrawl(ctx, ours); err != nil {
		t.Fatal(err)
	}

	if w := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid.String()), nil, 200); w["profileName"] != nil {
		t.Errorf("workflow shows another org's profile name %v", w["profileName"])
	}
	if c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/our-crawl"), nil, 200); c["profileName"] != nil {
		t.Errorf("crawl shows another org's profile name %v", c["profileName"])
	}
	names := map[string]any{}
	for _, it := range e.mustJSON(asAdmin, "GET", "/api/orgs/all/crawls?runningOnly=false", nil, 200)["items"].([]any) {
		names[get(it, "id").(string)] = get(it, "profileName")
	}
	if names["our-crawl"] != nil || names[theirCrawl] != "theirs" {
		t.Errorf("profile names in every org's crawls: %v", names)
	}
}
