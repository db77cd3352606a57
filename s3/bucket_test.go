package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
)

// One S3 server serves the package's tests; each test uses its own bucket.
var server *sandbox.S3

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "storage-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		server, err = sandbox.StartS3(context.Background(), dir)
		if errors.Is(err, sandbox.ErrBinaryMissing) {
			fmt.Fprintln(os.Stderr, "S3 tests skipped:", err)
			server = nil
		} else if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if server != nil {
			defer server.Stop(5 * time.Second)
		}
		return m.Run()
	}()
	os.Exit(code)
}

// newBucket creates a fresh bucket on the test server, configured as
// trawler would see it: reached at the loopback URL.
func newBucket(t testing.TB, mutate ...func(*s3.Config)) *s3.Bucket {
	t.Helper()
	if server == nil {
		t.Skip("versitygw not built (make testbin)")
	}
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	cfg := s3.Config{Name: "test", AccessKey: server.AccessKey, SecretKey: server.SecretKey,
		BucketName: name, EndpointURL: server.URL()}
	for _, m := range mutate {
		m(&cfg)
	}
	b, err := s3.New(cfg, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureBucket(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureBucket(t.Context()); err != nil {
		t.Fatalf("EnsureBucket is not idempotent: %v", err)
	}
	return b
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestPutReadListDelete(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	data := bytes.Repeat([]byte("0123456789"), 100_000)
	info, err := b.Put(ctx, "org1/a.wacz", bytes.NewReader(data), int64(len(data)), "application/wacz")
	if err != nil || info.Size != int64(len(data)) {
		t.Fatalf("Put = %+v, %v", info, err)
	}
	// A stream of unknown length goes up in parts.
	if _, err := b.Put(ctx, "org1/sub/b.txt", strings.NewReader("streamed"), -1, "text/plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "org2/c.txt", strings.NewReader("other org"), 9, ""); err != nil {
		t.Fatal(err)
	}

	st, err := b.Stat(ctx, "org1/sub/b.txt")
	if err != nil || st.Size != 8 {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	o, err := b.Open(ctx, "org1/a.wacz")
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 10)
	// At the very end, ReadAt may also say io.EOF.
	if n, err := o.ReadAt(chunk, 999_990); (err != nil && err != io.EOF) || n != 10 || string(chunk) != "0123456789" || o.Info.Size != int64(len(data)) {
		t.Fatalf("ReadAt = %q, %v (size %d)", chunk, err, o.Info.Size)
	}
	o.Close()

	var keys []string
	for info, err := range b.List(ctx, "org1/") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	if !slices.Equal(keys, []string{"org1/a.wacz", "org1/sub/b.txt"}) {
		t.Fatalf("List(org1/) = %v", keys)
	}

	if err := b.Delete(ctx, "org1/a.wacz", "org1/sub/b.txt", "org1/never-existed"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, k := range []string{"org1/a.wacz", "org1/sub/b.txt"} {
		if _, err := b.Stat(ctx, k); !errors.Is(err, s3.ErrNotFound) {
			t.Errorf("Stat(%s) after delete = %v, want ErrNotFound", k, err)
		}
		if _, err := b.Open(ctx, k); !errors.Is(err, s3.ErrNotFound) {
			t.Errorf("Open(%s) after delete = %v, want ErrNotFound", k, err)
		}
	}
	if _, err := b.Stat(ctx, "org2/c.txt"); err != nil {
		t.Errorf("another org's object went too: %v", err)
	}
}

func TestKeysAreCheckedBeforeAnyRequest(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "keep/x", strings.NewReader("x"), 1, ""); err != nil {
		t.Fatal(err)
	}
	bad := "keep/../x"
	if _, err := b.Put(ctx, bad, strings.NewReader("x"), 1, ""); !errors.Is(err, s3.ErrInvalidKey) {
		t.Errorf("Put: %v", err)
	}
	if _, err := b.PresignGet(ctx, bad, time.Minute); !errors.Is(err, s3.ErrInvalidKey) {
		t.Errorf("PresignGet: %v", err)
	}
	if _, err := b.Open(ctx, "/keep/x"); !errors.Is(err, s3.ErrInvalidKey) {
		t.Errorf("Open: %v", err)
	}
	// One bad key stops the whole delete before anything is removed.
	if err := b.Delete(ctx, "keep/x", "keep/\x00"); !errors.Is(err, s3.ErrInvalidKey) {
		t.Errorf("Delete: %v", err)
	}
	if _, err := b.Stat(ctx, "keep/x"); err != nil {
		t.Errorf("good key removed by a refused delete: %v", err)
	}
}

func TestPresignedLinksDownloadAndExpire(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	key := "org/space and ünicode+plus.wacz"
	if _, err := b.Put(ctx, key, strings.NewReader("archive bytes"), 13, ""); err != nil {
		t.Fatal(err)
	}
	link, err := b.PresignGet(ctx, key, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link, b.URL()) || !strings.Contains(link, "X-Amz-Signature=") {
		t.Fatalf("link %s", link)
	}
	if code, body := get(t, link); code != http.StatusOK || string(body) != "archive bytes" {
		t.Fatalf("GET link: %d %q", code, body)
	}
	// The signature covers the key: another key with it is refused.
	if code, _ := get(t, strings.Replace(link, "plus", "minus", 1)); code != http.StatusForbidden {
		t.Errorf("tampered link: %d, want 403", code)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := get(t, link)
		if code == http.StatusForbidden {
			break
		}
		if code != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("expired link still answers %d", code)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestPresignForAnAccessEndpoint(t *testing.T) {
	// Trawler reaches the server by a name only it resolves; links are
	// signed for the loopback URL a browser uses.
	b := newBucket(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "org/f.txt", strings.NewReader("hello"), 5, ""); err != nil {
		t.Fatal(err)
	}
	cfg := b.Config()
	cfg.EndpointURL = "http://no-such-host.invalid:9000/"
	cfg.AccessEndpointURL = server.URL() + cfg.BucketName + "/"
	viaAccess, err := s3.New(cfg, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	link, err := viaAccess.PresignGet(ctx, "org/f.txt", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, link); code != http.StatusOK || string(body) != "hello" {
		t.Fatalf("GET %s: %d %q", link, code, body)
	}

	// A relative access endpoint (a proxy path) gets a relative link,
	// signed for the internal endpoint.
	cfg = b.Config()
	cfg.AccessEndpointURL = "/data/"
	proxied, err := s3.New(cfg, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := proxied.PresignGet(ctx, "org/f.txt", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rel, "/data/org/f.txt?") {
		t.Fatalf("relative link %s", rel)
	}
	// Such a proxy forwards /data/ to the bucket, keeping the Host.
	if code, body := get(t, b.URL()+strings.TrimPrefix(rel, "/data/")); code != http.StatusOK || string(body) != "hello" {
		t.Fatalf("GET via the proxy mapping: %d %q", code, body)
	}
}

func TestOutageIsUnavailableThenRecovers(t *testing.T) {
	// Its own server, so that stopping it leaves the other tests alone.
	if server == nil {
		t.Skip("versitygw not built (make testbin)")
	}
	own, err := sandbox.StartS3(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop(5 * time.Second) })
	cfg := s3.Config{AccessKey: own.AccessKey, SecretKey: own.SecretKey, BucketName: "outage", EndpointURL: own.URL()}
	b, err := s3.New(cfg, s3.Options{})
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
	if err := own.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := b.Delete(ctx, "o/x"); !errors.Is(err, s3.ErrUnavailable) {
		t.Fatalf("Delete while down = %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("a call against a dead server took %v", took)
	}
	if _, err := b.Put(ctx, "o/y", strings.NewReader("y"), 1, ""); !errors.Is(err, s3.ErrUnavailable) {
		t.Fatalf("Put while down = %v, want ErrUnavailable", err)
	}
	// Signing needs no server.
	if _, err := b.PresignGet(ctx, "o/x", time.Minute); err != nil {
		t.Fatalf("PresignGet while down: %v", err)
	}
	if err := own.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "o/x"); err != nil {
		t.Fatalf("Delete after restart: %v", err)
	}
	if _, err := os.Stat(filepath.Join(own.DataDir, "outage", "o", "x")); !os.IsNotExist(err) {
		t.Fatalf("object file still on disk: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	if server == nil {
		t.Skip("versitygw not built (make testbin)")
	}
	base := s3.Config{AccessKey: "a", SecretKey: "s", EndpointURL: server.URL()}
	def, other := base, base
	def.Name, def.BucketName = "default", "d"
	other.Name, other.BucketName = "other", "o"
	r, err := s3.NewRegistry([]s3.Config{def, other}, "default", s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.Named("other"); err != nil || b.URL() != server.URL()+"o/" {
		t.Fatalf("Named(other) = %v, %v", b, err)
	}
	if _, err := r.Named("nope"); !errors.Is(err, s3.ErrUnknownStorage) {
		t.Fatalf("Named(nope) = %v", err)
	}
	custom := base
	custom.EndpointURL = server.URL() + "orgbucket/prefix/"
	c1, err := r.Custom(custom)
	if err != nil || c1.URL() != custom.EndpointURL {
		t.Fatalf("Custom = %v, %v", c1, err)
	}
	if c2, _ := r.Custom(custom); c2 != c1 {
		t.Error("the same org storage got a second client")
	}
	if _, err := s3.NewRegistry([]s3.Config{def}, "missing", s3.Options{}); !errors.Is(err, s3.ErrUnknownStorage) {
		t.Errorf("missing default: %v", err)
	}
	if _, err := s3.NewRegistry([]s3.Config{def, def}, "default", s3.Options{}); err == nil {
		t.Error("duplicate name accepted")
	}
}
