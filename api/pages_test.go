package api

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// threePages stores what a 1.x crawler of one seed and limit 3 sends
// through <id>:pages: the seed at depth 0 and two pages at depth 1, and
// returns the records.
func (e *env) threePages(crawlID string) []store.Page {
	e.t.Helper()
	recs := []string{
		`{"id":"%s","url":"https://example.com/","title":"Example Home","loadState":4,"ts":"2026-01-02T03:04:05.100Z","mime":"text/html","status":200,"depth":0,"seed":true,"favIconUrl":"https://example.com/favicon.ico","filename":"a.wacz"}`,
		`{"id":"%s","url":"https://example.com/b","title":"Bravo page","loadState":4,"ts":"2026-01-02T03:04:03.000Z","mime":"text/html","status":200,"depth":1,"favIconUrl":"https://example.com/favicon.ico","filename":"a.wacz"}`,
		`{"id":"%s","url":"https://example.com/a","title":"Alpha page","loadState":4,"ts":"2026-01-02T03:04:07.000Z","mime":"text/html","status":200,"depth":1,"favIconUrl":"https://example.com/favicon.ico","filename":"a.wacz"}`,
	}
	var pages []store.Page
	for _, r := range recs {
		p, ok := store.PageFromRecord(fmt.Appendf(nil, r, uuid.New()), store.PageSource{OID: e.org, CrawlID: crawlID}, time.Now())
		if !ok {
			e.t.Fatalf("record %s", r)
		}
		pages = append(pages, p)
	}
	if _, err := e.store.AddPages(context.Background(), pages); err != nil {
		e.t.Fatal(err)
	}
	return pages
}

func pageURLs(items []any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = it.(map[string]any)["url"].(string)
	}
	return out
}

