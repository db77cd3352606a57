package s3_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
)

func TestAccessPath(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		access string
		viaAcc *bool
		want   string
	}{
		{"", nil, ""},
		{"https://files.example.org/bucket/", nil, ""},
		{"https://files.example.org/bucket/", &yes, ""},
		{"/data/", nil, "/data/"},
		{"/data", nil, "/data/"},
	} {
		b, err := s3.New(s3.Config{EndpointURL: "http://s3.internal:9000/", BucketName: "b",
			AccessEndpointURL: tc.access, UseAccessForPresign: tc.viaAcc}, s3.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.AccessPath(); got != tc.want {
			t.Errorf("AccessPath with access endpoint %q = %q, want %q", tc.access, got, tc.want)
		}
	}
}

// upstreamRecorder is a transport that remembers the headers of the
// requests it carries to the storage.
type upstreamRecorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	next http.RoundTripper
}

func (u *upstreamRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	u.mu.Lock()
	u.reqs = append(u.reqs, r.Clone(r.Context()))
	u.mu.Unlock()
	return u.next.RoundTrip(r)
}

func (u *upstreamRecorder) last(t *testing.T) *http.Request {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("nothing reached the storage")
	}
	return u.reqs[len(u.reqs)-1]
}

func (u *upstreamRecorder) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

// proxied serves bucket (as configured with the access path /data/ and
// an optional key prefix) through an access proxy; it returns the
// bucket that signs the links and the proxy's URL.
func proxied(t *testing.T, b *s3.Bucket, prefix string) (*s3.Bucket, string, *upstreamRecorder) {
	t.Helper()
	cfg := b.Config()
	if prefix != "" {
		cfg.EndpointURL = strings.TrimSuffix(b.URL(), "/") + "/" + prefix
		cfg.BucketName = ""
	}
	cfg.AccessEndpointURL = "/data/"
	pb, err := s3.New(cfg, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pb.AccessPath() != "/data/" {
		t.Fatalf("AccessPath = %q", pb.AccessPath())
	}
	rec := &upstreamRecorder{next: http.DefaultTransport}
	srv := httptest.NewServer(s3.NewAccessProxy(pb, rec))
	t.Cleanup(srv.Close)
	return pb, srv.URL, rec
}

func do(t *testing.T, method, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestAccessProxyServesSignedLinks(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	key := "org/crawl/space and ünicode+plus.wacz"
	if _, err := b.Put(ctx, key, bytes.NewReader(data), int64(len(data)), "application/wacz"); err != nil {
		t.Fatal(err)
	}
	pb, base, rec := proxied(t, b, "")
	link, err := pb.PresignGet(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link, "/data/org/crawl/") {
		t.Fatalf("link %s", link)
	}

	// A full download, sent with credentials of the API that must not
	// reach the storage.
	resp, body := do(t, "GET", base+link, "Authorization", "Bearer secret-token",
		"Cookie", "session=secret", "X-Amz-Security-Token", "forged", "Accept-Encoding", "gzip")
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET: %d, %d bytes", resp.StatusCode, len(body))
	}
	for h, want := range map[string]string{
		"Content-Type":           "application/wacz",
		"Content-Length":         "1048576",
		"Accept-Ranges":          "bytes",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("response %s = %q, want %q", h, got, want)
		}
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Last-Modified") == "" {
		t.Errorf("no ETag or Last-Modified: %v", resp.Header)
	}
	for h := range resp.Header {
		if strings.HasPrefix(strings.ToLower(h), "x-amz-") || h == "Server" {
			t.Errorf("storage header %s passed through", h)
		}
	}
	up := rec.last(t)
	for _, h := range []string{"Authorization", "Cookie", "X-Amz-Security-Token", "X-Forwarded-For"} {
		if v := up.Header.Get(h); v != "" {
			t.Errorf("%s forwarded to the storage: %q", h, v)
		}
	}
	if up.Header.Get("Accept-Encoding") != "identity" {
		t.Errorf("Accept-Encoding to the storage = %q", up.Header.Get("Accept-Encoding"))
	}
	if up.Host != strings.TrimSuffix(strings.TrimPrefix(server.URL(), "http://"), "/") {
		t.Errorf("Host to the storage = %q", up.Host)
	}

	// A range.
	resp, body = do(t, "GET", base+link, "Range", "bytes=100-119")
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, data[100:120]) {
		t.Fatalf("Range: %d %q", resp.StatusCode, body)
	}
	if cr := resp.Header.Get("Content-Range"); cr != "bytes 100-119/1048576" {
		t.Errorf("Content-Range = %q", cr)
	}
	if up := rec.last(t); up.Header.Get("Range") != "bytes=100-119" {
		t.Errorf("Range to the storage = %q", up.Header.Get("Range"))
	}

	// A conditional request that the browser's copy is current.
	resp, body = do(t, "GET", base+link, "If-None-Match", etag)
	if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Errorf("If-None-Match: %d, %d bytes", resp.StatusCode, len(body))
	}

	// HEAD: the link is signed for GET, which the storage is asked for;
	// the browser gets its headers only.
	resp, body = do(t, "HEAD", base+link)
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("Content-Length") != "1048576" || resp.Header.Get("ETag") != etag {
		t.Errorf("HEAD: %d, %d bytes, %v", resp.StatusCode, len(body), resp.Header)
	}
	if up := rec.last(t); up.Method != "GET" {
		t.Errorf("HEAD reached the storage as %s", up.Method)
	}
	resp, _ = do(t, "HEAD", base+link, "Range", "bytes=0-")
	if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != "bytes 0-1048575/1048576" {
		t.Errorf("HEAD with Range: %d, %v", resp.StatusCode, resp.Header)
	}
	// The proxy still answers after the dropped bodies.
	if resp, body := do(t, "GET", base+link, "Range", "bytes=0-3"); resp.StatusCode != http.StatusPartialContent || string(body) != "0123" {
		t.Errorf("GET after HEAD: %d %q", resp.StatusCode, body)
	}
}

