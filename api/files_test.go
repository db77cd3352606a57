package api

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// The package's S3 server starts on first use (it dies with the test
// binary, its folder with the run's); tests that stop a server start
// their own.
var (
	s3Once sync.Once
	s3Srv  *sandbox.S3
	s3Err  error
)

func startS3(t testing.TB) *sandbox.S3 {
	t.Helper()
	s3Once.Do(func() {
		dir, err := mongotest.TempDir("s3-")
		if err != nil {
			s3Err = err
			return
		}
		s3Srv, s3Err = sandbox.StartS3(context.Background(), dir)
	})
	if errors.Is(s3Err, sandbox.ErrBinaryMissing) {
		t.Skipf("S3 server not built: %v", s3Err)
	}
	if s3Err != nil {
		t.Fatal(s3Err)
	}
	return s3Srv
}

// fakeSecrets records the storage Secrets the API writes.
type fakeSecrets struct {
	mu   sync.Mutex
	data map[string]map[string]string
}

func (f *fakeSecrets) ApplyStorageSecret(_ context.Context, name string, data map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.data == nil {
		f.data = map[string]map[string]string{}
	}
	f.data[name] = data
	return nil
}

func (f *fakeSecrets) DeleteStorageSecret(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.data, name)
	return nil
}

// storageEnv is an env whose API has object storage: the "default"
// storage is a bucket of its own on srv.
type storageEnv struct {
	*env
	bucket  *s3.Bucket
	secrets *fakeSecrets
}

func newStorageEnv(t testing.TB, srv *sandbox.S3, presign time.Duration, mutate ...func(*s3.Config)) *storageEnv {
	t.Helper()
	return newStorageEnvOn(t, mongotest.Open(t), srv, presign, mutate...)
}

// newStorageEnvOn is newStorageEnv on the store db (opened, say, with a
// command counter).
func newStorageEnvOn(t testing.TB, db *mongotest.DB, srv *sandbox.S3, presign time.Duration, mutate ...func(*s3.Config)) *storageEnv {
	t.Helper()
	e := newEnvOn(t, db, nil)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	cfg := s3.Config{Name: "default", AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, BucketName: name, EndpointURL: srv.URL()}
	for _, m := range mutate {
		m(&cfg)
	}
	// Orgs' own storages in these tests are the sandbox S3 on loopback,
	// which the operator allows here.
	reg, err := s3.NewRegistry([]s3.Config{cfg}, "default", s3.Options{CustomAllowed: loopbackAllowed})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := reg.Named("default")
	if err := b.EnsureBucket(t.Context()); err != nil {
		t.Fatal(err)
	}
	apiCfg := testConfig()
	apiCfg.PresignDuration = presign
	apiCfg.AllowedOutbound = loopbackAllowed
	se := &storageEnv{env: e, bucket: b, secrets: &fakeSecrets{}}
	deps := e.deps()
	deps.Storage, deps.Secrets = reg, se.secrets
	e.srv = New(apiCfg, deps)
	e.srv.verifyBudget = testVerifyBudget
	return se
}

// finishedCrawlWithFiles runs a crawl (through the fake launcher) and
// records a stored file per body, as the operator would, then finishes it.
func (e *storageEnv) finishedCrawlWithFiles(bodies ...[]byte) (string, []string) {
	e.t.Helper()
	id := e.crawlWithFiles(nil, bodies...)
	c, err := e.store.GetCrawlByID(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, f := range c.Files {
		keys = append(keys, f.Filename)
	}
	return id, keys
}

// crawlWithFiles is finishedCrawlWithFiles with file records starting
// from records[i] (as imported from elsewhere) where given.
func (e *storageEnv) crawlWithFiles(records []store.CrawlFile, bodies ...[]byte) string {
	e.t.Helper()
	_, id := e.startCrawl(asCrawler, "files")
	e.setState(id, store.StateRunning)
	ctx := context.Background()
	for i, body := range bodies {
		key, err := s3.OrgKey(e.org.String(), id+"-"+string(rune('a'+i))+".wacz")
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.bucket.Put(ctx, key, bytes.NewReader(body), int64(len(body)), ""); err != nil {
			e.t.Fatal(err)
		}
		var f store.CrawlFile
		if i < len(records) {
			f = records[i]
		}
		f.Filename, f.Hash, f.Size, f.DefStorageName = key, "h", int64(len(body)), ptr("default")
		if _, err := e.store.AddCrawlFile(ctx, id, f); err != nil {
			e.t.Fatal(err)
		}
	}
	e.setState(id, store.StateComplete)
	return id
}

func (e *storageEnv) resources(id string) []map[string]any {
	e.t.Helper()
	out := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id+"/replay.json"), nil, 200)
	var res []map[string]any
	for _, r := range out["resources"].([]any) {
		res = append(res, r.(map[string]any))
	}
	return res
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// TestReplayLinksExpireAndAreSignedAgain: resources[].path downloads the
// file, is cached while it is valid, stops working once expired, and the
// next replay.json hands out a fresh link.
func TestReplayLinksExpireAndAreSignedAgain(t *testing.T) {
	e := newStorageEnv(t, startS3(t), 3*time.Second)
	id, keys := e.finishedCrawlWithFiles([]byte("first wacz"), []byte("second wacz"))
	res := e.resources(id)
	if len(res) != 2 {
		t.Fatalf("resources %v", res)
	}
	for i, r := range res {
		if r["name"] != keys[i] || r["crawlId"] != id || r["size"] != float64([]int{10, 11}[i]) || r["hash"] != "h" {
			t.Errorf("resource %v", r)
		}
		if code, body := httpGet(t, r["path"].(string)); code != 200 || !strings.HasSuffix(string(body), "wacz") {
			t.Fatalf("GET %s: %d %q", r["path"], code, body)
		}
	}
	again := e.resources(id)
	if again[0]["path"] != res[0]["path"] {
		t.Errorf("a valid link was signed again: %s then %s", res[0]["path"], again[0]["path"])
	}
	c, _ := e.store.GetCrawlByID(context.Background(), id)
	if c.Files[0].PresignedURL == nil || *c.Files[0].PresignedURL != res[0]["path"] || c.Files[0].ExpireAt == nil {
		t.Errorf("link not cached on the file: %+v", c.Files[0])
	}
	old := res[0]["path"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := httpGet(t, old)
		if code == http.StatusForbidden {
			break
		}
		if code != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("expired link answers %d", code)
		}
		time.Sleep(200 * time.Millisecond)
	}
	fresh := e.resources(id)
	if fresh[0]["path"] == old {
		t.Fatal("replay.json still hands out the expired link")
	}
	if code, body := httpGet(t, fresh[0]["path"].(string)); code != 200 || string(body) != "first wacz" {
		t.Fatalf("fresh link: %d %q", code, body)
	}
}

