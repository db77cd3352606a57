package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestCrawlShape(t *testing.T) {
	e := newEnv(t)
	_, id := e.startCrawl(asCrawler, "wf")
	c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id+"/"), nil, 200)
	for _, k := range []string{"id", "type", "userid", "userName", "oid", "cid", "cid_rev", "name", "description",
		"started", "finished", "state", "stats", "fileSize", "fileCount", "tags", "errors", "collectionIds",
		"config", "firstSeed", "seedCount", "profileName", "stopping", "manual"} {
		if _, ok := c[k]; !ok {
			t.Errorf("crawl lacks %s", k)
		}
	}
	if c["errors"] != nil || c["type"] != "crawl" || c["seedCount"] != 1.0 || len(c["started"].(string)) != len("2023-09-11T17:38:04") {
		t.Fatalf("crawl: %v", c)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawls/nope"), nil), 404, "crawl_not_found")

	rp := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id+"/replay.json"), nil, 200)
	if rp["resources"] == nil || rp["collections"] == nil || rp["id"] != id {
		t.Fatalf("replay.json: %v", rp)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawls/nope/replay.json"), nil), 404, "Crawl not found: nope")

	upd := e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawls/"+id), map[string]any{"name": "renamed", "tags": []string{"t"}}, 200)
	if upd["updated"] != true {
		t.Fatal(upd)
	}
	c = e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)
	if c["name"] != "renamed" || !slices.Equal(toStrings(c["tags"]), []string{"t"}) {
		t.Fatalf("after patch: %v", c)
	}
	e.wantDetail(e.do(asCrawler, "PATCH", e.orgPath("/crawls/"+id), map[string]any{}), 400, "no_update_data")
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func TestListCrawls(t *testing.T) {
	e := newEnv(t)
	cidA, a := e.startCrawl(asCrawler, "A")
	_, b := e.startCrawl(asOwner, "B")
	// Both started this second; make A the older for the sort checks.
	if _, err := e.store.Raw().Collection("crawls").UpdateByID(t.Context(), a,
		map[string]any{"$set": map[string]any{"started": time.Now().UTC().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	e.setState(b, "complete")
	ids := func(path string) []string {
		t.Helper()
		out := e.mustJSON(asViewer, "GET", e.orgPath(path), nil, 200)
		var got []string
		for _, it := range out["items"].([]any) {
			got = append(got, get(it, "id").(string))
		}
		return got
	}
	for path, want := range map[string][]string{
		"/crawls?cid=" + cidA:                                        {a},
		"/crawls?state=complete":                                     {b},
		"/crawls?state=starting,bogus":                               {a},
		"/crawls?sortBy=started&sortDirection=1":                     {a, b},
		"/crawls?name=B":                                             {b},
		"/all-crawls?crawlType=crawl&sortBy=started&sortDirection=1": {a, b},
	} {
		if got := ids(path); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawls?sortBy=size"), nil), 400, "invalid_sort_by")
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawls?sortDirection=0"), nil), 400, "invalid_sort_direction")
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/all-crawls?crawlType=video"), nil), 400, "invalid_crawl_type")
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/all-crawls?sortBy=firstSeed"), nil), 400, "invalid_sort_by")
	sv := e.mustJSON(asViewer, "GET", e.orgPath("/all-crawls/search-values"), nil, 200)
	if !slices.Equal(toStrings(sv["names"]), []string{"A", "B"}) {
		t.Errorf("search values: %v", sv)
	}
	one := e.mustJSON(asCrawler, "GET", e.orgPath("/all-crawls/"+b), nil, 200)
	if one["resources"] == nil {
		t.Errorf("all-crawls get: %v", one)
	}

	// The superuser's cross-org list shows running crawls unless told not to.
	e.wantDetail(e.do(asOwner, "GET", "/api/orgs/all/crawls", nil), 403, "Not Allowed")
	run := e.mustJSON(asAdmin, "GET", "/api/orgs/all/crawls", nil, 200)
	all := e.mustJSON(asAdmin, "GET", "/api/orgs/all/crawls?runningOnly=0", nil, 200)
	if run["total"] != 1.0 || all["total"] != 2.0 {
		t.Fatalf("runningOnly: %v / %v", run["total"], all["total"])
	}
	e.mustJSON(asAdmin, "GET", "/api/orgs/all/crawls/"+a, nil, 200)
	e.mustJSON(asAdmin, "GET", "/api/orgs/all/crawls/"+a+"/replay.json", nil, 200)
	e.mustJSON(asAdmin, "GET", "/api/orgs/all/all-crawls/"+b+"/replay.json", nil, 200)
}

func TestCancelAndStop(t *testing.T) {
	e := newEnv(t)
	_, id := e.startCrawl(asCrawler, "wf")
	out := e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/cancel"), nil, 200)
	if out["success"] != true || !slices.Contains(e.launcher.callList(), "cancel "+id) {
		t.Fatalf("cancel: %v %v", out, e.launcher.callList())
	}

	// Stop: the spec is patched and the crawl records it.
	_, id2 := e.startCrawl(asCrawler, "wf2")
	e.setState(id2, "running")
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id2+"/stop"), nil, 200)
	c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id2), nil, 200)
	if c["stopping"] != true {
		t.Fatalf("stopping not recorded: %v", c)
	}
	wfs := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs?name=wf2"), nil, 200)
	if get(wfs["items"].([]any)[0], "lastCrawlStopping") != true {
		t.Fatalf("workflow lastCrawlStopping: %v", wfs)
	}

	// Already finished: success without touching Kubernetes.
	e.setState(id2, "partial_complete")
	before := len(e.launcher.callList())
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id2+"/stop"), nil, 200)
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id2+"/cancel"), nil, 200)
	if len(e.launcher.callList()) != before {
		t.Fatalf("finished crawl reached the launcher: %v", e.launcher.callList()[before:])
	}

	// CrawlJob gone while the document says running: canceled by the API.
	for _, action := range []string{"cancel", "stop"} {
		_, id3 := e.startCrawl(asCrawler, "gone-"+action)
		e.launcher.setGone(id3)
		e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id3+"/"+action), nil, 200)
		c = e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id3), nil, 200)
		if c["state"] != "canceled" || c["finished"] == nil {
			t.Fatalf("%s of a gone CrawlJob: %v", action, c)
		}
		wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+c["cid"].(string)), nil, 200)
		if wf["isCrawlRunning"] != false || wf["crawlSuccessfulCount"] != 0.0 {
			t.Fatalf("workflow after %s: %v", action, wf)
		}
	}

	e.launcher.fail = errTest
	_, id4 := func() (string, string) { e.launcher.fail = nil; return e.startCrawl(asCrawler, "broken") }()
	e.launcher.fail = errTest
	r := e.do(asCrawler, "POST", e.orgPath("/crawls/"+id4+"/stop"), nil)
	if r.Code != 400 || !strings.Contains(string(r.Body), `"error"`) {
		t.Fatalf("failed stop: %d %s", r.Code, r.Body)
	}
}