// TestCrawlPages covers upstream-2026 §8.3 items 1 to 5 and 9 (the pages
// coming from the crawler are stored as the operator stores them; the
// operator's own part is in operator/pages_test.go).
func TestCrawlPages(t *testing.T) {
	e := newEnv(t)
	_, id := e.startCrawl(asCrawler, "pages")
	stored := e.threePages(id)
	// A page sent twice (the operator reading a batch again) is one page.
	if n, err := e.store.AddPages(context.Background(), stored[:1]); err != nil || n != 0 {
		t.Fatalf("adding a page again: %d, %v", n, err)
	}
	e.setState(id, store.StateComplete)
	pages := func(query string) map[string]any {
		t.Helper()
		return e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages"+query), nil, 200)
	}

	// 1. total 3, every field of PageOut.
	all := pages("")
	items := all["items"].([]any)
	if all["total"] != 3.0 || len(items) != 3 || all["page"] != 1.0 || all["pageSize"] != 1000.0 {
		t.Fatalf("pages: %v", all)
	}
	for _, it := range items {
		p := it.(map[string]any)
		for _, k := range []string{"id", "oid", "crawl_id", "url", "ts", "loadState", "status", "mime", "filename", "favIconUrl"} {
			if v, ok := p[k]; !ok || v == nil || v == "" || v == 0.0 && k != "loadState" {
				t.Errorf("page field %s = %v in %v", k, v, p)
			}
		}
		for _, k := range []string{"isSeed", "isError", "isFile"} {
			if _, ok := p[k].(bool); !ok {
				t.Errorf("page field %s = %v", k, p[k])
			}
		}
		if p["depth"] == nil || !strings.HasSuffix(p["ts"].(string), "Z") {
			t.Errorf("page depth/ts: %v", p)
		}
	}
	crawl := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id), nil, 200)
	if crawl["pageCount"] != 3.0 || crawl["uniquePageCount"] != 3.0 || crawl["filePageCount"] != 0.0 || crawl["errorPageCount"] != 0.0 {
		t.Errorf("crawl counters: %v %v %v %v", crawl["pageCount"], crawl["uniquePageCount"], crawl["filePageCount"], crawl["errorPageCount"])
	}

	// 3. default order: the seed, then ts ascending.
	if got := pageURLs(items); strings.Join(got, " ") != "https://example.com/ https://example.com/b https://example.com/a" {
		t.Errorf("default order: %v", got)
	}

	// 2. filters.
	for query, want := range map[string]int{"?isSeed=true": 1, "?isSeed=false": 2, "?depth=0": 1, "?depth=1": 2,
		"?url=" + url.QueryEscape("https://example.com/a"): 1, "?search=alpha": 1, "?search=page": 2} {
		if got := pages(query); got["total"] != float64(want) {
			t.Errorf("%s: total %v, want %d", query, got["total"], want)
		}
	}
	a := pages("?url=" + url.QueryEscape("https://example.com/a"))["items"].([]any)[0].(map[string]any)
	exact := pages("?url=" + url.QueryEscape(a["url"].(string)) + "&ts=" + url.QueryEscape(a["ts"].(string)))
	if exact["total"] != 1.0 || exact["items"].([]any)[0].(map[string]any)["id"] != a["id"] {
		t.Errorf("url+ts: %v", exact)
	}
	if got := pages("?url=" + url.QueryEscape(a["url"].(string)) + "&ts=2026-01-02T03:04:07.001Z"); got["total"] != 0.0 {
		t.Errorf("url with another ts: %v", got)
	}
	if got := pageURLs(pages("?search=" + url.QueryEscape("https://example.com/a"))["items"].([]any)); strings.Join(got, " ") != "https://example.com/a https://example.com/b" {
		t.Errorf("URL search is a lower bound in url order: %v", got)
	}
	if got := pageURLs(pages("?urlPrefix=" + url.QueryEscape("https://example.com/a"))["items"].([]any)); len(got) != 2 || got[0] != "https://example.com/a" {
		t.Errorf("urlPrefix: %v", got)
	}

	// 3. sorting and its errors.
	if got := pageURLs(pages("?sortBy=url&sortDirection=1")["items"].([]any)); strings.Join(got, " ") != "https://example.com/ https://example.com/a https://example.com/b" {
		t.Errorf("sortBy=url: %v", got)
	}
	if got := pageURLs(pages("?sortBy=url")["items"].([]any)); got[0] != "https://example.com/b" {
		t.Errorf("sortBy=url defaults to descending: %v", got)
	}
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages?sortBy=bogus"), nil), 400, "invalid_sort_by")
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages?sortBy=url&sortDirection=2"), nil), 400, "invalid_sort_direction")
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages?sortDirection=0"), nil), 400, "invalid_sort_direction")
	if r := e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages?depth=x"), nil); r.Code != 422 {
		t.Errorf("depth=x: %d %s", r.Code, r.Body)
	}
	if r := e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages?ts=yesterday"), nil); r.Code != 422 {
		t.Errorf("ts=yesterday: %d %s", r.Code, r.Body)
	}
	if got := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/no-such-crawl/pages"), nil, 200); got["total"] != 0.0 {
		t.Errorf("unknown crawl: %v", got)
	}

	// 4. one page; unknown id, another crawl's page, non-UUID, viewer.
	one := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages/"+a["id"].(string)), nil, 200)
	if one["url"] != a["url"] || fmt.Sprint(one["notes"]) != "[]" || one["userid"] != nil || one["modified"] != nil || one["approved"] != nil {
		t.Errorf("one page: %v", one)
	}
	if got := e.mustJSON(asCrawler, "GET", e.orgPath("/all-crawls/"+id+"/pages/"+a["id"].(string)), nil, 200); got["id"] != a["id"] {
		t.Errorf("the all-crawls form: %v", got)
	}
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages/"+uuid.NewString()), nil), 404, "page_not_found")
	_, other := e.startCrawl(asCrawler, "other")
	otherPage := e.threePages(other)[0]
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages/"+otherPage.ID.String()), nil), 404, "page_not_found")
	if r := e.do(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages/not-a-uuid"), nil); r.Code != 422 {
		t.Errorf("non-UUID page id: %d %s", r.Code, r.Body)
	}
	if r := e.do(asViewer, "GET", e.orgPath("/crawls/"+id+"/pages"), nil); r.Code != 403 {
		t.Errorf("viewer: %d %s", r.Code, r.Body)
	}
	if r := e.do(asViewer, "GET", e.orgPath("/crawls/"+id+"/pages/"+a["id"].(string)), nil); r.Code != 403 {
		t.Errorf("viewer, one page: %d %s", r.Code, r.Body)
	}

	// 5. pagesSearch has no total; replay.json has the first pages and
	// the search URL.
	search := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pagesSearch?search=bravo"), nil, 200)
	if _, ok := search["total"]; ok || len(search["items"].([]any)) != 1 {
		t.Errorf("pagesSearch: %v", search)
	}
	replay := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id+"/replay.json"), nil, 200)
	initial, _ := replay["initialPages"].([]any)
	query, _ := replay["pagesQueryUrl"].(string)
	if len(initial) != 3 || !strings.HasSuffix(query, "/api/orgs/"+e.org.String()+"/crawls/"+id+"/pagesSearch") {
		t.Errorf("replay.json: initialPages %d, pagesQueryUrl %q", len(initial), query)
	}
	if _, ok := replay["downloadUrl"]; !ok {
		t.Error("replay.json has no downloadUrl")
	}
	// A found page names its WACZ as replay.json's resources do (the
	// stored path), not as the crawler wrote it.
	if _, err := e.store.AddCrawlFiles(context.Background(), id, []store.CrawlFile{{Filename: id + "/a.wacz", Size: 1}}); err != nil {
		t.Fatal(err)
	}
	search = e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pagesSearch?search=bravo"), nil, 200)
	if items := search["items"].([]any); len(items) != 1 || get(items[0], "filename") != id+"/a.wacz" {
		t.Errorf("pagesSearch filename: %v", search)
	}

	// 9. deleting a crawl deletes its pages.
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/delete"), map[string]any{"crawl_ids": []string{id}}, 200)
	if left, _, _ := e.store.ListPages(context.Background(), store.PageQuery{CrawlIDs: []string{id}, NoCount: true}); len(left) != 0 {
		t.Errorf("%d pages left after the delete", len(left))
	}
	if left, _, _ := e.store.ListPages(context.Background(), store.PageQuery{CrawlIDs: []string{other}, NoCount: true}); len(left) != 3 {
		t.Errorf("the other crawl has %d pages after the delete, want 3", len(left))
	}
}

