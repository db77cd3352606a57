package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// seedFileEnv is a storage env whose links are /data/ paths, as behind
// trawler's own storage access path.
func seedFileEnv(t *testing.T) *storageEnv {
	return newStorageEnv(t, startS3(t), time.Hour, func(c *s3.Config) { c.AccessEndpointURL = "/data/" })
}

func (e *storageEnv) putSeedFile(as, query string, body []byte) resp {
	e.t.Helper()
	return e.do(as, "PUT", e.orgPath("/files/seedFile"+query), typedBody{"application/octet-stream", body})
}

func (e *storageEnv) orgDoc() *store.Org {
	e.t.Helper()
	o, err := e.store.GetOrg(context.Background(), e.org)
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

const twoSeeds = "https://specs.webrecorder.net\nhttps://old.webrecorder.net/\n"

// TestSeedFileUpload covers upstream-2026.md §8.4 items 1-3: an upload
// answers {added, id}, the file reads back with upstream's fields and a
// link under the request's origin, the org's byte counters follow, and
// every refused file (wrong extension, binary, empty, no URL, too large)
// is a 4xx with upstream's detail that stores nothing.
func TestSeedFileUpload(t *testing.T) {
	e := seedFileEnv(t)
	oid := e.org.String()

	added := e.putSeedFile(asCrawler, "?filename=seeds.txt", []byte(twoSeeds))
	if added.Code != 200 {
		t.Fatalf("upload: %d %s", added.Code, added.Body)
	}
	id, _ := get(added.JSON(), "id").(string)
	if get(added.JSON(), "added") != true || uuid.Validate(id) != nil {
		t.Fatalf("upload answered %s", added.Body)
	}
	f := e.mustJSON(asViewer, "GET", e.orgPath("/files/"+id), nil, 200)
	for k, want := range map[string]any{"type": "seedFile", "mime": "text/plain", "firstSeed": "https://specs.webrecorder.net",
		"seedCount": 2.0, "originalFilename": "seeds.txt", "size": float64(len(twoSeeds)), "oid": oid, "id": id, "userName": asCrawler} {
		if f[k] != want {
			t.Errorf("%s = %v, want %v", k, f[k], want)
		}
	}
	name, _ := f["name"].(string)
	if !strings.HasPrefix(name, oid+"/seedFiles/seedFile-"+id+"-") || !strings.HasSuffix(name, ".txt") {
		t.Errorf("name %q", name)
	}
	if p, _ := f["path"].(string); !strings.HasPrefix(p, "http://example.com/data/") {
		t.Errorf("path %q is not under the request origin", p)
	}
	if c, _ := f["created"].(string); !strings.HasSuffix(c, "Z") {
		t.Errorf("created %q", c)
	}
	if got := e.stored(name); got != twoSeeds {
		t.Fatalf("stored %q", got)
	}

	// The org's counters (the file is its only stored bytes).
	o := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200)
	if o["bytesStored"] != float64(len(twoSeeds)) || o["bytesStoredSeedFiles"] != float64(len(twoSeeds)) {
		t.Fatalf("org bytesStored %v bytesStoredSeedFiles %v", o["bytesStored"], o["bytesStoredSeedFiles"])
	}

	// Refusals: each a 4xx, nothing stored, the counters unchanged.
	jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, bytes.Repeat([]byte{0x00, 0x9a, 0xff}, 4000)...)
	var big bytes.Buffer
	for big.Len() <= maxSeedFileBytes {
		big.WriteString("https://example.com/a-page-of-a-long-seed-list/0123456789\n")
	}
	before, objects := e.orgDoc(), len(e.keys(oid+"/seedFiles/"))
	for _, tc := range []struct {
		name, query string
		body        []byte
		as          string
		status      int
		detail      string
	}{
		{"wrong extension", "?filename=x.csv", []byte(twoSeeds), asCrawler, 400, "invalid_extension"},
		{"upper-case extension", "?filename=x.TXT", []byte(twoSeeds), asCrawler, 400, "invalid_extension"},
		{"binary", "?filename=photo.txt", jpeg, asCrawler, 400, "invalid_seed_file"},
		{"binary after URLs", "?filename=mixed.txt", append([]byte(twoSeeds), 0x00, 0x01), asCrawler, 400, "invalid_seed_file"},
		{"empty", "?filename=empty.txt", nil, asCrawler, 400, "invalid_seed_file"},
		{"no URL", "?filename=words.txt", []byte("hello\nworld\n"), asCrawler, 400, "invalid_seed_file"},
		{"too large", "?filename=big.txt", big.Bytes(), asCrawler, 400, "max_size_25_mb_exceeded"},
		{"viewer", "?filename=seeds.txt", []byte(twoSeeds), asViewer, 403, detailNoCrawlPermission},
	} {
		r := e.putSeedFile(tc.as, tc.query, tc.body)
		var body struct{ Detail any }
		_ = json.Unmarshal(r.Body, &body)
		if r.Code != tc.status || body.Detail != tc.detail {
			t.Errorf("%s: %d %s, want %d %q", tc.name, r.Code, r.Body, tc.status, tc.detail)
		}
	}
	if r := e.putSeedFile(asCrawler, "", []byte(twoSeeds)); r.Code != 422 {
		t.Errorf("no filename: %d %s", r.Code, r.Body)
	}
	after := e.orgDoc()
	if n := len(e.keys(oid + "/seedFiles/")); n != objects || after.BytesStored != before.BytesStored ||
		after.BytesStoredSeedFiles != before.BytesStoredSeedFiles {
		t.Fatalf("refusals left %d objects (had %d), bytes %d/%d (had %d/%d)", n, objects,
			after.BytesStored, after.BytesStoredSeedFiles, before.BytesStored, before.BytesStoredSeedFiles)
	}
	if l := e.mustJSON(asViewer, "GET", e.orgPath("/files"), nil, 200); l["total"] != 1.0 {
		t.Fatalf("list after refusals: %v", l)
	}

	// The list, its sort keys and directions; reads of bad or other ids.
	const three = "x\nhttps://a.example/\nhttps://b.example/\n"
	e.putSeedFile(asCrawler, "?filename=three.txt", []byte(three))
	l := e.mustJSON(asViewer, "GET", e.orgPath("/files?sortBy=seedCount&sortDirection=1"), nil, 200)
	items, _ := l["items"].([]any)
	if l["total"] != 2.0 || len(items) != 2 || get(items[0], "seedCount") != 2.0 || get(items[1], "firstSeed") != "https://a.example/" {
		t.Fatalf("sorted list: %v", l)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/files?sortBy=bogus"), nil), 400, "invalid_sort_by")
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/files?sortDirection=2"), nil), 400, "invalid_sort_direction")
	if r := e.do(asViewer, "GET", e.orgPath("/files/not-a-uuid"), nil); r.Code != 422 {
		t.Errorf("malformed id: %d %s", r.Code, r.Body)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/files/"+zeroUUID), nil), 404, "file_not_found")
	if r := e.do(asOutsider, "GET", e.orgPath("/files/"+id), nil); r.Code != 404 {
		t.Errorf("another org's member: %d %s", r.Code, r.Body)
	}
	e.wantDetail(e.do(asViewer, "DELETE", e.orgPath("/files/"+id), nil), 403, detailNoCrawlPermission)

	// Delete: document, object and bytes go.
	e.mustJSON(asCrawler, "DELETE", e.orgPath("/files/"+id), nil, 200)
	e.wantDetail(e.do(asCrawler, "DELETE", e.orgPath("/files/"+id), nil), 404, "file_not_found")
	if e.stored(name) != "" {
		t.Fatal("the deleted file's object remains")
	}
	if o := e.orgDoc(); o.BytesStoredSeedFiles != int64(len(three)) || o.BytesStored != int64(len(three)) {
		t.Fatalf("after delete: bytes %d/%d", o.BytesStored, o.BytesStoredSeedFiles)
	}
}

// seedFileWorkflow is a workflow body crawling seed file id on channel.
func seedFileWorkflow(name, id, channel string, seeds ...string) map[string]any {
	cfg := map[string]any{"seedFileId": id}
	if seeds != nil {
		list := []any{}
		for _, s := range seeds {
			list = append(list, map[string]any{"url": s})
		}
		cfg["seeds"] = list
	}
	return map[string]any{"name": name, "crawlerChannel": channel, "config": cfg}
}

// TestSeedFileWorkflows covers §8.4 items 4-7 on the API's side: a
// workflow takes firstSeed and seedCount from its file and page scope;
// seeds and a file, neither, an unknown file and a 0.11 channel are
// refused; a run hands the crawler a link (spec.seedFileUrl, and
// seedFile in crawl-config.json) that downloads the file; a file in use
// by a workflow or a crawl cannot be deleted.
func TestSeedFileWorkflows(t *testing.T) {
	e := seedFileEnv(t)
	ctx := context.Background()
	fid, _ := get(e.putSeedFile(asCrawler, "?filename=seeds.txt", []byte(twoSeeds)).JSON(), "id").(string)
	if fid == "" {
		t.Fatal("no seed file")
	}
	path := e.orgPath("/crawlconfigs/")

	// Refused workflows.
	e.wantDetail(e.do(asCrawler, "POST", path, seedFileWorkflow("both", fid, "test", "https://example.com/")), 400, "use_one_of_seeds_or_seedfile")
	e.wantDetail(e.do(asCrawler, "POST", path, map[string]any{"name": "neither", "crawlerChannel": "test", "config": map[string]any{"seeds": []any{}}}), 400, "use_one_of_seeds_or_seedfile")
	e.wantDetail(e.do(asCrawler, "POST", path, seedFileWorkflow("unknown", zeroUUID, "test")), 404, "file_not_found")
	e.wantDetail(e.do(asCrawler, "POST", path, seedFileWorkflow("0.11", fid, "default")), 400, "seed_file_not_supported_by_crawler")
	if r := e.do(asCrawler, "POST", path, seedFileWorkflow("bad id", "nope", "test")); r.Code != 422 {
		t.Fatalf("malformed seedFileId: %d %s", r.Code, r.Body)
	}

	// A seed-file workflow.
	cid := e.createWorkflow(asCrawler, seedFileWorkflow("from a file", fid, "test"))["id"].(string)
	wf := e.mustJSON(asViewer, "GET", path+cid, nil, 200)
	if wf["firstSeed"] != "https://specs.webrecorder.net" || wf["seedCount"] != 2.0 ||
		get(wf, "config", "scopeType") != "page" || get(wf, "config", "seedFileId") != fid {
		t.Fatalf("workflow %v", wf)
	}
	e.wantDetail(e.do(asCrawler, "DELETE", e.orgPath("/files/"+fid), nil), 400, "seed_file_in_use")
	e.wantDetail(e.do(asCrawler, "PATCH", path+cid, map[string]any{"crawlerChannel": "default"}), 400, "seed_file_not_supported_by_crawler")

	// A run: the crawler's link downloads the file.
	started := e.mustJSON(asCrawler, "POST", path+cid+"/run", nil, 200)["started"].(string)
	e.launcher.mu.Lock()
	req := e.launcher.launched[len(e.launcher.launched)-1]
	e.launcher.mu.Unlock()
	var crawlerCfg map[string]any
	if err := json.Unmarshal(req.ConfigJSON, &crawlerCfg); err != nil {
		t.Fatal(err)
	}
	link := req.Spec.SeedFileURL
	if req.Spec.ID != started || link == "" || crawlerCfg["seedFile"] != link || crawlerCfg["seedFileId"] != nil || crawlerCfg["scopeType"] != "page" {
		t.Fatalf("launch: spec.seedFileUrl %q, crawl-config.json %s", link, req.ConfigJSON)
	}
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != twoSeeds {
		t.Fatalf("GET seed file link: %d %q", res.StatusCode, body)
	}
	replay := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+started+"/replay.json"), nil, 200)
	if get(replay, "config", "seedFileId") != fid || replay["firstSeed"] != "https://specs.webrecorder.net" {
		t.Fatalf("crawl config %v firstSeed %v", get(replay, "config"), replay["firstSeed"])
	}
	e.setState(started, store.StateComplete)

	// Switching the workflow to seeds leaves the file to the crawl that
	// used it: still there, still not deletable.
	e.mustJSON(asCrawler, "PATCH", path+cid, map[string]any{"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/"}}}}, 200)
	wf = e.mustJSON(asViewer, "GET", path+cid, nil, 200)
	if wf["firstSeed"] != "https://example.com/" || get(wf, "config", "seedFileId") != nil || wf["seedCount"] != nil {
		t.Fatalf("workflow after switching to seeds %v", wf)
	}
	e.mustJSON(asViewer, "GET", e.orgPath("/files/"+fid), nil, 200)
	e.wantDetail(e.do(asCrawler, "DELETE", e.orgPath("/files/"+fid), nil), 400, "seed_file_in_use")

	// A workflow that names a seed file on a 0.11 channel (stored before
	// the check, or its channel changed in the configuration) cannot run.
	id := uuid.MustParse(fid)
	old := &store.CrawlConfig{ID: uuid.New(), OID: e.org, Name: ptr("old"), JobType: "custom", CrawlerChannel: "default",
		Config: store.RawCrawlConfig{ScopeType: "page", SeedFileID: &id}, Scale: 1, Tags: []string{}}
	if err := e.store.CreateCrawlConfig(ctx, old); err != nil {
		t.Fatal(err)
	}
	e.wantDetail(e.do(asCrawler, "POST", path+old.ID.String()+"/run", nil), 400, "seed_file_not_supported_by_crawler")

	// A file only a switched-away workflow used goes with the switch.
	other, _ := get(e.putSeedFile(asCrawler, "?filename=other.txt", []byte(twoSeeds)).JSON(), "id").(string)
	cid2 := e.createWorkflow(asCrawler, seedFileWorkflow("switching", other, "test"))["id"].(string)
	e.mustJSON(asCrawler, "PATCH", path+cid2, map[string]any{"config": map[string]any{"seedFileId": fid}}, 200)
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/files/"+other), nil), 404, "file_not_found")
}

