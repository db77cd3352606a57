package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

// zeroUUID is a well-formed id that names nothing.
const zeroUUID = "00000000-0000-0000-0000-000000000000"

// finishCrawl runs crawl id to complete with pages done, one file of size
// bytes and tags, as the operator would record it.
func (e *env) finishCrawl(id string, pages, size int64, tags ...string) {
	e.t.Helper()
	ctx := context.Background()
	e.setState(id, store.StateRunning)
	if _, err := e.store.RecordCrawlProgress(ctx, id, &store.CrawlStats{Found: pages, Done: pages, Size: size}, nil); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.AddCrawlFile(ctx, id, store.CrawlFile{Filename: e.org.String() + "/" + id + ".wacz", Hash: "h", Size: size}); err != nil {
		e.t.Fatal(err)
	}
	if tags != nil {
		e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawls/"+id), map[string]any{"tags": tags}, 200)
	}
	e.setState(id, store.StateComplete)
}

// finishedCrawl starts a crawl of a new workflow and finishes it.
func (e *env) finishedCrawl(name string, pages, size int64, tags ...string) string {
	e.t.Helper()
	_, id := e.startCrawl(asCrawler, name)
	e.finishCrawl(id, pages, size, tags...)
	return id
}

// TestCollections follows upstream's test_collections.py: create with a
// crawl, rename, add and remove with recounts, replay, public replay,
// filters and sorts, and delete.
func TestCollections(t *testing.T) {
	e := newEnv(t)
	one := e.finishedCrawl("one", 3, 100, "wr-test-1", "wr-test-2")
	two := e.finishedCrawl("two", 2, 50, "wr-test-2")
	coll := func(rest string) string { return e.orgPath("/collections" + rest) }

	added := e.mustJSON(asCrawler, "POST", coll(""), map[string]any{"name": "Test collection", "crawlIds": []string{one}}, 200)
	id, _ := added["id"].(string)
	if added["added"] != true || added["name"] != "Test collection" || id == "" {
		t.Fatalf("create: %v", added)
	}
	rp := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+one+"/replay.json"), nil, 200)
	if ids := toStrings(rp["collectionIds"]); !slices.Equal(ids, []string{id}) {
		t.Fatalf("crawl collectionIds %v", ids)
	}
	if refs := rp["collections"].([]any); len(refs) != 1 || get(refs[0], "id") != id || get(refs[0], "name") != "Test collection" {
		t.Fatalf("crawl collections %v", refs)
	}
	e.wantDetail(e.do(asCrawler, "POST", coll(""), map[string]any{"name": "Test collection"}), 400, "collection_name_taken")
	if r := e.do(asCrawler, "POST", coll(""), map[string]any{"name": ""}); r.Code != 422 {
		t.Fatalf("empty name: %d %s", r.Code, r.Body)
	}
	// A bad crawl id creates nothing.
	e.wantDetail(e.do(asCrawler, "POST", coll(""), map[string]any{"name": "bad", "crawlIds": []string{"nope"}}), 404, "Crawl not found: nope")
	if got := e.mustJSON(asViewer, "GET", coll("?name=bad"), nil, 200); got["total"] != 0.0 {
		t.Fatalf("collection created despite a bad crawl id: %v", got)
	}

	before := e.mustJSON(asViewer, "GET", coll("/"+id), nil, 200)
	e.mustJSON(asCrawler, "PATCH", coll("/"+id), map[string]any{"description": "Test description"}, 200)
	c := e.mustJSON(asViewer, "GET", coll("/"+id), nil, 200)
	if c["description"] != "Test description" || c["crawlCount"] != 1.0 || c["pageCount"] != 3.0 || c["totalSize"] != 100.0 ||
		c["isPublic"] != false || c["modified"].(string) < before["modified"].(string) || len(c["resources"].([]any)) != 0 {
		t.Fatalf("after patch: %v", c)
	}
	e.mustJSON(asCrawler, "PATCH", coll("/"+id), map[string]any{"name": "Updated tést cöllection"}, 200)
	e.wantDetail(e.do(asCrawler, "PATCH", coll("/"+id), map[string]any{}), 400, "no_update_data")
	if r := e.do(asCrawler, "PATCH", coll("/"+id), map[string]any{"name": nil}); r.Code != 422 {
		t.Fatalf("null name: %d %s", r.Code, r.Body)
	}

	second := e.mustJSON(asCrawler, "POST", coll(""), map[string]any{"name": "second-collection", "crawlIds": []string{two}}, 200)["id"].(string)
	e.wantDetail(e.do(asCrawler, "PATCH", coll("/"+second), map[string]any{"name": "Updated tést cöllection"}), 400, "collection_name_taken")

	c = e.mustJSON(asCrawler, "POST", coll("/"+id+"/add"), map[string]any{"crawlIds": []string{two}}, 200)
	if c["crawlCount"] != 2.0 || c["pageCount"] != 5.0 || c["totalSize"] != 150.0 || !slices.Equal(toStrings(c["tags"]), []string{"wr-test-2", "wr-test-1"}) {
		t.Fatalf("after add: %v", c)
	}
	c = e.mustJSON(asCrawler, "POST", coll("/"+id+"/remove"), map[string]any{"crawlIds": []string{one, two}}, 200)
	if c["crawlCount"] != 0.0 || c["pageCount"] != 0.0 || c["totalSize"] != 0.0 || len(c["tags"].([]any)) != 0 {
		t.Fatalf("after remove: %v", c)
	}
	e.mustJSON(asCrawler, "POST", coll("/"+id+"/add"), map[string]any{"crawlIds": []string{one, two}}, 200)
	e.wantDetail(e.do(asCrawler, "POST", coll("/"+id+"/add"), map[string]any{"crawlIds": []string{"nope"}}), 404, "Crawl not found: nope")

	rp = e.mustJSON(asViewer, "GET", coll("/"+id+"/replay.json"), nil, 200)
	res := rp["resources"].([]any)
	if rp["crawlCount"] != 2.0 || len(res) != 2 {
		t.Fatalf("replay: %v", rp)
	}
	for _, r := range res {
		if get(r, "name") == nil || get(r, "size") == nil || get(r, "crawlId") == nil { // paths need storage (see TestCollectionDownload)
			t.Fatalf("resource %v", r)
		}
	}

	// Public replay: 404 while private, open CORS once public.
	public := coll("/" + id + "/public/replay.json")
	e.wantDetail(e.do("", "GET", public, nil), 404, "collection_not_found")
	e.mustJSON(asCrawler, "PATCH", coll("/"+id), map[string]any{"isPublic": true}, 200)
	r := e.doRaw("", "GET", public, nil)
	if r.Code != 200 || r.Header().Get("Access-Control-Allow-Origin") != "*" || r.Header().Get("Access-Control-Allow-Headers") != "*" ||
		!strings.Contains(r.Body.String(), `"resources":[{`) {
		t.Fatalf("public replay: %d %v %s", r.Code, r.Header(), r.Body)
	}
	r = e.doRaw("", "OPTIONS", public, nil)
	if r.Code != 200 || r.Header().Get("Access-Control-Allow-Methods") != "GET, HEAD, OPTIONS" || r.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("preflight: %d %v", r.Code, r.Header())
	}
	e.wantDetail(e.do("", "GET", "/api/orgs/"+zeroUUID+"/collections/"+id+"/public/replay.json", nil), 404, "org_not_found")
	e.mustJSON(asCrawler, "PATCH", coll("/"+id), map[string]any{"isPublic": false}, 200)
	e.wantDetail(e.do("", "GET", public, nil), 404, "collection_not_found")

	// Lists, filters and sorts.
	list := func(q string) []string {
		t.Helper()
		page := e.mustJSON(asViewer, "GET", coll(q), nil, 200)
		var names []string
		for _, it := range page["items"].([]any) {
			names = append(names, get(it, "name").(string))
		}
		return names
	}
	for q, want := range map[string][]string{
		"?name=second-collection":            {"second-collection"},
		"?namePrefix=upda":                   {"Updated tést cöllection"},
		"?namePrefix=UPDA":                   {"Updated tést cöllection"},
		"?sortBy=name":                       {"second-collection", "Updated tést cöllection"},
		"?sortBy=name&sortDirection=-1":      {"Updated tést cöllection", "second-collection"},
		"?sortBy=description":                {"second-collection", "Updated tést cöllection"},
		"?sortBy=totalSize":                  {"second-collection", "Updated tést cöllection"},
		"?sortBy=totalSize&sortDirection=-1": {"Updated tést cöllection", "second-collection"},
	} {
		if got := list(q); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	page := e.mustJSON(asViewer, "GET", coll("?sortBy=name"), nil, 200)
	if page["total"] != 2.0 || get(page["items"].([]any)[0], "description") != nil || get(page["items"].([]any)[0], "crawlCount") != 1.0 {
		t.Fatalf("list: %v", page)
	}
	e.wantDetail(e.do(asViewer, "GET", coll("?sortBy=invalid"), nil), 400, "invalid_sort_by")
	e.wantDetail(e.do(asViewer, "GET", coll("?sortBy=name&sortDirection=0"), nil), 400, "invalid_sort_direction")
	sv := e.mustJSON(asViewer, "GET", coll("/search-values"), nil, 200)
	if !slices.Equal(toStrings(sv["names"]), []string{"Updated tést cöllection", "second-collection"}) {
		t.Fatalf("search values %v", sv)
	}
	all := e.mustJSON(asViewer, "GET", coll("/$all"), nil, 200)
	if len(all) != 2 || len(all["Updated tést cöllection"].([]any)) != 2 || len(all["second-collection"].([]any)) != 1 {
		t.Fatalf("$all: %v", all)
	}

	// The crawl lists filter by collection.
	crawls := e.mustJSON(asViewer, "GET", e.orgPath("/crawls?collectionId="+second), nil, 200)
	if crawls["total"] != 1.0 || get(crawls["items"].([]any)[0], "id") != two {
		t.Fatalf("crawls in %s: %v", second, crawls)
	}

	// Membership from the crawl's side: exactly the given collections.
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawls/"+two), map[string]any{"collectionIds": []string{second}}, 200)
	cr := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+two), nil, 200)
	if ids := toStrings(cr["collectionIds"]); !slices.Equal(ids, []string{second}) {
		t.Fatalf("crawl collections after patch: %v", ids)
	}
	if c := e.mustJSON(asViewer, "GET", coll("/"+id), nil, 200); c["crawlCount"] != 1.0 {
		t.Fatalf("removal by crawl patch not counted: %v", c)
	}
	e.wantDetail(e.do(asCrawler, "PATCH", e.orgPath("/crawls/"+two), map[string]any{"collectionIds": []string{zeroUUID}}), 404, "collection_not_found")
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawls/"+two), map[string]any{"collectionIds": []string{}}, 200)
	cr = e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+two), nil, 200)
	if len(cr["collectionIds"].([]any)) != 0 {
		t.Fatalf("crawl collections after emptying: %v", cr["collectionIds"])
	}

	// Errors: malformed and unknown ids.
	if r := e.do(asViewer, "GET", coll("/not-a-uuid"), nil); r.Code != 422 {
		t.Fatalf("malformed id: %d", r.Code)
	}
	e.wantDetail(e.do(asViewer, "GET", coll("/"+zeroUUID), nil), 404, "collection_not_found")

	e.mustJSON(asCrawler, "DELETE", coll("/"+id), nil, 200)
	e.wantDetail(e.do(asCrawler, "DELETE", coll("/"+id), nil), 404, "collection_not_found")
	rp = e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+one+"/replay.json"), nil, 200)
	if len(rp["collectionIds"].([]any)) != 0 || len(rp["collections"].([]any)) != 0 {
		t.Fatalf("deleted collection still on the crawl: %v", rp)
	}
	e.mustJSON(asCrawler, "DELETE", coll("/"+second), nil, 200)
}