// TestFailedCrawlsKeepNoPages: §8.3 item 9, a failed or canceled crawl
// ends with no pages and zero counters.
func TestFailedCrawlsKeepNoPages(t *testing.T) {
	e := newEnv(t)
	for _, state := range []string{store.StateFailed, store.StateCanceled} {
		_, id := e.startCrawl(asCrawler, state)
		e.threePages(id)
		e.setState(id, state)
		got := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id+"/pages"), nil, 200)
		crawl := e.mustJSON(asCrawler, "GET", e.orgPath("/crawls/"+id), nil, 200)
		if got["total"] != 0.0 || crawl["pageCount"] != 0.0 || crawl["uniquePageCount"] != 0.0 {
			t.Errorf("%s crawl: %v pages, pageCount %v", state, got["total"], crawl["pageCount"])
		}
	}
}

// TestCollectionPages: §8.3 item 8, the pages of a collection's items
// with CORS headers; the public variant only for public collections.
func TestCollectionPages(t *testing.T) {
	e := newEnv(t)
	_, id := e.startCrawl(asCrawler, "in collection")
	e.threePages(id)
	e.setState(id, store.StateComplete)
	_, outside := e.startCrawl(asCrawler, "outside")
	e.threePages(outside)
	e.setState(outside, store.StateComplete)
	coll := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "c", "crawlIds": []string{id}}, 200)["id"].(string)

	rec := e.doRaw(asViewer, "GET", e.orgPath("/collections/"+coll+"/pages?sortBy=url&sortDirection=1"), nil)
	if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "*" || rec.Header().Get("Access-Control-Allow-Headers") != "*" {
		t.Fatalf("collection pages: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	got := (resp{Code: rec.Code, Body: rec.Body.Bytes()}).JSON().(map[string]any)
	if _, ok := got["total"]; ok || strings.Join(pageURLs(got["items"].([]any)), " ") != "https://example.com/ https://example.com/a https://example.com/b" {
		t.Errorf("collection pages: %v", got)
	}
	for _, crawler := range got["items"].([]any) {
		if crawler.(map[string]any)["crawl_id"] != id {
			t.Errorf("a page of another item: %v", crawler)
		}
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/collections/"+uuid.NewString()+"/pages"), nil), 404, "collection_not_found")
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/collections/"+coll+"/pages?sortBy=bogus"), nil), 400, "invalid_sort_by")

	public := e.orgPath("/collections/" + coll + "/public/pages")
	e.wantDetail(e.do(asAnonymous, "GET", public, nil), 404, "collection_not_found")
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/collections/"+coll), map[string]any{"isPublic": true}, 200)
	rec = e.doRaw(asAnonymous, "GET", public, nil)
	if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("public pages: %d %s", rec.Code, rec.Body)
	}
	if got := (resp{Body: rec.Body.Bytes()}).JSON().(map[string]any); len(got["items"].([]any)) != 3 {
		t.Errorf("public pages: %v", got)
	}
	pre := e.doRaw(asAnonymous, "OPTIONS", public, nil)
	if pre.Code != 200 || pre.Header().Get("Access-Control-Allow-Methods") != "GET, HEAD, OPTIONS" {
		t.Errorf("preflight: %d %v", pre.Code, pre.Header())
	}
	e.wantDetail(e.do(asAnonymous, "GET", "/api/orgs/"+uuid.NewString()+"/collections/"+coll+"/public/pages", nil), 404, "org_not_found")
}

// pagesWACZ is a WACZ with the pages of a 3-page crawl: the seed in
// pages/pages.jsonl (after its header line), two more in
// pages/extraPages.jsonl.
func pagesWACZ(t testing.TB) []byte {
	t.Helper()
	const warc = "WARC/1.1\r\n\r\n"
	pkg := `{"profile":"data-package","wacz_version":"1.1.1","resources":[{"name":"data.warc","path":"archive/data.warc","hash":"sha256:0","bytes":13}]}`
	seeds := `{"format":"json-pages-1.0","id":"pages","title":"All Pages"}
{"id":"` + uuid.NewString() + `","url":"https://example.com/","title":"Example","loadState":4,"ts":"2026-01-02T03:04:05Z","depth":0}
`
	extra := `{"format":"json-pages-1.0","id":"extra-pages","title":"Extra Pages"}
{"id":"` + uuid.NewString() + `","url":"https://example.com/a","title":"A","loadState":4,"ts":"2026-01-02T03:04:06Z","depth":1}
{"id":"` + uuid.NewString() + `","url":"https://example.com/b","title":"B","loadState":2,"mime":"application/pdf","ts":"2026-01-02T03:04:07Z","depth":1}`
	return zipOf(t, map[string][]byte{"archive/data.warc": []byte(warc), "datapackage.json": []byte(pkg),
		"pages/pages.jsonl": []byte(seeds), "pages/extraPages.jsonl": []byte(extra)},
		"archive/data.warc", "pages/pages.jsonl", "pages/extraPages.jsonl", "datapackage.json")
}

// TestReaddPages is §8.3 item 7, on an upload: its pages are read from
// its WACZ after the upload, then again by reAdd with the same counts;
// unknown and other orgs' items are 404, the org-wide re-add is for
// superusers.
func TestReaddPages(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	t.Cleanup(e.srv.WaitForBackground)
	up := e.mustJSON(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=pages.wacz&name=p"),
		typedBody{"application/octet-stream", pagesWACZ(t)}, 200)
	id := up["id"].(string)
	counted := func() map[string]any {
		t.Helper()
		var item map[string]any
		deadline := time.Now().Add(60 * time.Second)
		for {
			item = e.mustJSON(asCrawler, "GET", e.orgPath("/uploads/"+id), nil, 200)
			if item["pageCount"] == 3.0 || time.Now().After(deadline) {
				return item
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	item := counted()
	if item["pageCount"] != 3.0 || item["uniquePageCount"] != 3.0 || item["filePageCount"] != 1.0 {
		t.Fatalf("upload counters: %v", item)
	}
	pages := e.mustJSON(asCrawler, "GET", e.orgPath("/uploads/"+id+"/pages"), nil, 200)
	first := pages["items"].([]any)[0].(map[string]any)
	if pages["total"] != 3.0 || first["url"] != "https://example.com/" || first["isSeed"] != true ||
		!strings.HasPrefix(fmt.Sprint(first["filename"]), "pages-") || strings.Contains(fmt.Sprint(first["filename"]), "/") {
		t.Fatalf("upload pages: %v", pages)
	}
	before := map[string]bool{}
	for _, p := range pages["items"].([]any) {
		before[p.(map[string]any)["id"].(string)] = true
	}

	started := e.mustJSON(asCrawler, "POST", e.orgPath("/uploads/"+id+"/pages/reAdd"), nil, 200)["started"].(string)
	if !strings.HasPrefix(started, "org-pages-"+e.org.String()+"-") || len(started) != len("org-pages-")+36+1+10 {
		t.Errorf("job id %q", started)
	}
	e.srv.WaitForBackground()
	if item := counted(); item["pageCount"] != 3.0 {
		t.Errorf("pageCount after reAdd: %v", item["pageCount"])
	}
	again := e.mustJSON(asCrawler, "GET", e.orgPath("/all-crawls/"+id+"/pages"), nil, 200)
	for _, p := range again["items"].([]any) {
		if !before[p.(map[string]any)["id"].(string)] {
			t.Errorf("re-read page %v has a new id", p)
		}
	}

	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/no-such-crawl/pages/reAdd"), nil), 404, "crawl_not_found")
	otherOrg := get(e.mustJSON(asOutsider, "GET", "/api/orgs", nil, 200)["items"].([]any)[0], "id").(string)
	e.wantDetail(e.do(asOutsider, "POST", "/api/orgs/"+otherOrg+"/uploads/"+id+"/pages/reAdd", nil), 404, "crawl_not_found")
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/all/pages/reAdd"), nil), 403, "Not Allowed")
	if got := e.mustJSON(asAdmin, "POST", e.orgPath("/all-crawls/all/pages/reAdd"), nil, 200); got["started"] == "" {
		t.Errorf("org-wide re-add: %v", got)
	}
	e.srv.WaitForBackground()
	if item := counted(); item["pageCount"] != 3.0 {
		t.Errorf("pageCount after the org-wide reAdd: %v", item["pageCount"])
	}
}