// TestSeedFileCleanup (upstream-2026 §4.5): a cleanup run deletes, object
// and document, the seed files older than the limit that no workflow or
// crawl references, recounts the org's bytes and records a successful
// run in jobs; a referenced file and a newer one stay.
func TestSeedFileCleanup(t *testing.T) {
	e := seedFileEnv(t)
	ctx := context.Background()
	upload := func(filename string) (id, name string) {
		t.Helper()
		id, _ = get(e.putSeedFile(asCrawler, "?filename="+filename, []byte(twoSeeds)).JSON(), "id").(string)
		f := e.mustJSON(asViewer, "GET", e.orgPath("/files/"+id), nil, 200)
		return id, f["name"].(string)
	}
	used, usedName := upload("used.txt")
	unused, unusedName := upload("unused.txt")
	e.createWorkflow(asCrawler, seedFileWorkflow("uses a file", used, "test"))

	// Nothing is old enough yet.
	e.srv.cfg.SeedFileCleanupAfter = time.Hour
	if _, err := e.srv.cleanupSeedFiles(ctx); err != nil {
		t.Fatal(err)
	}
	if e.stored(unusedName) == "" {
		t.Fatal("a new seed file was cleaned up")
	}

	e.srv.cfg.SeedFileCleanupAfter = -time.Minute // every file is older than "a minute from now"
	job, err := e.srv.cleanupSeedFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/files/"+unused), nil), 404, "file_not_found")
	if e.stored(unusedName) != "" {
		t.Error("the unused file's object remains")
	}
	if e.stored(usedName) != twoSeeds {
		t.Error("the used file's object is gone")
	}
	e.mustJSON(asViewer, "GET", e.orgPath("/files/"+used), nil, 200)
	if o := e.orgDoc(); o.BytesStoredSeedFiles != int64(len(twoSeeds)) {
		t.Errorf("seed-file bytes %d after the cleanup, want the used file's %d", o.BytesStoredSeedFiles, len(twoSeeds))
	}
	rec := e.mustJSON(asAdmin, "GET", "/api/orgs/all/jobs/"+job.ID, nil, 200)
	if rec["type"] != "cleanup-seed-files" || rec["success"] != true || rec["finished"] == nil ||
		!strings.HasPrefix(job.ID, "seed-files-") || len(job.ID) != len("seed-files-")+10 {
		t.Fatalf("job record %s: %v", job.ID, rec)
	}
}
