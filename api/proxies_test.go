package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/k8s"
)

// The tests' proxies: p1 is an SSH proxy with both keys, open only to
// orgs that name it; shared1 is a SOCKS proxy open to orgs that allow
// shared proxies; p0 is the default proxy of TestDefaultProxy.
var (
	proxyP1      = k8s.CrawlerProxy{ID: "p1", URL: "ssh://proxy@p1.example.net:2222", Label: "Proxy 1", CountryCode: "de", SSHPrivateKey: "PRIVATE", SSHHostPublicKey: "HOST"}
	proxyShared1 = k8s.CrawlerProxy{ID: "shared1", URL: "socks5://s1.example.net:1080", Label: "Shared 1", Description: "for all", Shared: true}
	proxyP0      = k8s.CrawlerProxy{ID: "p0", URL: "http://p0.example.net:3128", Label: "Default"}
)

// writeProxies writes list as the proxy file at path, as the chart's
// Secret would hold it.
func writeProxies(t *testing.T, path string, list ...k8s.CrawlerProxy) {
	t.Helper()
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// newProxyEnv is an env whose proxies are read from a file holding list
// (returned, so a test can change it), with defaultID the default proxy.
func newProxyEnv(t *testing.T, defaultID string, list ...k8s.CrawlerProxy) (*env, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crawler_proxies.json")
	writeProxies(t, path, list...)
	e := newEnvWith(t, func(c *Config, _ *Deps) { c.CrawlerProxies = k8s.NewProxyFile(path, defaultID) })
	return e, path
}

// allowProxies sets the default org's proxy permissions as the superuser.
func (e *env) allowProxies(shared bool, ids ...string) {
	e.t.Helper()
	if ids == nil {
		ids = []string{}
	}
	out := e.mustJSON(asAdmin, "POST", e.orgPath("/proxies"), map[string]any{"allowSharedProxies": shared, "allowedProxies": ids}, 200)
	if out["updated"] != true {
		e.t.Fatalf("POST proxies: %v", out)
	}
}

// proxyIDs are the ids GET crawler-proxies lists to role as.
func (e *env) proxyIDs(as string) []string {
	e.t.Helper()
	var ids []string
	for _, p := range e.mustJSON(as, "GET", e.orgPath("/crawlconfigs/crawler-proxies"), nil, 200)["servers"].([]any) {
		ids = append(ids, get(p, "id").(string))
	}
	return ids
}

// TestCrawlerProxiesPermissions: an org without permission lists no
// proxies and may not name one (400 proxy_not_found, nothing stored);
// POST /orgs/{oid}/proxies is for superusers only, with upstream HEAD's
// details; afterwards the list shows what the org may use, in upstream's
// shape and without key material, and the workflow is created and its
// crawl's CrawlJob names the proxy (spec §5.4, §5.5, §8.5 items 3-4).
func TestCrawlerProxiesPermissions(t *testing.T) {
	e, _ := newProxyEnv(t, "", proxyP1, proxyShared1)
	list := e.orgPath("/crawlconfigs/crawler-proxies")
	if got := e.mustJSON(asCrawler, "GET", list, nil, 200); got["default_proxy_id"] != "" || len(got["servers"].([]any)) != 0 {
		t.Fatalf("proxies of an org without permission: %v", got)
	}
	body := workflowBody("through p1", true)
	body["proxyId"] = "p1"
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), 400, "proxy_not_found")
	if n := e.workflowCount(); n != 0 || len(e.launcher.callList()) != 0 {
		t.Fatalf("a refused workflow left %d workflows, launches %v", n, e.launcher.callList())
	}

	set := e.orgPath("/proxies")
	allowP1 := map[string]any{"allowSharedProxies": false, "allowedProxies": []string{"p1"}}
	e.wantDetail(e.do(asOwner, "POST", set, allowP1), 403, detailNotAllowed)
	e.wantDetail(e.do(asCrawler, "POST", set, allowP1), 403, detailNoOwnerPermission)
	e.wantDetail(e.do(asViewer, "POST", set, allowP1), 403, detailNoOwnerPermission)
	e.wantDetail(e.do(asOutsider, "POST", set, allowP1), 404, "org_not_found")
	e.wantDetail(e.do(asAdmin, "POST", "/api/orgs/"+uuid.NewString()+"/proxies", allowP1), 404, "org_not_found")
	if r := e.do(asAnonymous, "POST", set, allowP1); r.Code != 401 {
		t.Fatalf("anonymous: %d %s", r.Code, r.Body)
	}
	e.want422(e.do(asAdmin, "POST", set, map[string]any{"allowSharedProxies": true}), "allowedProxies", "field required")
	e.want422(e.do(asAdmin, "POST", set, map[string]any{"allowedProxies": []string{}}), "allowSharedProxies", "field required")
	if got := e.proxyIDs(asCrawler); len(got) != 0 {
		t.Fatalf("refused POSTs changed the permissions: %v", got)
	}

	e.allowProxies(false, "p1")
	want := map[string]any{"default_proxy_id": "", "servers": []any{map[string]any{
		"id": "p1", "url": "ssh://proxy@p1.example.net:2222", "label": "Proxy 1", "description": "", "country_code": "de",
		"has_host_public_key": true, "has_private_key": true, "shared": false}}}
	if d := cmp.Diff(want, e.mustJSON(asCrawler, "GET", list, nil, 200)); d != "" {
		t.Fatalf("proxies (-want +got):\n%s", d)
	}
	if org := e.mustJSON(asViewer, "GET", e.orgPath(""), nil, 200); org["allowSharedProxies"] != false ||
		!cmp.Equal(org["allowedProxies"], []any{"p1"}) {
		t.Fatalf("org: allowSharedProxies %v, allowedProxies %v", org["allowSharedProxies"], org["allowedProxies"])
	}
	e.wantDetail(e.do(asViewer, "GET", list, nil), 403, detailNoCrawlPermission)
	e.wantDetail(e.do(asOutsider, "GET", list, nil), 404, "org_not_found")

	out := e.createWorkflow(asCrawler, body)
	cid, crawlID := out["id"].(string), out["run_now_job"].(string)
	if wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200); wf["proxyId"] != "p1" {
		t.Fatalf("workflow proxyId %v", wf["proxyId"])
	}
	if sp := e.launcher.launched[0].Spec; sp.ProxyID != "p1" {
		t.Fatalf("CrawlJob spec proxyId %q", sp.ProxyID)
	}
	var doc bson.M
	if err := e.store.Raw().Collection("crawls").FindOne(t.Context(), bson.M{"_id": crawlID}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc["proxyId"] != "p1" {
		t.Fatalf("crawl document proxyId %v", doc["proxyId"])
	}

	// A shared proxy needs allowSharedProxies; the superuser sees all.
	body["proxyId"], body["runNow"] = "shared1", false
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), 400, "proxy_not_found")
	e.allowProxies(true, "p1")
	if got := e.proxyIDs(asCrawler); !cmp.Equal(got, []string{"p1", "shared1"}) {
		t.Fatalf("with shared proxies: %v", got)
	}
	e.createWorkflow(asCrawler, body)
	all := "/api/orgs/all/crawlconfigs/crawler-proxies"
	if got := e.mustJSON(asAdmin, "GET", all, nil, 200)["servers"].([]any); len(got) != 2 || get(got[1], "shared") != true {
		t.Fatalf("every proxy: %v", got)
	}
	e.wantDetail(e.do(asOwner, "GET", all, nil), 403, detailNotAllowed)
}