func TestScaleCrawl(t *testing.T) {
	e := newEnv(t)
	cid, id := e.startCrawl(asCrawler, "wf")
	out := e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/scale"), map[string]any{"scale": 3}, 200)
	if out["scaled"] != 3.0 || !slices.Contains(e.launcher.callList(), "scale "+id+" 3") {
		t.Fatalf("scale: %v %v", out, e.launcher.callList())
	}
	wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	revs := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid+"/revs"), nil, 200)
	if wf["scale"] != 3.0 || revs["total"] != 1.0 {
		t.Fatalf("workflow scale %v, revisions %v", wf["scale"], revs["total"])
	}
	for _, n := range []int{0, 4} {
		if r := e.do(asCrawler, "POST", e.orgPath("/crawls/"+id+"/scale"), map[string]any{"scale": n}); r.Code != 400 ||
			!strings.Contains(string(r.Body), "invalid_scale") {
			t.Fatalf("scale %d: %d %s", n, r.Code, r.Body)
		}
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/nope/scale"), map[string]any{"scale": 2}), 404, "Crawl not found: nope")
}

func TestDeleteCrawls(t *testing.T) {
	e := newEnv(t)
	cid, a := e.startCrawl(asCrawler, "wf")
	e.setState(a, "complete")
	b := e.mustJSON(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil, 200)["started"].(string)

	// Neither the starter nor an owner: not allowed.
	e.addUser(e.org, "crawler2", store.RoleCrawler)
	e.wantDetail(e.do("crawler2", "POST", e.orgPath("/crawls/delete"), map[string]any{"crawl_ids": []string{a}}), 403, "Not Allowed")
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/delete"), map[string]any{"crawl_ids": []string{"nope"}}), 404, "Crawl not found: nope")

	// Two crawls, one still running (canceled first): deleted is a count.
	out := e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/delete"), map[string]any{"crawl_ids": []string{a, b}}, 200)
	if out["deleted"] != 2.0 || out["storageQuotaReached"] != false {
		t.Fatalf("delete: %v", out)
	}
	if !slices.Contains(e.launcher.callList(), "cancel "+b) {
		t.Fatalf("running crawl not canceled before delete: %v", e.launcher.callList())
	}
	wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	if wf["crawlCount"] != 0.0 || wf["lastCrawlId"] != nil {
		t.Fatalf("workflow after delete: %v", wf)
	}

	// An owner may delete anyone's crawl, through all-crawls too.
	_, c := e.startCrawl(asCrawler, "wf2")
	e.setState(c, "failed")
	out = e.mustJSON(asOwner, "POST", e.orgPath("/all-crawls/delete"), map[string]any{"crawl_ids": []string{c}}, 200)
	if out["deleted"] != 1.0 {
		t.Fatalf("all-crawls delete: %v", out)
	}
}