// TestStaleImportedLinkIsSignedAgain (issue 17 item 5): a file record
// that carries a presignedUrl past its expireAt, or one without an
// expiry, never reaches the user.
func TestStaleImportedLinkIsSignedAgain(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	past := time.Now().Add(-time.Minute)
	stale := []store.CrawlFile{
		{PresignedURL: ptr("https://old-system.example/stale-link"), ExpireAt: &past},
		{PresignedURL: ptr("https://old-system.example/no-expiry")},
	}
	id := e.crawlWithFiles(stale, []byte("imported"), []byte("imported too"))
	for i, r := range e.resources(id) {
		path := r["path"].(string)
		if !strings.HasPrefix(path, e.bucket.URL()) {
			t.Fatalf("resource %d path %s is not a fresh link", i, path)
		}
		if code, _ := httpGet(t, path); code != 200 {
			t.Fatalf("resource %d: %d", i, code)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// ownS3 starts an S3 server of the test's own, which it may stop and
// restart to play an outage without disturbing the shared one.
func ownS3(t *testing.T) *sandbox.S3 {
	t.Helper()
	own, err := sandbox.StartS3(t.Context(), t.TempDir())
	if errors.Is(err, sandbox.ErrBinaryMissing) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop(5 * time.Second) })
	return own
}

// TestDeleteRemovesStoredFiles: deleting crawls removes their objects
// and their bytes from the org; with storage down the crawl stays and the
// call fails with a 503 that a retry turns into success.
func TestDeleteRemovesStoredFiles(t *testing.T) {
	own := ownS3(t)
	e := newStorageEnv(t, own, time.Hour)
	before := e.bytesStored()
	id, keys := e.finishedCrawlWithFiles([]byte("0123456789"), []byte("abcdef"))
	if got := e.bytesStored(); got != before+16 {
		t.Fatalf("bytesStored %d, want %d", got, before+16)
	}
	if err := own.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/delete"), map[string]any{"crawl_ids": []string{id}}),
		503, "file_deletion_error")
	if _, err := e.store.GetCrawlByID(context.Background(), id); err != nil {
		t.Fatalf("crawl document gone although its files could not be deleted: %v", err)
	}
	if err := own.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	out := e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/delete"), map[string]any{"crawl_ids": []string{id}}, 200)
	if out["deleted"] != float64(1) {
		t.Fatalf("delete: %v", out)
	}
	for info, err := range e.bucket.List(t.Context(), e.org.String()+"/") {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("object %s left after the delete (keys %v)", info.Key, keys)
	}
	if got := e.bytesStored(); got != before {
		t.Fatalf("bytesStored %d after delete, want %d", got, before)
	}
}

func (e *storageEnv) bytesStored() int64 {
	e.t.Helper()
	o, err := e.store.GetOrg(context.Background(), e.org)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.BytesStored
}