// TestWorkflowProxyPatch: a PATCH's proxyId is checked like a create's,
// a change is a settings change, "" clears the proxy and null leaves it.
func TestWorkflowProxyPatch(t *testing.T) {
	e, _ := newProxyEnv(t, "", proxyP1, proxyShared1)
	e.allowProxies(false, "p1")
	cid := e.createWorkflow(asCrawler, workflowBody("plain", false))["id"].(string)
	path := e.orgPath("/crawlconfigs/" + cid)
	e.wantDetail(e.do(asCrawler, "PATCH", path, map[string]any{"proxyId": "shared1"}), 400, "proxy_not_found")
	e.wantDetail(e.do(asCrawler, "PATCH", path, map[string]any{"proxyId": "nope"}), 400, "proxy_not_found")
	for _, step := range []struct {
		body     string
		changed  bool
		want     any
		revision float64
	}{
		{`{"proxyId":"p1"}`, true, "p1", 1},
		{`{"proxyId":null}`, false, "p1", 1},
		{`{"proxyId":"p1"}`, false, "p1", 1},
		{`{"proxyId":""}`, true, nil, 2},
	} {
		out := e.mustJSON(asCrawler, "PATCH", path, json.RawMessage(step.body), 200)
		if out["settings_changed"] != step.changed {
			t.Errorf("%s: settings_changed %v", step.body, out["settings_changed"])
		}
		wf := e.mustJSON(asViewer, "GET", path, nil, 200)
		if wf["proxyId"] != step.want || wf["rev"] != step.revision {
			t.Errorf("%s: proxyId %v rev %v, want %v rev %v", step.body, wf["proxyId"], wf["rev"], step.want, step.revision)
		}
	}
}

// TestDefaultProxy: the default proxy is listed as default_proxy_id and
// counts as shared; a crawl of a workflow without a proxy gets it in its
// CrawlJob, whatever the org's permissions (§5.5, §8.5 item 6).
func TestDefaultProxy(t *testing.T) {
	e, _ := newProxyEnv(t, "p0", proxyP0, proxyP1)
	if got := e.mustJSON(asCrawler, "GET", e.orgPath("/crawlconfigs/crawler-proxies"), nil, 200); got["default_proxy_id"] != "p0" {
		t.Fatalf("default_proxy_id %v", got["default_proxy_id"])
	}
	_, crawlID := e.startCrawl(asCrawler, "no proxy")
	if sp := e.launcher.launched[0].Spec; sp.ID != crawlID || sp.ProxyID != "p0" {
		t.Fatalf("CrawlJob spec of %s: proxyId %q", sp.ID, sp.ProxyID)
	}
	e.allowProxies(true)
	if got := e.mustJSON(asCrawler, "GET", e.orgPath("/crawlconfigs/crawler-proxies"), nil, 200)["servers"].([]any); len(got) != 1 ||
		get(got[0], "id") != "p0" || get(got[0], "shared") != true {
		t.Fatalf("shared proxies with a default one: %v", got)
	}
}