// TestCollectionsAreOrgScoped: another org's collection is not found
// through this org's routes (upstream read collections by id alone).
func TestCollectionsAreOrgScoped(t *testing.T) {
	e := newEnv(t)
	others := e.mustJSON(asOutsider, "GET", "/api/orgs", nil, 200)["items"].([]any)
	otherOrg := get(others[0], "id").(string)
	theirs := e.mustJSON(asOutsider, "POST", "/api/orgs/"+otherOrg+"/collections", map[string]any{"name": "theirs", "isPublic": true}, 200)["id"].(string)
	for _, p := range []string{"", "/replay.json"} {
		e.wantDetail(e.do(asOwner, "GET", e.orgPath("/collections/"+theirs+p), nil), 404, "collection_not_found")
	}
	e.wantDetail(e.do(asOwner, "POST", e.orgPath("/collections/"+theirs+"/add"), map[string]any{"crawlIds": []string{}}), 404, "collection_not_found")
	e.wantDetail(e.do(asOwner, "DELETE", e.orgPath("/collections/"+theirs), nil), 404, "collection_not_found")
	e.wantDetail(e.do("", "GET", e.orgPath("/collections/"+theirs+"/public/replay.json"), nil), 404, "collection_not_found")
	if r := e.do("", "GET", "/api/orgs/"+otherOrg+"/collections/"+theirs+"/public/replay.json", nil); r.Code != 200 {
		t.Fatalf("public replay in its own org: %d %s", r.Code, r.Body)
	}
	// Nor can this org's crawls join it.
	_, crawl := e.startCrawl(asCrawler, "mine")
	e.wantDetail(e.do(asOutsider, "POST", "/api/orgs/"+otherOrg+"/collections/"+theirs+"/add",
		map[string]any{"crawlIds": []string{crawl}}), 404, "Crawl not found: "+crawl)
}

