package api

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestCrawlerChannelsList: GET /crawlconfigs/crawler-channels answers the
// configured list in order, a pull policy left to the default as null,
// to crawler members only (spec §5.2, §8.5 item 1).
func TestCrawlerChannelsList(t *testing.T) {
	e := newEnv(t)
	path := e.orgPath("/crawlconfigs/crawler-channels")
	got := e.mustJSON(asCrawler, "GET", path, nil, 200)
	want := map[string]any{"channels": []any{
		map[string]any{"id": "default", "image": "webrecorder/browsertrix-crawler:latest", "imagePullPolicy": "Always"},
		map[string]any{"id": "test", "image": testChannelImage, "imagePullPolicy": nil},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("channels (-want +got):\n%s", d)
	}
	e.mustJSON(asOwner, "GET", path, nil, 200)
	e.wantDetail(e.do(asViewer, "GET", path, nil), 403, detailNoCrawlPermission)
	if r := e.do(asOutsider, "GET", path, nil); r.Code != 404 {
		t.Fatalf("non-member: %d %s", r.Code, r.Body)
	}
	if r := e.do(asAnonymous, "GET", path, nil); r.Code != 401 {
		t.Fatalf("anonymous: %d %s", r.Code, r.Body)
	}
}

// TestWorkflowCrawlerChannel: a workflow's crawlerChannel defaults to
// "default", an unknown one is 404 crawler_not_found before anything is
// stored, and a crawl records its channel and that channel's image, which
// its CrawlJob names (§5.2, §8.5 item 2).
func TestWorkflowCrawlerChannel(t *testing.T) {
	e := newEnv(t)
	plain := e.createWorkflow(asCrawler, workflowBody("plain", false))["id"].(string)
	if wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+plain), nil, 200); wf["crawlerChannel"] != "default" {
		t.Fatalf("default channel: %v", wf["crawlerChannel"])
	}

	body := workflowBody("nope", true)
	body["crawlerChannel"] = "nope"
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"), body), 404, "crawler_not_found")
	if list := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs"), nil, 200); list["total"] != 1.0 {
		t.Fatalf("a refused workflow was stored: %v", list)
	}
	if n := len(e.launcher.callList()); n != 0 {
		t.Fatalf("a refused workflow launched: %v", e.launcher.callList())
	}

	body = workflowBody("on test", true)
	body["crawlerChannel"] = "test"
	out := e.createWorkflow(asCrawler, body)
	cid, crawlID := out["id"].(string), out["run_now_job"].(string)
	crawl := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+crawlID), nil, 200)
	if crawl["crawlerChannel"] != "test" || crawl["image"] != testChannelImage {
		t.Fatalf("crawl: channel %v, image %v", crawl["crawlerChannel"], crawl["image"])
	}
	var doc bson.M
	if err := e.store.Raw().Collection("crawls").FindOne(t.Context(), bson.M{"_id": crawlID}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc["crawlerChannel"] != "test" || doc["image"] != testChannelImage {
		t.Fatalf("crawl document: channel %v, image %v", doc["crawlerChannel"], doc["image"])
	}
	if sp := e.launcher.launched[0].Spec; sp.CrawlerChannel != "test" {
		t.Fatalf("CrawlJob spec channel %q", sp.CrawlerChannel)
	}
	list := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs?name=on+test"), nil, 200)
	if items := list["items"].([]any); len(items) != 1 || get(items[0], "crawlerChannel") != "test" {
		t.Fatalf("workflow list: %v", list)
	}

	// PATCH checks the channel too; a change is a settings change whose
	// revision keeps the old channel.
	wfPath := e.orgPath("/crawlconfigs/" + cid)
	e.wantDetail(e.do(asCrawler, "PATCH", wfPath, map[string]any{"crawlerChannel": "nope"}), 404, "crawler_not_found")
	same := e.mustJSON(asCrawler, "PATCH", wfPath, map[string]any{"crawlerChannel": "test"}, 200)
	if same["settings_changed"] != false {
		t.Fatalf("same channel: %v", same)
	}
	changed := e.mustJSON(asCrawler, "PATCH", wfPath, map[string]any{"crawlerChannel": "default"}, 200)
	if changed["settings_changed"] != true {
		t.Fatalf("channel change: %v", changed)
	}
	if wf := e.mustJSON(asViewer, "GET", wfPath, nil, 200); wf["crawlerChannel"] != "default" {
		t.Fatalf("after PATCH: %v", wf["crawlerChannel"])
	}
	revs := e.mustJSON(asViewer, "GET", wfPath+"/revs", nil, 200)
	if items := revs["items"].([]any); len(items) != 1 || get(items[0], "crawlerChannel") != "test" {
		t.Fatalf("revisions: %v", revs)
	}

	// A crawl launched now runs the workflow's new channel.
	e.setState(crawlID, "complete")
	again := e.mustJSON(asCrawler, "POST", wfPath+"/run", nil, 200)["started"].(string)
	crawl = e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+again), nil, 200)
	if crawl["crawlerChannel"] != "default" || crawl["image"] != "webrecorder/browsertrix-crawler:latest" {
		t.Fatalf("second crawl: channel %v, image %v", crawl["crawlerChannel"], crawl["image"])
	}
}