func TestCrossOrgIDsAreNotFound(t *testing.T) {
	e := newEnv(t)
	cid, id := e.startCrawl(asCrawler, "mine")
	others := e.mustJSON(asOutsider, "GET", "/api/users/me-with-orgs", nil, 200)["orgs"].([]any)
	other := "/api/orgs/" + get(others[0], "id").(string)
	for _, tc := range []struct{ method, path, detail string }{
		{"GET", "/crawlconfigs/" + cid, "Crawl Config '" + cid + "' not found"},
		{"PATCH", "/crawlconfigs/" + cid, "Crawl Config '" + cid + "' not found"},
		{"DELETE", "/crawlconfigs/" + cid, "Crawl Config '" + cid + "' not found"},
		{"POST", "/crawlconfigs/" + cid + "/run", "Crawl Config '" + cid + "' not found"},
		{"GET", "/crawlconfigs/" + cid + "/revs", "Crawl Config '" + cid + "' not found"},
		{"GET", "/crawls/" + id, "crawl_not_found"},
		{"POST", "/crawls/" + id + "/cancel", "crawl_not_found"},
		{"POST", "/crawls/" + id + "/stop", "crawl_not_found"},
		{"POST", "/crawls/" + id + "/scale", "Crawl not found: " + id},
		{"PATCH", "/crawls/" + id, "crawl_not_found"},
		{"POST", "/crawls/delete", "Crawl not found: " + id},
		{"GET", "/crawls/" + id + "/replay.json", "Crawl not found: " + id},
		{"POST", "/crawls/" + id + "/exclusions?regex=x", "crawl_not_found"},
		{"GET", "/all-crawls/" + id, "Crawl not found: " + id},
	} {
		body := map[string]any{"name": "x", "scale": 2, "crawl_ids": []string{id}}
		e.wantDetail(e.do(asOutsider, tc.method, other+tc.path, body), 404, tc.detail)
	}
	if len(e.launcher.callList()) != 1 {
		t.Fatalf("another org's ids reached the launcher: %v", e.launcher.callList())
	}
}

func TestCrawlErrorsAndLogs(t *testing.T) {
	e := newEnv(t)
	_, id := e.startCrawl(asCrawler, "wf")
	lines := []string{`{"logLevel":"error","message":"boom 1"}`, `{"logLevel":"error","message":"boom 2"}`, `not json`}
	if err := e.store.AddCrawlErrors(context.Background(), id, 0, lines); err != nil {
		t.Fatal(err)
	}
	out := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/errors?pageSize=2&page=1"), nil, 200)
	items := out["items"].([]any)
	if out["total"] != 3.0 || len(items) != 2 || get(items[0], "message") != "boom 1" || out["pageSize"] != 2.0 {
		t.Fatalf("errors: %v", out)
	}
	out = e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/errors?pageSize=2&page=2"), nil, 200)
	if get(out["items"].([]any)[0], "message") != "not json" {
		t.Fatalf("errors page 2: %v", out)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawls/"+id+"/logs"), nil), 400, "crawl_not_finished")
	e.setState(id, "complete")
	if r := e.do(asViewer, "GET", e.orgPath("/crawls/"+id+"/logs"), nil); r.Code != 200 || len(r.Body) != 0 {
		t.Fatalf("logs: %d %s", r.Code, r.Body)
	}
	e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/access"), nil, 200)
}

// TestHostileQueueRegex: a pattern that backtracks without end on a
// queued URL answers 400 invalid_regex after one match budget, instead of
// a queue where that URL silently does not match; an exclusion of it is
// still recorded, and the queue is left as it was.
func TestHostileQueueRegex(t *testing.T) {
	e := newEnv(t)
	_, id := e.startCrawl(asCrawler, "wf")
	urls := []string{"https://example.com/" + strings.Repeat("a", 40), "https://example.com/page/1"}
	r := seedRedis(t, id, urls)
	e.setState(id, "running")

	hostile := url.QueryEscape(`(a+)+b`)
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/queue?offset=0&count=5&regex="+hostile), nil), 400, "invalid_regex")
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/queueMatchAll?regex="+hostile), nil), 400, "invalid_regex")
	add := e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/exclusions?regex="+hostile), nil, 200)
	if add["success"] != true || add["num_removed"] != 0.0 {
		t.Fatalf("add exclusion: %v", add)
	}
	c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)
	if !slices.Equal(toStrings(get(c, "config", "exclude")), []string{`(a+)+b`}) {
		t.Fatalf("exclusion not recorded: %v", get(c, "config", "exclude"))
	}
	if n, _ := r.ZCard(context.Background(), id+":q").Result(); n != int64(len(urls)) {
		t.Fatalf("queue after the exclusion: %d, want %d", n, len(urls))
	}
}