// TestAutoAddCollections: a crawl of a workflow with autoAddCollections
// joins them when it succeeds, raising crawlCount by one each time.
func TestAutoAddCollections(t *testing.T) {
	e := newEnv(t)
	id := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "auto"}, 200)["id"].(string)
	body := workflowBody("auto-add", true)
	body["autoAddCollections"] = []string{id}
	crawlOf := func() string {
		out := e.createWorkflow(asCrawler, body)
		return out["run_now_job"].(string)
	}
	first := crawlOf()
	e.finishCrawl(first, 4, 10, "t")
	rp := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+first+"/replay.json"), nil, 200)
	if refs := rp["collections"].([]any); len(refs) != 1 || get(refs[0], "id") != id {
		t.Fatalf("collections of the crawl: %v", rp["collections"])
	}
	failed := crawlOf()
	e.setState(failed, store.StateFailed)
	second := crawlOf()
	e.finishCrawl(second, 1, 5)
	c := e.mustJSON(asViewer, "GET", e.orgPath("/collections/"+id), nil, 200)
	if c["crawlCount"] != 2.0 || c["pageCount"] != 5.0 || c["totalSize"] != 15.0 || !slices.Equal(toStrings(c["tags"]), []string{"t"}) {
		t.Fatalf("collection after auto-add: %v", c)
	}
	if f := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+failed), nil, 200); len(f["collectionIds"].([]any)) != 0 {
		t.Fatalf("a failed crawl joined: %v", f["collectionIds"])
	}
	// Deleting a member recounts.
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/delete"), map[string]any{"crawl_ids": []string{first}}, 200)
	if c := e.mustJSON(asViewer, "GET", e.orgPath("/collections/"+id), nil, 200); c["crawlCount"] != 1.0 || c["totalSize"] != 5.0 {
		t.Fatalf("collection after delete: %v", c)
	}
}

