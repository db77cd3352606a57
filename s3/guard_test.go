package s3_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/s3"
)

// TestCustomStorageGuarded: an org's own storage at a name that resolves
// to loopback gets no request unless the operator allows the range; the
// configured storages, which are the operator's, are not guarded.
func TestCustomStorageGuarded(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	named := s3.Config{Name: "default", AccessKey: "a", SecretKey: "s", EndpointURL: srv.URL + "/", BucketName: "named"}
	own := s3.Config{AccessKey: "a", SecretKey: "s", EndpointURL: "http://localhost:" + port + "/orgbucket/"}
	put := func(b *s3.Bucket) error {
		_, err := b.Put(context.Background(), "x", strings.NewReader(""), 0, "text/plain")
		return err
	}

	loopback, _ := netpolicy.ParseAllowList("127.0.0.0/8, ::1/128")
	for _, tc := range []struct {
		name    string
		allowed netpolicy.AllowList
	}{{"default", nil}, {"allowed", loopback}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := s3.NewRegistry([]s3.Config{named}, "default", s3.Options{MaxRetries: 1, CustomAllowed: tc.allowed})
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Custom(own)
			if err != nil {
				t.Fatal(err)
			}
			requests.Store(0)
			err = put(b)
			if got := requests.Load(); (tc.allowed == nil) != (got == 0 && err != nil) {
				t.Errorf("own storage at localhost: %d requests, err %v", got, err)
			}
			nb, _ := r.Named("default")
			if err := put(nb); err != nil {
				t.Errorf("the configured storage on loopback: %v", err)
			}
		})
	}
}
