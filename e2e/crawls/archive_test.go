package crawls

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/s3"
)

// The end-to-end tests of the archive API (collections, uploads, browser
// profiles) on the shared development stack of main_test.go. Each
// works in an org of its own, so its storage accounting is exact.

// stored reads an object of the stack's bucket.
func stored(t *testing.T, b *s3.Bucket, key string) ([]byte, error) {
	t.Helper()
	o, err := b.Open(t.Context(), key)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return io.ReadAll(o)
}

// objects lists the keys under prefix.
func objects(t *testing.T, b *s3.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	for o, err := range b.List(t.Context(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// TestCollectionsEndToEnd: two crawls of a workflow with
// autoAddCollections join the collection and count in it; its download
// holds both crawls' WACZ files exactly as stored; removing a crawl
// changes the counts; a public collection's replay needs no token.
func TestCollectionsEndToEnd(t *testing.T) {
	d := sharedStack(t)
	c := newClient(t, d)
	c.inNewOrg("e2e collections")
	coll := c.Object("POST", c.Org("/collections"), map[string]any{"name": "Tést collection"}, 200)["id"].(string)
	wf := c.Object("POST", c.Org("/crawlconfigs/"), map[string]any{
		"name": "auto-add", "runNow": true, "autoAddCollections": []string{coll}, "tags": []string{"e2e"},
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/?sim-pages=4&sim-bytes=20000"}}},
	}, 200)
	first := c.waitCrawl(wf["run_now_job"].(string))
	second := c.waitCrawl(c.Object("POST", c.Org("/crawlconfigs/"+wf["id"].(string)+"/run"), nil, 200)["started"].(string))
	crawls := []map[string]any{first, second}
	var pages, size float64
	for _, cr := range crawls {
		if cr["state"] != "complete" {
			t.Fatalf("crawl %s ended %v", cr["id"], cr["state"])
		}
		pages += cr["stats"].(map[string]any)["done"].(float64)
		size += cr["fileSize"].(float64)
	}
	got := eventually(t, "collection counts", func() map[string]any { return c.Object("GET", c.Org("/collections/"+coll), nil, 200) },
		func(m map[string]any) bool { return m["crawlCount"] == 2.0 })
	if got["pageCount"] != pages || got["totalSize"] != size || len(got["tags"].([]any)) != 1 {
		t.Fatalf("collection %v, want %v pages, %v bytes, tags [e2e]", got, pages, size)
	}

	// The download: every file of both crawls, byte-identical to storage.
	var want []string
	for _, cr := range crawls {
		for _, r := range c.Object("GET", c.Org("/crawls/"+cr["id"].(string)+"/replay.json"), nil, 200)["resources"].([]any) {
			want = append(want, r.(map[string]any)["name"].(string))
		}
	}
	code, raw := c.Send("GET", c.Org("/collections/"+coll+"/download"), nil, "application/json")
	if code != 200 {
		t.Fatalf("download: %d %s", code, raw)
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	b := bucket(t, d)
	var members []string
	for _, f := range zr.File {
		if f.Name == "datapackage.json" {
			continue
		}
		members = append(members, f.Name)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		inZip, _ := io.ReadAll(rc)
		rc.Close()
		inStorage, err := stored(t, b, f.Name)
		if err != nil || !bytes.Equal(inZip, inStorage) || f.Method != zip.Store {
			t.Errorf("%s: %d bytes in the zip (method %d), %d in storage (%v)", f.Name, len(inZip), f.Method, len(inStorage), err)
		}
	}
	slices.Sort(members)
	slices.Sort(want)
	if !slices.Equal(members, want) || zr.File[len(zr.File)-1].Name != "datapackage.json" {
		t.Fatalf("zip members %v, want %v and datapackage.json last", members, want)
	}

	out := c.Object("POST", c.Org("/collections/"+coll+"/remove"), map[string]any{"crawlIds": []string{first["id"].(string)}}, 200)
	if out["crawlCount"] != 1.0 || out["totalSize"] != second["fileSize"] || out["pageCount"] != second["stats"].(map[string]any)["done"] {
		t.Fatalf("after removing a crawl: %v", out)
	}

	// Public: the replay answers without a token, its links download.
	public := d.APIURL + c.Org("/collections/"+coll+"/public/replay.json")
	if resp, err := http.Get(public); err != nil || resp.StatusCode != 404 {
		t.Fatalf("private collection's public replay: %v %v", resp, err)
	}
	c.Object("PATCH", c.Org("/collections/"+coll), map[string]any{"isPublic": true}, 200)
	resp, err := http.Get(public)
	if err != nil {
		t.Fatal(err)
	}
	var replay struct {
		Resources []struct{ Name, Path, Hash string } `json:"resources"`
	}
	err = json.NewDecoder(resp.Body).Decode(&replay)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || len(replay.Resources) == 0 {
		t.Fatalf("public replay: %d %v %+v", resp.StatusCode, err, replay)
	}
	for _, r := range replay.Resources {
		sum := sha256.Sum256(e2etest.Download(t, shared.stack.APIURL, r.Path))
		if hex.EncodeToString(sum[:]) != r.Hash {
			t.Errorf("%s: public link downloads other bytes", r.Name)
		}
	}
}

// TestUploadsEndToEnd: a crawl's WACZ uploaded by stream and by form is
// stored under the org's uploads folder and counted in bytesStored; lists
// and reads show it; replaceId swaps the file; delete removes files and
// bytes; an upload past the quota is refused and leaves nothing.
func TestUploadsEndToEnd(t *testing.T) {
	d := sharedStack(t)
	c := newClient(t, d)
	c.inNewOrg("e2e uploads")
	b := bucket(t, d)
	crawl := c.runCrawl("wacz source", "https://example.com/?sim-pages=3&sim-bytes=5000", 1)
	res := c.Object("GET", c.Org("/crawls/"+crawl["id"].(string)+"/replay.json"), nil, 200)["resources"].([]any)
	wacz := e2etest.Download(t, shared.stack.APIURL, res[0].(map[string]any)["path"].(string))
	base := c.bytesStored()
	uploads := c.OID + "/uploads/"

	put := func(path, contentType string, body []byte) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("PUT", c.Base+c.Org(path), bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.Token)
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, out := put("/uploads/stream?filename=test.wacz&name=Streamed", "application/octet-stream", wacz)
	if code != 200 {
		t.Fatalf("stream upload: %d %v", code, out)
	}
	streamed := out["id"].(string)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	for _, name := range []string{"one.wacz", "two.wacz"} {
		fw, _ := mw.CreateFormFile("uploads", name)
		fw.Write(wacz)
	}
	mw.Close()
	code, out = put("/uploads/formdata?name=Form", mw.FormDataContentType(), form.Bytes())
	if code != 200 {
		t.Fatalf("form upload: %d %v", code, out)
	}
	formed := out["id"].(string)

	if keys := objects(t, b, uploads); len(keys) != 3 {
		t.Fatalf("stored uploads %v", keys)
	}
	for _, k := range objects(t, b, uploads) {
		if data, err := stored(t, b, k); err != nil || !bytes.Equal(data, wacz) {
			t.Errorf("%s differs from the uploaded file (%v)", k, err)
		}
	}
	if got, want := c.bytesStored(), base+3*float64(len(wacz)); got != want {
		t.Fatalf("bytesStored %v, want %v", got, want)
	}
	list := c.Object("GET", c.Org("/uploads"), nil, 200)
	if list["total"] != 2.0 {
		t.Fatalf("uploads %v", list)
	}
	for _, id := range []string{streamed, formed} {
		u := c.Object("GET", c.Org("/uploads/"+id), nil, 200)
		if u["type"] != "upload" || u["state"] != "complete" || u["cid"] != nil {
			t.Errorf("upload %v", u)
		}
		for _, r := range c.Object("GET", c.Org("/uploads/"+id+"/replay.json"), nil, 200)["resources"].([]any) {
			if !bytes.Equal(e2etest.Download(t, shared.stack.APIURL, r.(map[string]any)["path"].(string)), wacz) {
				t.Errorf("%s: its link downloads other bytes", id)
			}
		}
	}

	// replaceId: the same upload, only the new bytes (a smaller WACZ:
	// the crawl's without its WARCs).
	smaller := waczWithout(t, wacz, "archive/")
	if code, out := put("/uploads/stream?filename=test.wacz&replaceId="+streamed, "application/octet-stream", smaller); code != 200 || out["id"] != streamed {
		t.Fatalf("replace: %d %v", code, out)
	}
	keys := objects(t, b, uploads+streamed+"/")
	if data, _ := stored(t, b, keys[0]); len(keys) != 1 || !bytes.Equal(data, smaller) {
		t.Fatalf("after the replacement: %v", keys)
	}
	if got, want := c.bytesStored(), base+2*float64(len(wacz))+float64(len(smaller)); got != want {
		t.Fatalf("bytesStored after the replacement %v, want %v", got, want)
	}

	c.Object("POST", c.Org("/uploads/delete"), map[string]any{"crawl_ids": []string{streamed, formed}}, 200)
	if keys := objects(t, b, uploads); len(keys) != 0 || c.bytesStored() != base {
		t.Fatalf("after the delete: %v stored, bytesStored %v, want %v", keys, c.bytesStored(), base)
	}

	// Past the quota: refused with upstream's detail, nothing stored.
	c.Object("POST", c.Org("/quotas"), map[string]any{"storageQuota": base + float64(len(wacz)/2)}, 200)
	code, out = put("/uploads/stream?filename=big.wacz", "application/octet-stream", wacz)
	if code != 403 || out["detail"] != "storage_quota_reached" {
		t.Fatalf("upload past the quota: %d %v", code, out)
	}
	if keys := objects(t, b, uploads); len(keys) != 0 || c.bytesStored() != base {
		t.Fatalf("a refused upload left %v (bytesStored %v)", keys, c.bytesStored())
	}
}

// waczWithout is wacz without the entries whose names start with prefix.
func waczWithout(t *testing.T, wacz []byte, prefix string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(wacz), int64(len(wacz)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, prefix) {
			if err := zw.Copy(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestProfilesEndToEnd: a profile browser starts as a pod, is pinged,
// navigated and saved into a profile whose file lands in storage; a crawl
// with the profile loads it (and fails without it); deleting the profile
// deletes the file; a browser nobody pings is removed at its expiry.
func TestProfilesEndToEnd(t *testing.T) {
	d := sharedStack(t)
	c := newClient(t, d)
	c.inNewOrg("e2e profiles")
	b := bucket(t, d)
	ns := "crawlers"
	jobs := versioned.NewForConfigOrDie(d.Env.Cluster.Config).TrawlerV1().ProfileJobs(ns)

	browser := c.Object("POST", c.Org("/profiles/browser"), map[string]any{"url": "https://example.com/login"}, 200)["browserid"].(string)
	path := c.Org("/profiles/browser/" + browser)
	eventually(t, "the browser's VNC access", func() map[string]any { return c.Object("GET", path, nil, 200) },
		func(m map[string]any) bool { return m["url"] != nil })
	pod, err := d.Env.Client.CoreV1().Pods(ns).Get(t.Context(), k8s.BrowserPodName(browser), metav1.GetOptions{})
	if err != nil || pod.Spec.Containers[0].Command[0] != "create-login-profile" {
		t.Fatalf("browser pod: %v", err)
	}
	c.Object("POST", path+"/navigate", map[string]any{"url": "https://example.org/account"}, 200)
	ping := c.Object("POST", path+"/ping", nil, 200)
	if origins := ping["origins"].([]any); len(origins) != 2 || origins[1] != "https://example.org" {
		t.Fatalf("ping: %v", ping)
	}

	added := c.Object("POST", c.Org("/profiles"), map[string]any{"browserid": browser, "name": "Logged in"}, 200)
	pid := added["id"].(string)
	profile := c.Object("GET", c.Org("/profiles/"+pid), nil, 200)
	resource := profile["resource"].(map[string]any)
	key := c.OID + "/profiles/profile-" + pid + ".tar.gz"
	data, err := stored(t, b, key)
	sum := sha256.Sum256(data)
	if err != nil || float64(len(data)) != resource["size"] || hex.EncodeToString(sum[:]) != resource["hash"] ||
		len(profile["origins"].([]any)) != 2 || c.bytesStored() != resource["size"] {
		t.Fatalf("saved profile %v: stored %d bytes (%v), bytesStored %v", profile, len(data), err, c.bytesStored())
	}
	if _, err := jobs.Get(t.Context(), k8s.ProfileJobName(browser), metav1.GetOptions{}); err == nil {
		t.Error("the saved browser's ProfileJob is still there")
	}

	// A crawl with the profile gets the crawler's --profile and loads it.
	wf := c.Object("POST", c.Org("/crawlconfigs/"), map[string]any{
		"name": "with profile", "runNow": true, "profileid": pid,
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/?sim-pages=3"}}},
	}, 200)
	crawlID := wf["run_now_job"].(string)
	crawlerPod := k8s.CrawlerName(crawlID, 0)
	var args []string
	eventually(t, "the crawler pod", func() map[string]any {
		p, err := d.Env.Client.CoreV1().Pods(ns).Get(t.Context(), crawlerPod, metav1.GetOptions{})
		if err == nil {
			args = p.Spec.Containers[0].Command
		}
		return map[string]any{"args": args}
	}, func(map[string]any) bool { return args != nil })
	if i := slices.Index(args, "--profile"); i < 0 || args[i+1] != "@profiles/profile-"+pid+".tar.gz" {
		t.Fatalf("crawler command %v", args)
	}
	if crawl := c.waitCrawl(crawlID); crawl["state"] != "complete" || crawl["profileName"] != "Logged in" {
		t.Fatalf("crawl with the profile: %v", crawl)
	}
	if logs := d.Env.Kubelet.Logs(ns, crawlerPod, "crawler"); !strings.Contains(logs, `"message":"Loaded profile"`) {
		t.Fatalf("the crawler did not load the profile:\n%s", logs)
	}

	// Without its file the crawler cannot load it, and the crawl fails.
	if err := b.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	failed := c.waitCrawl(c.Object("POST", c.Org("/crawlconfigs/"+wf["id"].(string)+"/run"), nil, 200)["started"].(string))
	if failed["state"] != "failed" {
		t.Fatalf("crawl with a missing profile ended %v", failed["state"])
	}

	// Delete: refused while a workflow uses it, then the file goes.
	if out := c.Object("DELETE", c.Org("/profiles/"+pid), nil, 200); out["error"] != "in_use" {
		t.Fatalf("delete in use: %v", out)
	}
	c.Object("PATCH", c.Org("/crawlconfigs/"+wf["id"].(string)), map[string]any{"profileid": ""}, 200)
	data = []byte("a profile archive")
	if _, err := b.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)), ""); err != nil {
		t.Fatal(err)
	}
	if out := c.Object("DELETE", c.Org("/profiles/"+pid), nil, 200); out["success"] != true {
		t.Fatalf("delete: %v", out)
	}
	if _, err := b.Stat(t.Context(), key); !errors.Is(err, s3.ErrNotFound) {
		t.Fatalf("the profile file after the delete: %v", err)
	}

	// A browser nobody pings is removed at its expiry, pod and all.
	idle := c.Object("POST", c.Org("/profiles/browser"), map[string]any{"url": "https://example.com/"}, 200)["browserid"].(string)
	start := time.Now()
	eventually(t, "the idle browser's removal", func() map[string]any {
		_, jobErr := jobs.Get(t.Context(), k8s.ProfileJobName(idle), metav1.GetOptions{})
		_, podErr := d.Env.Client.CoreV1().Pods(ns).Get(t.Context(), k8s.BrowserPodName(idle), metav1.GetOptions{})
		return map[string]any{"job": jobErr, "pod": podErr}
	}, func(m map[string]any) bool { return m["job"] != nil && m["pod"] != nil })
	if took := time.Since(start); took < k8s.ProfileBrowserTTL-5*time.Second {
		t.Fatalf("the idle browser went after %v, before its expiry", took)
	}
	if code, _ := c.Send("POST", c.Org("/profiles/browser/"+idle+"/ping"), nil, "application/json"); code != 404 {
		t.Fatalf("ping of an expired browser: %d", code)
	}
}