// TestProfileProxy: a profile browser's proxy must be one the org may
// use (404 proxy_not_found); the profile records it; a workflow with the
// profile stores no proxy of its own, shows the profile's and its crawls
// go through it, checked again at each run (§5.5, §8.5 item 7).
func TestProfileProxy(t *testing.T) {
	e, _ := newProxyEnv(t, "", proxyP1, proxyShared1)
	e.pod.set(func(p *fakeBrowserPod) { p.up = true })
	browsers := e.orgPath("/profiles/browser")
	e.wantDetail(e.do(asCrawler, "POST", browsers, map[string]any{"url": "https://example.com/", "proxyId": "p1"}), 404, "proxy_not_found")
	e.allowProxies(false, "p1")
	bid := e.launchBrowser(asCrawler, map[string]any{"url": "https://example.com/", "proxyId": "p1"})
	if pj := e.browsers.job(bid); pj.Spec.ProxyID != "p1" || pj.Labels[k8s.LabelProxyID] != "p1" {
		t.Fatalf("profile job: spec proxyId %q, labels %v", pj.Spec.ProxyID, pj.Labels)
	}
	pid := e.mustJSON(asCrawler, "POST", e.orgPath("/profiles"), map[string]any{"browserid": bid, "name": "via p1"}, 200)["id"].(string)
	if p := e.mustJSON(asCrawler, "GET", e.orgPath("/profiles/"+pid), nil, 200); p["proxyId"] != "p1" {
		t.Fatalf("profile proxyId %v", p["proxyId"])
	}

	body := workflowBody("with profile", false)
	body["profileid"], body["proxyId"] = pid, "shared1"
	cid := e.createWorkflow(asCrawler, body)["id"].(string)
	var doc bson.M
	if err := e.store.Raw().Collection("crawl_configs").FindOne(t.Context(), bson.M{"_id": uuid.MustParse(cid)}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if v, ok := doc["proxyId"]; !ok || v != nil {
		t.Fatalf("stored proxyId of a workflow with a profile: %v (present %v)", v, ok)
	}
	if wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200); wf["proxyId"] != "p1" {
		t.Fatalf("workflow with a profile shows proxyId %v", wf["proxyId"])
	}
	run := e.orgPath("/crawlconfigs/" + cid + "/run")
	e.mustJSON(asCrawler, "POST", run, nil, 200)
	if sp := e.launcher.launched[0].Spec; sp.ProxyID != "p1" {
		t.Fatalf("CrawlJob spec proxyId %q, want the profile's", sp.ProxyID)
	}

	// Without the permission, a PATCH to the profile and a run are refused.
	e.allowProxies(true)
	other := e.createWorkflow(asCrawler, workflowBody("other", false))["id"].(string)
	e.wantDetail(e.do(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+other), map[string]any{"profileid": pid}), 400, "proxy_not_found")
	for _, id := range e.crawlsOf(cid) {
		e.setState(get(id, "id").(string), "complete")
	}
	e.wantDetail(e.do(asCrawler, "POST", run, nil), 400, "proxy_not_found")
}

// TestRemovedProxy: once a proxy leaves the configuration file, the next
// run of a workflow through it is 400 proxy_not_found and records no
// crawl, and its scheduled run is skipped (§5.3, §8.5 item 8).
func TestRemovedProxy(t *testing.T) {
	e, path := newProxyEnv(t, "", proxyP1, proxyShared1)
	e.allowProxies(false, "p1")
	body := workflowBody("through p1", false)
	body["proxyId"], body["schedule"] = "p1", "0 0 1 1 *"
	cid := e.createWorkflow(asCrawler, body)["id"].(string)

	writeProxies(t, path, proxyShared1)
	if got := e.proxyIDs(asCrawler); len(got) != 0 {
		t.Fatalf("a removed proxy is listed: %v", got)
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil), 400, "proxy_not_found")
	e.srv.Scheduler().fire(e.org, uuid.MustParse(cid))
	if crawls := e.crawlsOf(cid); len(crawls) != 0 || len(e.launcher.callList()) != 0 {
		t.Fatalf("crawls through a removed proxy: %v, launches %v", crawls, e.launcher.callList())
	}

	// Configured again, the scheduled run starts.
	writeProxies(t, path, proxyShared1, proxyP1)
	e.srv.Scheduler().fire(e.org, uuid.MustParse(cid))
	if crawls := e.crawlsOf(cid); len(crawls) != 1 || e.launcher.launched[0].Spec.ProxyID != "p1" {
		t.Fatalf("scheduled crawl after the proxy came back: %v", crawls)
	}
}
