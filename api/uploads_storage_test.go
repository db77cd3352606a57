package api

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"mime/multipart"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// stored reads an object of the env's bucket ("" when there is none).
func (e *storageEnv) stored(key string) string {
	e.t.Helper()
	o, err := e.bucket.Open(context.Background(), key)
	if err != nil {
		return ""
	}
	defer o.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(o); err != nil {
		e.t.Fatal(err)
	}
	return buf.String()
}

// keys lists the env's stored objects under prefix.
func (e *storageEnv) keys(prefix string) []string {
	e.t.Helper()
	var out []string
	for o, err := range e.bucket.List(context.Background(), prefix) {
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, o.Key)
	}
	return out
}

func formBody(t testing.TB, part string, files map[string]string, order ...string) typedBody {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, name := range order {
		fw, err := w.CreateFormFile(part, name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(files[name]))
	}
	w.Close()
	return typedBody{contentType: w.FormDataContentType(), data: buf.Bytes()}
}

// TestUploads: stream and form uploads land in storage under the org's
// uploads folder, count in bytesStored and their collections; replaceId
// swaps the file; the quota is upstream's 403; delete removes the files.
func TestUploads(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	oid := e.org.String()
	coll := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "c"}, 200)["id"].(string)
	stream := func(query string, body []byte) map[string]any {
		t.Helper()
		return e.mustJSON(asCrawler, "PUT", e.orgPath("/uploads/stream?"+query), typedBody{"application/octet-stream", body}, 200)
	}
	size := func(b []byte) int64 { return int64(len(b)) }

	first := testWACZ(t, "first wacz")
	up := stream("filename=dir/test.wacz&name=My%20Upload&description=Testing%0AData&tags=one%252Ctwo&collections="+coll, first)
	id := up["id"].(string)
	if !regexp.MustCompile(`^upload-[0-9a-f-]{36}$`).MatchString(id) || up["added"] != true || up["storageQuotaReached"] != false {
		t.Fatalf("upload: %v", up)
	}
	keys := e.keys(oid + "/uploads/" + id + "/")
	if len(keys) != 1 || !regexp.MustCompile(`/test-[a-z2-7]{8}\.wacz$`).MatchString(keys[0]) || e.stored(keys[0]) != string(first) {
		t.Fatalf("stored %v", keys)
	}
	u := e.mustJSON(asCrawler, "GET", e.orgPath("/uploads/"+id), nil, 200)
	if u["name"] != "My Upload" || u["description"] != "Testing\nData" || !slices.Equal(toStrings(u["tags"]), []string{"one", "two"}) ||
		!slices.Equal(toStrings(u["collectionIds"]), []string{coll}) || u["fileSize"] != float64(len(first)) {
		t.Fatalf("upload doc %v", u)
	}
	res := e.mustJSON(asViewer, "GET", e.orgPath("/uploads/"+id+"/replay.json"), nil, 200)["resources"].([]any)
	if len(res) != 1 || get(res[0], "name") != keys[0] || get(res[0], "size") != float64(len(first)) {
		t.Fatalf("resources %v", res)
	}
	if code, body := httpGet(t, get(res[0], "path").(string)); code != 200 || !bytes.Equal(body, first) {
		t.Fatalf("download %d %q", code, body)
	}
	if c := e.mustJSON(asViewer, "GET", e.orgPath("/collections/"+coll), nil, 200); c["crawlCount"] != 1.0 || c["totalSize"] != float64(len(first)) {
		t.Fatalf("collection %v", c)
	}
	if n := e.bytesStored(); n != size(first) {
		t.Fatalf("bytesStored %d", n)
	}

	// Three parts, two of the same name: three files of one upload.
	a, b := testWACZ(t, "aaa"), testWACZ(t, "bbbb")
	form := e.mustJSON(asCrawler, "PUT", e.orgPath("/uploads/formdata?name=form"),
		formBody(t, "uploads", map[string]string{"a.wacz": string(a), "b.wacz": string(b)}, "a.wacz", "a.wacz", "b.wacz"), 200)
	formID := form["id"].(string)
	if res := e.mustJSON(asViewer, "GET", e.orgPath("/uploads/"+formID+"/replay.json"), nil, 200)["resources"].([]any); len(res) != 3 {
		t.Fatalf("form resources %v", res)
	}
	if n, want := e.bytesStored(), size(first)+2*size(a)+size(b); n != want {
		t.Fatalf("bytesStored %d, want %d", n, want)
	}

	// Replacing: the same id, the new bytes only.
	repl := testWACZ(t, "replacement!")
	if re := stream("filename=test.wacz&replaceId="+id, repl); re["id"] != id {
		t.Fatalf("replace: %v", re)
	}
	keys = e.keys(oid + "/uploads/" + id + "/")
	if len(keys) != 1 || e.stored(keys[0]) != string(repl) {
		t.Fatalf("after replace %v", keys)
	}
	if u := e.mustJSON(asCrawler, "GET", e.orgPath("/uploads/"+id), nil, 200); u["name"] == "My Upload" || len(u["collectionIds"].([]any)) != 0 {
		t.Fatalf("replaced upload keeps its old metadata: %v", u)
	}
	if n, want := e.bytesStored(), size(repl)+2*size(a)+size(b); n != want {
		t.Fatalf("bytesStored after replace %d, want %d", n, want)
	}
	if re := stream("filename=x.wacz&replaceId=nope", testWACZ(t, "x")); re["id"] == "nope" {
		t.Fatal("an unknown replaceId was used")
	}

	// Bad requests.
	put := func(path string, body any) resp { return e.do(asCrawler, "PUT", e.orgPath(path), body) }
	for path, body := range map[string]any{
		"/uploads/stream":                          typedBody{"application/octet-stream", []byte("x")},
		"/uploads/stream?filename=a&collections=x": typedBody{"application/octet-stream", []byte("x")},
		"/uploads/formdata":                        formBody(t, "other", map[string]string{"a": "x"}, "a"),
	} {
		if r := put(path, body); r.Code != 422 {
			t.Errorf("%s: %d %s", path, r.Code, r.Body)
		}
	}
	e.wantDetail(put("/uploads/stream?filename=a&collections="+zeroUUID, typedBody{"application/octet-stream", []byte("x")}), 404, "collection_not_found")
	e.wantDetail(e.do(asViewer, "PUT", e.orgPath("/uploads/stream?filename=a"), typedBody{"application/octet-stream", []byte("x")}), 403, detailNoCrawlPermission)

	// The quota: an upload that would go past it is refused and leaves
	// nothing; once it is reached every upload is refused.
	fits := testWACZ(t, "12345")
	before := e.bytesStored()
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"storageQuota": before + size(fits)}, 200)
	all := len(e.keys(oid + "/uploads/"))
	e.wantDetail(put("/uploads/stream?filename=big.wacz", typedBody{"application/octet-stream", testWACZ(t, strings.Repeat("123456", 100))}), 403, "storage_quota_reached")
	e.wantDetail(put("/uploads/formdata", formBody(t, "uploads", map[string]string{"a": string(testWACZ(t, "1")), "b": string(testWACZ(t, "2"))}, "a", "b")), 403, "storage_quota_reached")
	if n := len(e.keys(oid + "/uploads/")); n != all || e.bytesStored() != before {
		t.Fatalf("a refused upload left %d objects (had %d), bytesStored %d", n, all, e.bytesStored())
	}
	if r := stream("filename=fits.wacz", fits); r["storageQuotaReached"] != true {
		t.Fatalf("upload to the limit: %v", r)
	}
	e.wantDetail(put("/uploads/stream?filename=more.wacz", typedBody{"application/octet-stream", nil}), 403, "storage_quota_reached")
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{}, 200)

	// Delete: files, documents and bytes go; crawls are not uploads.
	crawl := e.finishedCrawl("a crawl", 1, 1)
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/uploads/delete"), map[string]any{"crawl_ids": []string{crawl}}), 404, "Crawl not found: "+crawl)
	list := e.mustJSON(asViewer, "GET", e.orgPath("/uploads"), nil, 200)
	var ids []string
	for _, it := range list["items"].([]any) {
		ids = append(ids, get(it, "id").(string))
	}
	del := e.mustJSON(asCrawler, "POST", e.orgPath("/uploads/delete"), map[string]any{"crawl_ids": ids}, 200)
	if del["deleted"] != float64(len(ids)) || len(e.keys(oid+"/uploads/")) != 0 || e.bytesStored() != 1 {
		t.Fatalf("delete %v: left %v, bytesStored %d", del, e.keys(oid+"/uploads/"), e.bytesStored())
	}
}