// TestCollectionWebhooks: creating with crawls, /add, /remove and a
// crawl's PATCH of collectionIds each store their notification, with the
// item ids as given.
func TestCollectionWebhooks(t *testing.T) {
	e := newEnv(t)
	n, err := webhook.New(webhook.Config{MaxAttempts: 1, RetryDelay: time.Second, MaxRetryDelay: time.Second,
		Timeout: time.Second, PollInterval: time.Hour, Workers: 1}, webhook.Deps{Store: e.store})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.webhooks = n // not run: the notifications are only stored
	e.mustJSON(asOwner, "POST", e.orgPath("/event-webhook-urls"), map[string]any{
		"addedToCollection": "https://example.com/added", "removedFromCollection": "https://example.com/removed"}, 200)
	one, two := e.finishedCrawl("one", 1, 1), e.finishedCrawl("two", 1, 1)
	id := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "c", "crawlIds": []string{one}}, 200)["id"].(string)
	e.mustJSON(asCrawler, "POST", e.orgPath("/collections/"+id+"/add"), map[string]any{"crawlIds": []string{two}}, 200)
	e.mustJSON(asCrawler, "POST", e.orgPath("/collections/"+id+"/remove"), map[string]any{"crawlIds": []string{one, two}}, 200)
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawls/"+two), map[string]any{"collectionIds": []string{id}}, 200)
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawls/"+two), map[string]any{"collectionIds": []string{}}, 200)

	var got []string
	for _, it := range e.mustJSON(asOwner, "GET", e.orgPath("/webhooks"), nil, 200)["items"].([]any) {
		got = append(got, fmt.Sprint(get(it, "event"), " ", toStrings(get(it, "body", "itemIds"))))
		if get(it, "body", "collectionId") != id || len(get(it, "body", "downloadUrls").([]any)) != 1 {
			t.Errorf("body %v", get(it, "body"))
		}
	}
	want := []string{"addedToCollection [" + one + "]", "addedToCollection [" + two + "]",
		"removedFromCollection [" + one + " " + two + "]", "addedToCollection [" + two + "]", "removedFromCollection [" + two + "]"}
	if !slices.Equal(got, want) {
		t.Fatalf("notifications %q, want %q", got, want)
	}
}