func TestAccessProxyWithKeyPrefix(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "pre/fix/org/f.txt", strings.NewReader("prefixed"), 8, "text/plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "outside.txt", strings.NewReader("outside"), 7, "text/plain"); err != nil {
		t.Fatal(err)
	}
	pb, base, _ := proxied(t, b, "pre/fix/")
	link, err := pb.PresignGet(ctx, "org/f.txt", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, "GET", base+link); resp.StatusCode != http.StatusOK || string(body) != "prefixed" {
		t.Fatalf("GET %s: %d %q", link, resp.StatusCode, body)
	}
	// A link of the bucket without the prefix cannot be used through
	// the proxy: the key lands under the prefix.
	outside, err := b.PresignGet(ctx, "outside.txt", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rest := strings.TrimPrefix(outside, b.URL())
	if resp, body := do(t, "GET", base+"/data/"+rest); resp.StatusCode == http.StatusOK {
		t.Fatalf("object outside the prefix served: %q", body)
	}
}

func TestAccessProxyRefuses(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "org/f.txt", strings.NewReader("hello"), 5, "text/plain"); err != nil {
		t.Fatal(err)
	}
	pb, base, rec := proxied(t, b, "")
	link, err := pb.PresignGet(ctx, "org/f.txt", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, query, _ := strings.Cut(link, "?")

	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		resp, _ := do(t, m, base+link)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	for _, path := range []string{
		"/other/org/f.txt",
		"/data",
		"/data/",
		"/data/org/../org/f.txt",
		"/data/org/./f.txt",
		"/data/../" + b.Config().BucketName + "/org/f.txt",
		"/data/org/%2e%2e/org/f.txt",
		"/data/org/..%2Forg/f.txt",
		"/data//org/f.txt",
		"/data/org/f.txt%00",
		"/data/org\\f.txt",
		"/d%61ta/org/f.txt",
	} {
		resp, body := do(t, "GET", base+path+"?"+query)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d %q, want 404", path, resp.StatusCode, body)
		}
	}
	// S3 sub-resources would be other operations than a download.
	for _, sub := range []string{"acl", "tagging", "uploads", "list-type=2"} {
		resp, _ := do(t, "GET", base+link+"&"+sub)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET ?%s: %d, want 404", sub, resp.StatusCode)
		}
	}
	if n := rec.count(); n != 0 {
		t.Errorf("%d refused requests reached the storage", n)
	}
}

