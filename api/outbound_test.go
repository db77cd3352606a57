package api

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/s3"
)

// loopbackAllowed lets trawler's own requests reach the tests' servers on
// loopback, as an operator allows an internal receiver or storage.
var loopbackAllowed = netpolicy.AllowList{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// TestWebhookURLsAtInternalAddressesRefused: webhook URLs that lead to
// the metadata service or to this host get 422 naming the event, unless
// the operator allows the range (outbound.allowed_cidrs).
func TestWebhookURLsAtInternalAddressesRefused(t *testing.T) {
	internal := []string{"http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:8080/", "http://[::1]:8080/",
		"http://0x7f.0.0.1:8080/", "http://10.0.0.5/hook"}
	e := newEnv(t)
	for _, u := range internal {
		r := e.do(asOwner, "POST", e.orgPath("/event-webhook-urls"), map[string]any{"crawlStarted": "https://example.com/ok", "crawlFinished": u})
		e.want422(r, `"loc":["body","crawlFinished"]`, internalMsg)
	}
	if org := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200); get(org, "webhookUrls", "crawlStarted") != nil {
		t.Errorf("a refused body was stored in part: %v", org["webhookUrls"])
	}

	allowed := newEnvWith(t, func(c *Config, _ *Deps) { c.AllowedOutbound = loopbackAllowed })
	for _, u := range internal[1:3] {
		allowed.mustJSON(asOwner, "POST", allowed.orgPath("/event-webhook-urls"), map[string]any{"crawlFinished": u}, 200)
	}
	for _, u := range []string{internal[0], internal[4]} {
		r := allowed.do(asOwner, "POST", allowed.orgPath("/event-webhook-urls"), map[string]any{"crawlFinished": u})
		allowed.want422(r, `"loc":["body","crawlFinished"]`, internalMsg)
	}
}

// testVerifyBudget is the storage verification budget of the tests:
// shorter than production's, long enough for the sandbox S3 to answer.
const testVerifyBudget = 2 * time.Second

// countingServer is a server on loopback that counts the requests it
// gets, standing in for an internal service.
func countingServer(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// storageOnlyEnv is an env whose org storages dial through a guard that
// allows guarded, and whose API refuses internal endpoints outside
// allowed.
func storageOnlyEnv(t *testing.T, allowed, guarded netpolicy.AllowList) *env {
	t.Helper()
	reg, err := s3.NewRegistry([]s3.Config{{Name: "default", AccessKey: "a", SecretKey: "s", BucketName: "named",
		EndpointURL: "https://s3.example.com/"}}, "default", s3.Options{MaxRetries: 1, CustomAllowed: guarded})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *Config, d *Deps) { c.AllowedOutbound, d.Storage = allowed, reg })
	e.srv.verifyBudget = testVerifyBudget
	return e
}

func ownStorage(endpoint string) map[string]any {
	return map[string]any{"type": "s3", "endpoint_url": endpoint, "access_key": "a", "secret_key": "s"}
}

// TestOrgStorageAtInternalAddressesRefused: an own storage whose endpoint
// is an internal address or localhost gets 422 naming endpoint_url at
// once, and nothing is sent there.
func TestOrgStorageAtInternalAddressesRefused(t *testing.T) {
	srv, requests := countingServer(t, http.StatusOK)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	e := storageOnlyEnv(t, nil, nil)
	for _, u := range []string{"http://127.0.0.1:" + port + "/bucket/", "http://localhost:" + port + "/bucket/",
		"http://[::1]:" + port + "/bucket/", "http://169.254.169.254/bucket/", "http://10.0.0.5:9000/bucket/"} {
		start := time.Now()
		e.want422(e.do(asOwner, "PATCH", e.orgPath("/storage"), ownStorage(u)), `"loc":["body","endpoint_url"]`, internalMsg)
		if took := time.Since(start); took >= testVerifyBudget {
			t.Errorf("%s: refused after %v, as if it had been tried", u, took)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the internal server got %d requests", n)
	}
}

// TestOrgStorageVerificationFailsAlike: whatever stands behind an own
// storage's address — a server that refuses, a closed port, a port that
// never answers, an address the connect-time guard refuses — the answer
// is the same detail, after the whole budget, so its timing tells no open
// port from a closed one.
func TestOrgStorageVerificationFailsAlike(t *testing.T) {
	open, requests := countingServer(t, http.StatusForbidden)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })

	allowed := storageOnlyEnv(t, loopbackAllowed, loopbackAllowed)
	// The API lets loopback through but the storage client does not: the
	// guard, not the 422, refuses, as for a name that resolves inside.
	guarded := storageOnlyEnv(t, loopbackAllowed, nil)
	for _, tc := range []struct {
		name, endpoint string
		e              *env
	}{
		{"open port", open.URL + "/bucket/", allowed},
		{"closed port", "http://" + closedAddr + "/bucket/", allowed},
		{"silent port", "http://" + silent.Addr().String() + "/bucket/", allowed},
		{"guard", open.URL + "/other/", guarded},
	} {
		start := time.Now()
		tc.e.wantDetail(tc.e.do(asOwner, "PATCH", tc.e.orgPath("/storage"), ownStorage(tc.endpoint)), 400, detailUnverifiedStorage)
		if took := time.Since(start); took < testVerifyBudget {
			t.Errorf("%s: failed after %v, before the budget of %v", tc.name, took, testVerifyBudget)
		}
	}
	if n := requests.Load(); n == 0 {
		t.Error("the open port got no request: the case tested nothing")
	}
}