// Uploads took any bytes as a WACZ: random bytes, an empty body, a zip
// bomb. Each is now refused with a 422 that says what is wrong, and
// leaves no file, no upload and no change of bytesStored; a good part of
// a form upload goes with a bad one, and a bad replacement leaves the
// upload it was to replace as it was.
func TestUploadsMustBeWACZ(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	uploads := e.org.String() + "/uploads/"
	kept := e.mustJSON(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=kept.wacz"),
		typedBody{"application/octet-stream", testWACZ(t, "kept")}, 200)["id"].(string)
	keptKeys, before := e.keys(uploads), e.bytesStored()

	random := make([]byte, 4096)
	rand.Read(random)
	bomb := zipBomb(t, 64<<20, false)
	for name, c := range map[string]struct {
		path string
		body typedBody
		loc  string
		msg  string
	}{
		"random bytes": {"/uploads/stream?filename=r.wacz", typedBody{"application/octet-stream", random}, `["body"]`, "not a WACZ file: not a zip archive"},
		"empty body":   {"/uploads/stream?filename=e.wacz", typedBody{"application/octet-stream", nil}, `["body"]`, "not a WACZ file: the file is empty"},
		"zip bomb":     {"/uploads/stream?filename=b.wacz", typedBody{"application/octet-stream", bomb}, `["body"]`, "not a WACZ file: datapackage.json is larger than"},
		"plain zip": {"/uploads/stream?filename=z.wacz", typedBody{"application/octet-stream",
			zipOf(t, map[string][]byte{"a.txt": []byte("a")}, "a.txt")}, `["body"]`, "not a WACZ file: no datapackage.json"},
		"bad replacement": {"/uploads/stream?filename=k.wacz&replaceId=" + kept, typedBody{"application/octet-stream", random}, `["body"]`, "not a zip archive"},
		"second part bad": {"/uploads/formdata", formBody(t, "uploads", map[string]string{"good.wacz": string(testWACZ(t, "good")), "bad.wacz": ""},
			"good.wacz", "bad.wacz"), `["body","uploads",1]`, "the file is empty"},
	} {
		r := e.do(asCrawler, "PUT", e.orgPath(c.path), c.body)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":`+c.loc) || !strings.Contains(string(r.Body), c.msg) {
			t.Errorf("%s: %d %s, want 422 at %s: %s", name, r.Code, r.Body, c.loc, c.msg)
		}
		if keys := e.keys(uploads); !slices.Equal(keys, keptKeys) || e.bytesStored() != before {
			t.Fatalf("%s left %v (had %v), bytesStored %d (had %d)", name, keys, keptKeys, e.bytesStored(), before)
		}
	}
	list := e.mustJSON(asViewer, "GET", e.orgPath("/uploads"), nil, 200)
	if list["total"] != 1.0 || get(list["items"].([]any)[0], "name") == nil {
		t.Fatalf("uploads after the refusals: %v", list)
	}
	if got := e.stored(keptKeys[0]); got != string(testWACZ(t, "kept")) {
		t.Fatal("a refused replacement changed the upload")
	}
}