// seedRedis writes a running crawl's keys as the crawler would.
func seedRedis(t *testing.T, id string, urls []string) *redis.Client {
	r := redis.NewClient(&redis.Options{Addr: mongotest.RedisAddr(t)})
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	for i, u := range urls {
		member, _ := json.Marshal(map[string]any{"url": u, "seedId": 0, "depth": 1, "added": i})
		r.ZAdd(ctx, id+":q", redis.Z{Score: float64(i % 2), Member: string(member)})
		r.SAdd(ctx, id+":s", u)
	}
	r.SAdd(ctx, id+":s", "https://example.com/")
	r.Set(ctx, id+":d", "7", 0)
	r.HSet(ctx, id+":size", "crawl-"+id+"-0", "1000", "crawl-"+id+"-1", "500")
	return r
}

func TestLiveCrawl(t *testing.T) {
	e := newEnv(t)
	cid, id := e.startCrawl(asCrawler, "wf")
	var urls []string
	for i := range 120 {
		urls = append(urls, fmt.Sprintf("https://example.com/page/%d", i))
	}
	urls = append(urls, "https://example.com/skip/1", "https://example.com/skip/2")
	r := seedRedis(t, id, urls)
	e.setState(id, "running")

	c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)
	if get(c, "stats", "found") != 123.0 || get(c, "stats", "done") != 7.0 || get(c, "stats", "size") != 1500.0 {
		t.Fatalf("live stats: %v", c["stats"])
	}
	q := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/queue?offset=0&count=5&regex=page/1"), nil, 200)
	if q["total"] != 122.0 || len(q["results"].([]any)) != 5 || len(q["matched"].([]any)) == 0 {
		t.Fatalf("queue: %v", q)
	}
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/queue?offset=0&count=5&regex=("), nil), 400, "invalid_regex")
	m := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/queueMatchAll?regex=skip"), nil, 200)
	if len(m["matched"].([]any)) != 2 {
		t.Fatalf("queueMatchAll: %v", m)
	}

	add := e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/exclusions?regex=skip"), nil, 200)
	if add["success"] != true || add["num_removed"] != 2.0 {
		t.Fatalf("add exclusion: %v", add)
	}
	if n, _ := r.ZCard(context.Background(), id+":q").Result(); n != 120 {
		t.Fatalf("queue after exclusion: %d", n)
	}
	if ok, _ := r.SIsMember(context.Background(), id+":s", "https://example.com/skip/1").Result(); ok {
		t.Fatal("excluded url still seen")
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/"+id+"/exclusions?regex=skip"), nil), 400, "exclusion_already_exists")
	c = e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)
	wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	if !slices.Equal(toStrings(get(c, "config", "exclude")), []string{"skip"}) ||
		!slices.Equal(toStrings(get(wf, "config", "exclude")), []string{"skip"}) || wf["rev"] != 1.0 {
		t.Fatalf("exclusion not recorded: crawl %v, workflow %v rev %v", get(c, "config", "exclude"), get(wf, "config", "exclude"), wf["rev"])
	}
	if !slices.Contains(e.launcher.callList(), "restart "+id) {
		t.Fatalf("crawlers not restarted: %v", e.launcher.callList())
	}
	e.mustJSON(asCrawler, "DELETE", e.orgPath("/crawls/"+id+"/exclusions?regex=skip"), nil, 200)
	e.wantDetail(e.do(asCrawler, "DELETE", e.orgPath("/crawls/"+id+"/exclusions?regex=skip"), nil), 400, "exclusion_not_found")
	if r := e.do(asCrawler, "POST", e.orgPath("/crawls/"+id+"/exclusions"), nil); r.Code != 422 {
		t.Fatalf("exclusion without regex: %d", r.Code)
	}
}
