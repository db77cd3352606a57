package api

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// TestCrawlSeedsAndResourcesAsUpstream checks whole crawl objects, nulls
// included, after the crawl's workflow got other seeds: as upstream, the
// list item (and the single GET, which is a list item) keeps the crawl's
// own firstSeed with the workflow's current seedCount; replay.json (and
// the all-crawls single GET) takes both from the workflow. Resources are
// named by the full stored file name; their path is a link signed for the
// internal endpoint under the access path "/data/", as upstream's local
// MinIO setup gives it.
func TestCrawlSeedsAndResourcesAsUpstream(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour, func(c *s3.Config) { c.AccessEndpointURL = "/data/" })
	ctx := t.Context()
	cid, id := e.startCrawl(asCrawler, "wf")
	wfPath := e.orgPath("/crawlconfigs/" + cid)
	configAtStart := e.mustJSON(asViewer, "GET", wfPath, nil, 200)["config"]

	file := store.CrawlFile{Filename: e.org.String() + "/20260301100000-wf-abc.wacz", Hash: "sha256:ab12", Size: 4321}
	if _, err := e.store.AddCrawlFile(ctx, id, file); err != nil {
		t.Fatal(err)
	}
	e.setState(id, "complete")

	cfg := e.mustJSON(asViewer, "GET", wfPath, nil, 200)["config"].(map[string]any)
	cfg["seeds"] = []any{
		map[string]any{"url": "https://new.example/"},
		map[string]any{"url": "https://example.com/"},
		map[string]any{"url": "https://third.example/"},
	}
	e.mustJSON(asCrawler, "PATCH", wfPath, map[string]any{"config": cfg}, 200)

	item := e.mustJSON(asViewer, "GET", e.orgPath("/crawls"), nil, 200)["items"].([]any)[0].(map[string]any)
	want := map[string]any{
		"id": id, "type": "crawl", "userid": item["userid"], "userName": asCrawler, "oid": e.org.String(),
		"cid": cid, "cid_rev": 0.0, "name": "wf", "description": nil,
		"started": item["started"], "finished": item["finished"], "state": "complete", "stats": nil,
		"fileSize": 4321.0, "fileCount": 1.0, "tags": []any{}, "errors": nil, "collectionIds": []any{},
		"config": configAtStart, "firstSeed": "https://example.com/", "seedCount": 3.0,
		"profileName": nil, "stopping": false, "manual": true,
		// Added with crawler channels, as upstream's CrawlOut has them today.
		"crawlerChannel": "default", "image": "webrecorder/browsertrix-crawler:latest",
		// Added with pause and resume, as upstream's CrawlOut has them today.
		"shouldPause": false, "pausedAt": nil,
		// Added with pages (upstream-2026 §3.2).
		"pageCount": 0.0, "uniquePageCount": 0.0, "filePageCount": 0.0, "errorPageCount": 0.0,
		// Added with execution-time quotas (upstream-2026 §6.4).
		"crawlExecSeconds": 0.0,
	}
	if item["started"] == nil || item["finished"] == nil {
		t.Fatalf("started/finished: %v", item)
	}
	for _, path := range []string{"/crawls", "/all-crawls"} {
		got := e.mustJSON(asViewer, "GET", e.orgPath(path), nil, 200)["items"].([]any)[0]
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s item (-want +got):\n%s", path, diff)
		}
	}
	if diff := cmp.Diff(want, e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)); diff != "" {
		t.Errorf("GET /crawls/{id} (-want +got):\n%s", diff)
	}

	replay := maps.Clone(want)
	replay["firstSeed"] = "https://new.example/"
	replay["resources"] = []any{map[string]any{
		"name": file.Filename, "path": "/data/" + file.Filename, "hash": "sha256:ab12", "size": 4321.0, "crawlId": id,
	}}
	replay["collections"] = []any{}
	// With pages, the item's first pages and where to search them (the
	// all-crawls single GET is replay.json, as upstream's get_crawl_out).
	replay["initialPages"], replay["downloadUrl"] = []any{}, nil
	replay["pagesQueryUrl"] = "http://example.com/api/orgs/" + e.org.String() + "/crawls/" + id + "/pagesSearch"
	for _, path := range []string{"/crawls/" + id + "/replay.json", "/all-crawls/" + id + "/replay.json", "/all-crawls/" + id} {
		got := e.mustJSON(asCrawler, "GET", e.orgPath(path), nil, 200)
		res, _ := got["resources"].([]any)
		if len(res) == 1 {
			r := res[0].(map[string]any)
			link, _ := r["path"].(string)
			if signed, ok := strings.CutPrefix(link, "/data/"+file.Filename+"?"); ok && strings.Contains(signed, "X-Amz-Signature=") {
				r["path"] = "/data/" + file.Filename // the signature differs each time
			}
		}
		if diff := cmp.Diff(replay, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
}