// TestCollectionChangesReadItOnce: /add and /remove read the collection
// once (the org-scoped check before anything changes); the recounted
// collection they answer with comes back from the write that sets its
// modified time, not from another read.
func TestCollectionChangesReadItOnce(t *testing.T) {
	var cmds mongotest.Commands
	e := newEnvOn(t, mongotest.Open(t, cmds.Option()), nil)
	one := e.finishedCrawl("one", 3, 100, "a")
	two := e.finishedCrawl("two", 2, 50, "b")
	coll := func(rest string) string { return e.orgPath("/collections" + rest) }
	id := e.mustJSON(asCrawler, "POST", coll(""), map[string]any{"name": "c", "crawlIds": []string{one}}, 200)["id"].(string)
	created := e.mustJSON(asViewer, "GET", coll("/"+id), nil, 200)

	for _, step := range []struct {
		path          string
		crawls, pages float64
	}{{"/add", 2, 5}, {"/remove", 1, 3}} {
		cmds.Reset()
		c := e.mustJSON(asCrawler, "POST", coll("/"+id+step.path), map[string]any{"crawlIds": []string{two}}, 200)
		if n := cmds.Count("find", "collections"); n != 1 {
			t.Errorf("%s read the collection %d times, want 1", step.path, n)
		}
		if c["id"] != id || c["name"] != "c" || c["crawlCount"] != step.crawls || c["pageCount"] != step.pages ||
			c["modified"].(string) < created["modified"].(string) {
			t.Errorf("%s answered %v", step.path, c)
		}
		if diff := cmp.Diff(c, e.mustJSON(asViewer, "GET", coll("/"+id), nil, 200)); diff != "" {
			t.Errorf("%s answered other than the collection now is (-answer +now):\n%s", step.path, diff)
		}
	}
}

// TestItemCollectionsPatchChecksOnce: a crawl's PATCH of collectionIds
// checks all the changed collections with one read, and a missing one
// changes nothing.
func TestItemCollectionsPatchChecksOnce(t *testing.T) {
	var cmds mongotest.Commands
	e := newEnvOn(t, mongotest.Open(t, cmds.Option()), nil)
	crawl := e.finishedCrawl("one", 3, 100, "a")
	coll := func(rest string) string { return e.orgPath("/collections" + rest) }
	first := e.mustJSON(asCrawler, "POST", coll(""), map[string]any{"name": "first", "crawlIds": []string{crawl}}, 200)["id"].(string)
	second := e.mustJSON(asCrawler, "POST", coll(""), map[string]any{"name": "second"}, 200)["id"].(string)
	third := e.mustJSON(asCrawler, "POST", coll(""), map[string]any{"name": "third"}, 200)["id"].(string)
	memberOf := func() []string {
		return toStrings(e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+crawl), nil, 200)["collectionIds"])
	}

	e.wantDetail(e.do(asCrawler, "PATCH", e.orgPath("/crawls/"+crawl), map[string]any{"collectionIds": []string{second, zeroUUID}}), 404, "collection_not_found")
	if got := memberOf(); !slices.Equal(got, []string{first}) {
		t.Fatalf("a missing collection changed the crawl's collections: %v", got)
	}

	cmds.Reset()
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawls/"+crawl), map[string]any{"collectionIds": []string{second, third}}, 200)
	if n := cmds.Count("find", "collections"); n != 1 {
		t.Errorf("the PATCH read collections %d times, want 1", n)
	}
	if got := memberOf(); !slices.Equal(got, []string{second, third}) {
		t.Fatalf("crawl's collections %v, want %v", got, []string{second, third})
	}
	for id, want := range map[string]float64{first: 0, second: 1, third: 1} {
		if c := e.mustJSON(asViewer, "GET", coll("/"+id), nil, 200); c["crawlCount"] != want {
			t.Errorf("collection %s after the PATCH: %v", c["name"], c)
		}
	}
}