// waczWithLogs is a minimal zip with two crawl log files.
func waczWithLogs(t *testing.T, logs map[string][]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, lines := range logs {
		w, err := zw.Create("logs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, strings.Join(lines, "\n")+"\n")
	}
	w, _ := zw.Create("pages/pages.jsonl")
	_, _ = io.WriteString(w, `{"format":"json-pages-1.0"}`+"\n")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func logLineJSON(ts, level, context, msg string) string {
	return `{"timestamp":"2026-12-01T10:00:0` + ts + `.000Z","logLevel":"` + level + `","context":"` + context +
		`","message":"` + msg + `","details":{}}`
}

// TestCrawlLogsFromWACZ: the logs of a finished crawl come from the log
// files inside its WACZ files, merged by time and filtered.
func TestCrawlLogsFromWACZ(t *testing.T) {
	e := newStorageEnv(t, startS3(t), time.Hour)
	id, _ := e.finishedCrawlWithFiles(
		waczWithLogs(t, map[string][]string{
			"crawl-1.log": {logLineJSON("1", "info", "general", "a"), logLineJSON("4", "error", "worker", "d")},
			"crawl-2.log": {logLineJSON("3", "warn", "general", "c"), "not json"},
		}),
		waczWithLogs(t, map[string][]string{"crawl-3.log": {logLineJSON("2", "error", "general", "b")}}),
	)
	messages := func(query string) string {
		r := e.do(asViewer, "GET", e.orgPath("/crawls/"+id+"/logs"+query), nil)
		if r.Code != 200 {
			t.Fatalf("logs%s: %d %s", query, r.Code, r.Body)
		}
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
			if line == "" {
				continue
			}
			i := strings.Index(line, `"message":"`)
			out = append(out, line[i+11:i+12])
		}
		return strings.Join(out, "")
	}
	for query, want := range map[string]string{
		"":                                 "abcd",
		"?logLevel=error":                  "bd",
		"?logLevel=error,warn":             "bcd",
		"?context=general":                 "abc",
		"?logLevel=error&context=general":  "b",
		"?logLevel=debug":                  "",
		"?logLevel=error,warn&context=x,y": "",
	} {
		if got := messages(query); got != want {
			t.Errorf("logs%s = %q, want %q", query, got, want)
		}
	}
	_, running := e.startCrawl(asCrawler, "running")
	e.wantDetail(e.do(asViewer, "GET", e.orgPath("/crawls/"+running+"/logs"), nil), 400, "crawl_not_finished")
}

// TestOrgStorage: an org chooses a configured storage by name, or its own
// bucket once a test upload with its keys succeeded; the crawlers then
// get its keys in the Secret storage-<oid>.
func TestOrgStorage(t *testing.T) {
	srv := startS3(t)
	e := newStorageEnv(t, srv, time.Hour)
	path := e.orgPath("/storage")
	e.wantDetail(e.do(asOwner, "PATCH", path, map[string]any{"type": "default", "name": "nope"}), 400, "Invalid default storage nope")
	e.wantDetail(e.do(asCrawler, "PATCH", path, map[string]any{"type": "default", "name": "default"}), 403, detailNoOwnerPermission)
	own := map[string]any{"type": "s3", "endpoint_url": srv.URL() + e.bucket.Config().BucketName + "/own-prefix/",
		"access_key": srv.AccessKey, "secret_key": "wrong"}
	e.wantDetail(e.do(asOwner, "PATCH", path, own), 400, "Could not verify custom storage. Check credentials are valid?")
	if r := e.do(asOwner, "PATCH", path, map[string]any{"type": "s3"}); r.Code != 422 {
		t.Errorf("s3 without fields: %d %s", r.Code, r.Body)
	}

	own["secret_key"] = srv.SecretKey
	e.mustJSON(asOwner, "PATCH", path, own, 200)
	if _, err := e.bucket.Stat(t.Context(), "own-prefix/.btrix-upload-verify"); err != nil {
		t.Errorf("verify object: %v", err)
	}
	o, _ := e.store.GetOrg(context.Background(), e.org)
	if o.Storage.Type != "s3" || o.Storage.EndpointURL != own["endpoint_url"] {
		t.Fatalf("org storage %+v", o.Storage)
	}
	secret := e.secrets.data["storage-"+e.org.String()]
	if secret["STORE_ENDPOINT_URL"] != own["endpoint_url"] || secret["STORE_SECRET_KEY"] != srv.SecretKey {
		t.Fatalf("storage secret %v", secret)
	}
	// New crawls use it: no org folder (the bucket is the org's), the
	// secret of the org.
	_, id := e.startCrawl(asCrawler, "own storage")
	e.launcher.mu.Lock()
	last := e.launcher.launched[len(e.launcher.launched)-1]
	e.launcher.mu.Unlock()
	if last.Spec.ID != id || last.Spec.StorageName != e.org.String() || last.Spec.StoragePath != "" {
		t.Fatalf("crawl request %+v", last.Spec)
	}

	e.mustJSON(asOwner, "PATCH", path, map[string]any{"type": "default", "name": "default", "path": "elsewhere/"}, 200)
	o, _ = e.store.GetOrg(context.Background(), e.org)
	if o.Storage.Type != "default" || o.Storage.Name != "default" || o.Storage.Path != e.org.String()+"/" {
		t.Fatalf("org storage %+v", o.Storage)
	}
	if _, ok := e.secrets.data["storage-"+e.org.String()]; ok {
		t.Error("the org's storage secret was kept after switching back")
	}
}