func TestAccessProxyPassesSignatureErrors(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "org/f.txt", strings.NewReader("hello"), 5, "text/plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "org/g.txt", strings.NewReader("other"), 5, "text/plain"); err != nil {
		t.Fatal(err)
	}
	pb, base, _ := proxied(t, b, "")
	link, err := pb.PresignGet(ctx, "org/f.txt", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sig := strings.Index(link, "X-Amz-Signature=") + len("X-Amz-Signature=")
	flipped := "0"
	if link[sig] == '0' {
		flipped = "1"
	}
	for name, url := range map[string]string{
		"unsigned":         "/data/org/f.txt",
		"another key":      strings.Replace(link, "f.txt", "g.txt", 1),
		"forged signature": link[:sig] + flipped + link[sig+1:],
	} {
		if resp, body := do(t, "GET", base+url); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %q, want the storage's 403", name, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, "GET", base+link); resp.StatusCode != http.StatusOK {
		t.Fatalf("fresh link: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body := do(t, "GET", base+link)
		if resp.StatusCode == http.StatusForbidden {
			if !strings.Contains(string(body), "<Error>") {
				t.Errorf("expired link: 403 without the storage's error: %q", body)
			}
			break
		}
		if resp.StatusCode != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("expired link answers %d %q", resp.StatusCode, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestAccessProxyStorageDown(t *testing.T) {
	if server == nil {
		t.Skip("versitygw not built (make testbin)")
	}
	own, err := sandbox.StartS3(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop(5 * time.Second) })
	b, err := s3.New(s3.Config{AccessKey: own.AccessKey, SecretKey: own.SecretKey, BucketName: "down",
		EndpointURL: own.URL(), AccessEndpointURL: "/data/"}, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "o/x", strings.NewReader("x"), 1, ""); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s3.NewAccessProxy(b, nil))
	t.Cleanup(srv.Close)
	link, err := b.PresignGet(ctx, "o/x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, "GET", srv.URL+link); resp.StatusCode != http.StatusOK || string(body) != "x" {
		t.Fatalf("before the outage: %d %q", resp.StatusCode, body)
	}
	if err := own.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	resp, body := do(t, "GET", srv.URL+link)
	if resp.StatusCode != http.StatusServiceUnavailable || string(body) != `{"detail":"storage_unavailable"}` {
		t.Fatalf("storage down: %d %q", resp.StatusCode, body)
	}
	if err := own.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, "GET", srv.URL+link); resp.StatusCode != http.StatusOK || string(body) != "x" {
		t.Fatalf("after the outage: %d %q", resp.StatusCode, body)
	}
}

func TestAccessProxyWithoutAccessPath(t *testing.T) {
	b, err := s3.New(s3.Config{EndpointURL: "http://s3.internal:9000/", BucketName: "b"}, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s3.NewAccessProxy(b, nil))
	defer srv.Close()
	if resp, _ := do(t, "GET", srv.URL+"/b/org/f.txt"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("no access path: %d", resp.StatusCode)
	}
}

// slowTransport answers after a delay, like a storage far away.
type slowTransport struct{ delay time.Duration }

func (s slowTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(s.delay)
	return http.DefaultTransport.RoundTrip(r)
}

// atDataPath is b as configured with the access path /data/: the bucket
// that signs links for an access proxy.
func atDataPath(t *testing.T, b *s3.Bucket) *s3.Bucket {
	t.Helper()
	cfg := b.Config()
	cfg.AccessEndpointURL = "/data/"
	pb, err := s3.New(cfg, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

func TestAccessProxyOutlivesTheWriteTimeout(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "org/f.txt", strings.NewReader("hello"), 5, "text/plain"); err != nil {
		t.Fatal(err)
	}
	pb := atDataPath(t, b)
	// A server whose write timeout passes before the storage answers:
	// the proxy lifts it for its downloads.
	srv := httptest.NewUnstartedServer(s3.NewAccessProxy(pb, slowTransport{300 * time.Millisecond}))
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	link, err := pb.PresignGet(ctx, "org/f.txt", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, "GET", srv.URL+link); resp.StatusCode != http.StatusOK || string(body) != "hello" {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
}
