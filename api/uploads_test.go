package api

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// saveUpload records an upload of the default org, as the upload routes
// do once the file is stored.
func (e *env) saveUpload(id, name string, size int64, colls ...uuid.UUID) {
	e.t.Helper()
	crawler, err := e.store.GetUserByEmail(context.Background(), asCrawler+"@example.com")
	if err != nil {
		e.t.Fatal(err)
	}
	u := &store.Upload{ID: id, UserID: crawler.ID, OID: e.org, Name: name, CollectionIDs: colls, At: e.srv.now(),
		Files: []store.CrawlFile{{Filename: e.org.String() + "/uploads/" + id + "/f-abcdefgh.wacz", Hash: "h", Size: size}}}
	if _, err := e.store.SaveUpload(context.Background(), u, false); err != nil {
		e.t.Fatal(err)
	}
}

// TestUploadReads: lists, the upload's nulls, replay.json, the superuser
// variant, PATCH, and uploads and crawls kept apart.
func TestUploadReads(t *testing.T) {
	e := newEnv(t)
	coll := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "c"}, 200)["id"].(string)
	e.saveUpload("upload-a", "A", 10, uuid.MustParse(coll))
	e.saveUpload("upload-b", "B", 20)
	crawl := e.finishedCrawl("a crawl", 1, 5)

	u := e.mustJSON(asCrawler, "GET", e.orgPath("/uploads/upload-a"), nil, 200)
	for _, k := range []string{"cid", "cid_rev", "config", "firstSeed", "seedCount", "profileName", "stopping", "manual", "stats", "errors"} {
		if v, ok := u[k]; !ok || v != nil {
			t.Errorf("upload %s = %v (present %v), want null", k, v, ok)
		}
	}
	if u["type"] != "upload" || u["state"] != "complete" || u["name"] != "A" || u["userName"] != asCrawler || u["fileSize"] != 10.0 {
		t.Fatalf("upload %v", u)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/uploads/upload-a"), nil), 403, detailNoCrawlPermission)
	e.wantDetail(e.do(asCrawler, "GET", e.orgPath("/uploads/"+crawl), nil), 404, "Crawl not found: "+crawl)
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawls/upload-a"), nil), 404, "crawl_not_found")

	rp := e.mustJSON(asViewer, "GET", e.orgPath("/uploads/upload-a/replay.json"), nil, 200)
	if res := rp["resources"].([]any); len(res) != 1 || get(res[0], "size") != 10.0 || get(res[0], "crawlId") != "upload-a" {
		t.Fatalf("resources %v", rp["resources"])
	}
	if refs := rp["collections"].([]any); len(refs) != 1 || get(refs[0], "id") != coll {
		t.Fatalf("collections %v", rp["collections"])
	}
	if _, ok := rp["files"]; ok {
		t.Fatal("replay.json shows files")
	}
	e.mustJSON(asAdmin, "GET", "/api/orgs/all/uploads/upload-b/replay.json", nil, 200)
	e.wantDetail(e.do(asAdmin, "GET", "/api/orgs/all/uploads/"+crawl+"/replay.json", nil), 404, "Crawl not found: "+crawl)
	e.wantDetail(e.do(asOwner, "GET", "/api/orgs/all/uploads/upload-b/replay.json", nil), 403, detailNotAllowed)

	ids := func(path string) []string {
		page := e.mustJSON(asViewer, "GET", e.orgPath(path), nil, 200)
		var out []string
		for _, it := range page["items"].([]any) {
			out = append(out, get(it, "id").(string))
		}
		slices.Sort(out)
		return out
	}
	for path, want := range map[string][]string{
		"/uploads":                         {"upload-a", "upload-b"},
		"/uploads?collectionId=" + coll:    {"upload-a"},
		"/all-crawls?collectionId=" + coll: {"upload-a"},
		"/all-crawls?crawlType=upload":     {"upload-a", "upload-b"},
		"/all-crawls?crawlType=crawl":      {crawl},
		"/uploads?name=B":                  {"upload-b"},
		"/uploads?sortBy=fileSize":         {"upload-a", "upload-b"},
		"/crawls":                          {crawl},
	} {
		if got := ids(path); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/uploads?sortBy=firstSeed"), nil), 400, "invalid_sort_by")

	e.mustJSON(asCrawler, "PATCH", e.orgPath("/uploads/upload-b"), map[string]any{"name": "B2", "description": "d",
		"tags": []string{"x"}, "collectionIds": []string{coll}}, 200)
	u = e.mustJSON(asCrawler, "GET", e.orgPath("/uploads/upload-b"), nil, 200)
	if u["name"] != "B2" || u["description"] != "d" || !slices.Equal(toStrings(u["tags"]), []string{"x"}) ||
		!slices.Equal(toStrings(u["collectionIds"]), []string{coll}) {
		t.Fatalf("after patch %v", u)
	}
	if c := e.mustJSON(asViewer, "GET", e.orgPath("/collections/"+coll), nil, 200); c["crawlCount"] != 2.0 || c["totalSize"] != 30.0 ||
		c["pageCount"] != 0.0 || !slices.Equal(toStrings(c["tags"]), []string{"x"}) {
		t.Fatalf("collection with uploads %v", c)
	}
	e.wantDetail(e.do(asCrawler, "PATCH", e.orgPath("/uploads/"+crawl), map[string]any{"name": "x"}), 404, "crawl_not_found")
}