// TestUploadChecksCollectionsOnce: an upload checks all its collections
// with one read, and one of another org is not found, stores nothing and
// records nothing.
func TestUploadChecksCollectionsOnce(t *testing.T) {
	var cmds mongotest.Commands
	e := newStorageEnvOn(t, mongotest.Open(t, cmds.Option()), startS3(t), time.Hour)
	coll := func(name string) string {
		return e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": name}, 200)["id"].(string)
	}
	a, b := coll("a"), coll("b")
	other := &store.Collection{ID: uuid.New(), OID: uuid.New(), Name: "other org's", Modified: e.srv.now()}
	if err := e.store.CreateCollection(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	stream := func(colls ...string) resp {
		return e.do(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=u.wacz&collections="+strings.Join(colls, ",")),
			typedBody{"application/octet-stream", testWACZ(t, "wacz")})
	}

	cmds.Reset()
	if r := stream(a, b); r.Code != 200 {
		t.Fatalf("upload: %d %s", r.Code, r.Body)
	}
	if n := cmds.Count("find", "collections"); n != 1 {
		t.Errorf("the upload read its collections %d times, want 1", n)
	}

	e.wantDetail(stream(a, other.ID.String()), 404, "collection_not_found")
	uploads := e.mustJSON(asViewer, "GET", e.orgPath("/uploads"), nil, 200)
	if uploads["total"] != 1.0 || len(e.keys(e.org.String()+"/uploads/")) != 1 {
		t.Fatalf("a refused upload left a trace: %v, stored %v", uploads, e.keys(e.org.String()+"/uploads/"))
	}
}

// TestCollectionDownload: the zip holds every file of the successful
// members, byte for byte, stored, then datapackage.json.
func TestCollectionDownload(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	one, oneKeys := e.finishedCrawlWithFiles([]byte("crawl one, file a"), []byte("crawl one, file b"))
	two, _ := e.finishedCrawlWithFiles([]byte("crawl two"))
	name := "Updated tést cöllection"
	id := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": name, "crawlIds": []string{one, two}}, 200)["id"].(string)
	up := e.mustJSON(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=u.wacz&collections="+id),
		typedBody{"application/octet-stream", testWACZ(t, "the upload")}, 200)["id"].(string)

	r := e.doRaw(asViewer, "GET", e.orgPath("/collections/"+id+"/download"), nil)
	if r.Code != 200 || r.Header().Get("Content-Type") != "application/wacz+zip" ||
		r.Header().Get("Content-Disposition") != attachment(name+".wacz") {
		t.Fatalf("download: %d %v", r.Code, r.Header())
	}
	zr, err := zip.NewReader(bytes.NewReader(r.Body.Bytes()), int64(r.Body.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Method != zip.Store {
			t.Errorf("%s compressed", f.Name)
		}
		if f.Name == "datapackage.json" {
			continue
		}
		rc, _ := f.Open()
		var got bytes.Buffer
		got.ReadFrom(rc)
		rc.Close()
		if want := e.stored(f.Name); got.String() != want || want == "" {
			t.Errorf("%s: %q, stored %q", f.Name, got.String(), want)
		}
	}
	if len(names) != 5 || names[4] != "datapackage.json" || !strings.Contains(names[3], "/uploads/"+up+"/u-") {
		t.Fatalf("members %v", names)
	}

	// Members that are not successful are left out; an empty collection
	// is datapackage.json alone.
	empty := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "empty"}, 200)["id"].(string)
	r = e.doRaw(asViewer, "GET", e.orgPath("/collections/"+empty+"/download"), nil)
	if zr, err := zip.NewReader(bytes.NewReader(r.Body.Bytes()), int64(r.Body.Len())); err != nil || len(zr.File) != 1 {
		t.Fatalf("empty download: %d %v", r.Code, err)
	}
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/collections/"+zeroUUID+"/download"), nil), 404, "collection_not_found")

	// A first member whose file is gone fails the download before
	// anything is sent.
	if err := e.bucket.Delete(context.Background(), oneKeys[0]); err != nil {
		t.Fatal(err)
	}
	if r := e.do(asViewer, "GET", e.orgPath("/collections/"+id+"/download"), nil); r.Code != 500 {
		t.Fatalf("download with a missing file: %d %s", r.Code, r.Body)
	}
}

// TestProfileFileDeleted: deleting a profile deletes its file, which its
// browser saved in the org's profiles folder.
func TestProfileFileDeleted(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	id := uuid.New()
	key := e.org.String() + "/profiles/profile-" + id.String() + ".tar.gz"
	if _, err := e.bucket.Put(context.Background(), key, strings.NewReader("profile"), 7, ""); err != nil {
		t.Fatal(err)
	}
	p := &store.Profile{ID: id, OID: e.org, Name: "p", Resource: store.ProfileFile{Filename: "profile-" + id.String() + ".tar.gz",
		Size: 7, DefStorageName: ptr("default")}}
	if err := e.store.SaveProfile(context.Background(), p, false); err != nil {
		t.Fatal(err)
	}
	e.mustJSON(asCrawler, "DELETE", e.orgPath("/profiles/"+id.String()), nil, 200)
	if e.stored(key) != "" || e.bytesStored() != 0 {
		t.Fatalf("profile file left in storage (bytesStored %d)", e.bytesStored())
	}
}
