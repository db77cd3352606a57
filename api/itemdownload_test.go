package api

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"
)

// unzipped is a downloaded multi-WACZ: its member names in order, their
// bytes and the decoded datapackage.json (raw too).
type unzipped struct {
	names   []string
	data    map[string][]byte
	pkg     itemPackage
	rawPkg  string
	members []*zip.File
}

func unzipDownload(t *testing.T, body []byte) unzipped {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	u := unzipped{data: map[string][]byte{}, members: zr.File}
	for _, f := range zr.File {
		u.names = append(u.names, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC too
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		u.data[f.Name] = b
	}
	u.rawPkg = string(u.data["datapackage.json"])
	if err := json.Unmarshal(u.data["datapackage.json"], &u.pkg); err != nil {
		t.Fatalf("datapackage.json: %v\n%s", err, u.rawPkg)
	}
	return u
}

// wantDownload checks a 200 WACZ answer named filename.
func wantDownload(t *testing.T, r *httptest.ResponseRecorder, filename string) {
	t.Helper()
	if r.Code != 200 || r.Header().Get("Content-Type") != "application/wacz+zip" ||
		r.Header().Get("Content-Disposition") != `attachment; filename="`+filename+`"` {
		t.Fatalf("download: %d %v %.200s", r.Code, r.Header(), r.Body)
	}
}

// TestItemDownload (upstream-2026.md §8.2): a crawl, an upload and either
// through all-crawls download as a flat multi-WACZ of their stored files
// with upstream's datapackage.json, or as their only WACZ when asked.
func TestItemDownload(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	bodies := [][]byte{bytes.Repeat([]byte("first wacz "), 50000), []byte("second wacz")}
	id, keys := e.finishedCrawlWithFiles(bodies...)
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawls/"+id), map[string]any{"name": "My Crawl", "description": "two files"}, 200)

	r := e.doRaw(asViewer, "GET", e.orgPath("/crawls/"+id+"/download"), nil)
	wantDownload(t, r, id+".wacz")
	u := unzipDownload(t, r.Body.Bytes())
	want := []string{path.Base(keys[0]), path.Base(keys[1]), "datapackage.json"}
	if strings.Join(u.names, " ") != strings.Join(want, " ") {
		t.Fatalf("members %v, want %v (flat, datapackage.json last)", u.names, want)
	}
	for _, f := range u.members {
		if f.Method != zip.Store || !f.Modified.Equal(zipEpoch) || f.Mode().Perm() != 0o664 {
			t.Errorf("%s: method %d modified %v mode %v", f.Name, f.Method, f.Modified, f.Mode())
		}
	}
	for i, k := range keys {
		if got := u.data[path.Base(k)]; !bytes.Equal(got, bodies[i]) || e.stored(k) != string(got) {
			t.Errorf("%s: %d bytes differ from the stored object", k, len(got))
		}
	}
	p := u.pkg
	if p.Profile != "multi-wacz-package" || p.Type != "crawl" || p.ID != id || p.Organization != "my-organization" ||
		!strings.HasPrefix(p.Software, "Browsertrix v") || p.Title != "My Crawl" || p.Description != "two files" || len(p.Resources) != 2 {
		t.Fatalf("datapackage %s", u.rawPkg)
	}
	for i, res := range p.Resources {
		if res.Name != want[i] || res.Path != res.Name || res.Hash != "sha256:h" || res.Bytes != int64(len(bodies[i])) {
			t.Errorf("resource %+v", res)
		}
	}
	if !strings.HasPrefix(u.rawPkg, "{\n  \"profile\": \"multi-wacz-package\",\n  \"resources\": [") {
		t.Errorf("datapackage.json not upstream's layout (two-space indent, profile first):\n%s", u.rawPkg)
	}

	// all-crawls answers the same bytes; withDependencies only renames,
	// as trawler's items have no dependencies.
	all := e.doRaw(asViewer, "GET", e.orgPath("/all-crawls/"+id+"/download"), nil)
	wantDownload(t, all, id+".wacz")
	if !bytes.Equal(all.Body.Bytes(), r.Body.Bytes()) {
		t.Error("all-crawls download differs from the crawls one")
	}
	deps := e.doRaw(asViewer, "GET", e.orgPath("/crawls/"+id+"/download?withDependencies=true"), nil)
	wantDownload(t, deps, id+"-with-deps.wacz")

	// preferSingleWACZ: only a one-file item is answered with its file.
	wantDownload(t, e.doRaw(asViewer, "GET", e.orgPath("/crawls/"+id+"/download?preferSingleWACZ=true"), nil), id+".wacz")
	one, oneKeys := e.finishedCrawlWithFiles([]byte("PK the only wacz"))
	single := e.doRaw(asViewer, "GET", e.orgPath("/crawls/"+one+"/download?preferSingleWACZ=true"), nil)
	wantDownload(t, single, path.Base(oneKeys[0]))
	if single.Body.String() != "PK the only wacz" || single.Header().Get("Content-Length") != "16" {
		t.Fatalf("single WACZ: %q, Content-Length %s", single.Body, single.Header().Get("Content-Length"))
	}
	if u := unzipDownload(t, e.doRaw(asViewer, "GET", e.orgPath("/crawls/"+one+"/download"), nil).Body.Bytes()); len(u.names) != 2 {
		t.Fatalf("one-file crawl without preferSingleWACZ: members %v", u.names)
	}
	if r := e.do(asViewer, "GET", e.orgPath("/crawls/"+one+"/download?preferSingleWACZ=maybe"), nil); r.Code != 422 {
		t.Fatalf("preferSingleWACZ=maybe: %d %s", r.Code, r.Body)
	}

	// An upload: type and title from it; its route takes no query.
	uploaded := testWACZ(t, "uploaded wacz")
	up := e.mustJSON(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=site.wacz&name=My%20Upload"),
		typedBody{"application/octet-stream", uploaded}, 200)["id"].(string)
	ur := e.doRaw(asViewer, "GET", e.orgPath("/uploads/"+up+"/download?preferSingleWACZ=true"), nil)
	wantDownload(t, ur, up+".wacz")
	uu := unzipDownload(t, ur.Body.Bytes())
	if len(uu.names) != 2 || !strings.HasPrefix(uu.names[0], "site-") || string(uu.data[uu.names[0]]) != string(uploaded) ||
		uu.pkg.Type != "upload" || uu.pkg.ID != up || uu.pkg.Title != "My Upload" || uu.pkg.Description != "" ||
		strings.Contains(uu.rawPkg, `"description"`) || len(uu.pkg.Resources[0].Hash) != len("sha256:")+64 {
		t.Fatalf("upload download %v %s", uu.names, uu.rawPkg)
	}
	wantDownload(t, e.doRaw(asViewer, "GET", e.orgPath("/all-crawls/"+up+"/download?preferSingleWACZ=1"), nil), uu.names[0])
}

// TestItemDownloadRefusals: what is not downloadable, and by whom.
func TestItemDownloadRefusals(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	id, _ := e.finishedCrawlWithFiles([]byte("wacz"))
	empty, _ := e.finishedCrawlWithFiles()
	up := e.mustJSON(asCrawler, "PUT", e.orgPath("/uploads/stream?filename=u.wacz"),
		typedBody{"application/octet-stream", testWACZ(t, "upload")}, 200)["id"].(string)

	for _, route := range []string{"/crawls/", "/all-crawls/", "/uploads/"} {
		e.wantDetail(e.do(asViewer, "GET", e.orgPath(route+empty+"/download"), nil), 400, "no_crawl_resources")
		e.wantDetail(e.do(asViewer, "GET", e.orgPath(route+"nope/download"), nil), 404, "Crawl not found: nope")
		if r := e.do(asAnonymous, "GET", e.orgPath(route+id+"/download"), nil); r.Code != 401 {
			t.Errorf("%s without a token: %d", route, r.Code)
		}
		// A non-member learns nothing of the org, as on every org route.
		e.wantDetail(e.do(asOutsider, "GET", e.orgPath(route+id+"/download"), nil), 404, "Organization '"+e.org.String()+"' not found")
	}

	// A plain link works: browsers cannot add the Authorization header,
	// so the token may come in auth_bearer, as on upstream's routes.
	if r := e.do(asAnonymous, "GET", e.orgPath("/crawls/"+id+"/download?auth_bearer="+e.tokens[asViewer]), nil); r.Code != 200 {
		t.Errorf("download with auth_bearer: %d %s", r.Code, r.Body)
	}

	// Through another org, an item is unknown.
	other := e.mustJSON(asOutsider, "GET", "/api/orgs", nil, 200)["items"].([]any)[0].(map[string]any)["id"].(string)
	e.wantDetail(e.do(asOutsider, "GET", "/api/orgs/"+other+"/crawls/"+id+"/download", nil), 404, "Crawl not found: "+id)
	e.wantDetail(e.do(asOutsider, "GET", "/api/orgs/"+other+"/uploads/"+up+"/download", nil), 404, "Crawl not found: "+up)

	// Upstream's download routes do not filter by type: an upload on the
	// crawls route, or a crawl on the uploads route, downloads as what it is.
	r := e.doRaw(asViewer, "GET", e.orgPath("/crawls/"+up+"/download"), nil)
	wantDownload(t, r, up+".wacz")
	if p := unzipDownload(t, r.Body.Bytes()).pkg; p.Type != "upload" {
		t.Errorf("upload through /crawls: type %q", p.Type)
	}
	r = e.doRaw(asViewer, "GET", e.orgPath("/uploads/"+id+"/download"), nil)
	wantDownload(t, r, id+".wacz")
	if p := unzipDownload(t, r.Body.Bytes()).pkg; p.Type != "crawl" {
		t.Errorf("crawl through /uploads: type %q", p.Type)
	}
}

// TestItemDownloadStorageDown: with the S3 server down, a download is a
// 503 JSON error (not a 500, nor a broken zip, nor the file's headers:
// the length is the error's own), and works again once the server is
// back.
func TestItemDownloadStorageDown(t *testing.T) {
	own := ownS3(t)
	e := newStorageEnv(t, own, time.Hour)
	id, _ := e.finishedCrawlWithFiles([]byte("wacz while up"))
	if err := own.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"", "?preferSingleWACZ=true"} {
		r := e.doRaw(asViewer, "GET", e.orgPath("/crawls/"+id+"/download"+q), nil)
		if r.Code != 503 || !strings.HasPrefix(r.Header().Get("Content-Type"), "application/json") ||
			r.Header().Get("Content-Disposition") != "" || r.Header().Get("Content-Length") != strconv.Itoa(r.Body.Len()) ||
			strings.TrimSpace(r.Body.String()) != `{"detail":"download_failed"}` {
			t.Fatalf("storage down%s: %d %v %s", q, r.Code, r.Header(), r.Body)
		}
	}
	if err := own.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := e.doRaw(asViewer, "GET", e.orgPath("/crawls/"+id+"/download?preferSingleWACZ=true"), nil)
	if r.Code != 200 || r.Body.String() != "wacz while up" || r.Header().Get("Content-Length") != strconv.Itoa(13) {
		t.Fatalf("after restart: %d %q", r.Code, r.Body)
	}
}

func TestOrgSlug(t *testing.T) {
	for name, want := range map[string]string{
		"My Organization":        "my-organization",
		"  Café -- Crawls!  2":   "café-crawls-2",
		"already-a-slug":         "already-a-slug",
		"!!!":                    "",
		"Org_with.dots/and_bars": "org-with-dots-and-bars",
	} {
		if got := orgSlug(name); got != want {
			t.Errorf("orgSlug(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestSHA256Digest(t *testing.T) {
	for hash, want := range map[string]string{"ab12": "sha256:ab12", "sha256:ab12": "sha256:ab12", "": ""} {
		if got := sha256Digest(hash); got != want {
			t.Errorf("sha256Digest(%q) = %q, want %q", hash, got, want)
		}
	}
}