// TestCrawlerChannelBadInput: wrong types, null and "" are clear 4xx,
// never 500.
func TestCrawlerChannelBadInput(t *testing.T) {
	e := newEnv(t)
	cid := e.createWorkflow(asCrawler, workflowBody("wf", false))["id"].(string)
	seeds := `"config":{"seeds":[{"url":"https://e.com/"}]}`
	for name, tc := range map[string]struct {
		method, path, body string
		status             int
	}{
		"CreateNumber": {"POST", "/crawlconfigs/", `{"name":"x","crawlerChannel":5,` + seeds + `}`, 422},
		"CreateList":   {"POST", "/crawlconfigs/", `{"name":"x","crawlerChannel":["test"],` + seeds + `}`, 422},
		"CreateNull":   {"POST", "/crawlconfigs/", `{"name":"x","crawlerChannel":null,` + seeds + `}`, 422},
		"CreateEmpty":  {"POST", "/crawlconfigs/", `{"name":"x","crawlerChannel":"",` + seeds + `}`, 404},
		"CreateCase":   {"POST", "/crawlconfigs/", `{"name":"x","crawlerChannel":"Default",` + seeds + `}`, 404},
		"PatchNumber":  {"PATCH", "/crawlconfigs/" + cid, `{"crawlerChannel":5}`, 422},
		"PatchNull":    {"PATCH", "/crawlconfigs/" + cid, `{"crawlerChannel":null}`, 422},
		"PatchEmpty":   {"PATCH", "/crawlconfigs/" + cid, `{"crawlerChannel":""}`, 404},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do(asCrawler, tc.method, e.orgPath(tc.path), tc.body)
			if r.Code != tc.status {
				t.Fatalf("%d %s, want %d", r.Code, r.Body, tc.status)
			}
			if tc.status == 422 && !strings.Contains(string(r.Body), `"loc":["body","crawlerChannel"]`) {
				t.Fatalf("422 names no field: %s", r.Body)
			}
			if tc.status == 404 {
				e.wantDetail(r, 404, "crawler_not_found")
			}
		})
	}
}

// TestRunWithRemovedChannel: a workflow whose channel left the
// configuration is 404 crawler_not_found at run, with no crawl recorded;
// one stored before channels existed runs on the default channel.
func TestRunWithRemovedChannel(t *testing.T) {
	e := newEnv(t)
	gone := e.createWorkflow(asCrawler, workflowBody("gone", false))["id"].(string)
	old := e.createWorkflow(asCrawler, workflowBody("old", false))["id"].(string)
	coll := e.store.Raw().Collection("crawl_configs")
	if _, err := coll.UpdateByID(t.Context(), uuid.MustParse(gone), bson.M{"$set": bson.M{"crawlerChannel": "retired"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateByID(t.Context(), uuid.MustParse(old), bson.M{"$unset": bson.M{"crawlerChannel": ""}}); err != nil {
		t.Fatal(err)
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"+gone+"/run"), nil), 404, "crawler_not_found")
	if list := e.mustJSON(asViewer, "GET", e.orgPath("/crawls?cid="+gone), nil, 200); list["total"] != 0.0 {
		t.Fatalf("crawls of a workflow that could not run: %v", list)
	}

	if wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+old), nil, 200); wf["crawlerChannel"] != "default" {
		t.Fatalf("workflow from before channels: %v", wf["crawlerChannel"])
	}
	id := e.mustJSON(asCrawler, "POST", e.orgPath("/crawlconfigs/"+old+"/run"), nil, 200)["started"].(string)
	crawl := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)
	if crawl["crawlerChannel"] != "default" || crawl["image"] != "webrecorder/browsertrix-crawler:latest" {
		t.Fatalf("crawl of a workflow from before channels: %v %v", crawl["crawlerChannel"], crawl["image"])
	}
}

// TestProfileBrowserCrawlerChannel: a profile browser's crawlerChannel
// must name a channel (404 crawler_not_found, nothing launched), and
// null or a non-string is 422.
func TestProfileBrowserCrawlerChannel(t *testing.T) {
	e := newEnv(t)
	browsers := e.orgPath("/profiles/browser")
	e.wantDetail(e.do(asCrawler, "POST", browsers, map[string]any{"url": "https://example.com/", "crawlerChannel": "nope"}),
		404, "crawler_not_found")
	for _, bad := range []string{`null`, `5`, `{}`} {
		r := e.do(asCrawler, "POST", browsers, `{"url":"https://example.com/","crawlerChannel":`+bad+`}`)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","crawlerChannel"]`) {
			t.Errorf("crawlerChannel %s: %d %s", bad, r.Code, r.Body)
		}
	}
	e.browsers.mu.Lock()
	launched := len(e.browsers.jobs)
	e.browsers.mu.Unlock()
	if launched != 0 {
		t.Fatalf("%d browsers launched for refused requests", launched)
	}
	e.launchBrowser(asCrawler, map[string]any{"url": "https://example.com/", "crawlerChannel": "test"})
	e.launchBrowser(asCrawler, map[string]any{"url": "https://example.com/"})
}
