package s3_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/s3"
)

const (
	dashboardOrigin = "https://crawls.example.org"
	otherOrigin     = "https://elsewhere.example.org"
)

// corsRequest sends a request with an Origin header (and extra headers
// as name, value pairs) and returns the response, body read and closed.
func corsRequest(t *testing.T, method, url, origin string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// hasToken tells whether a comma-separated header value lists token,
// ignoring case as header names do.
func hasToken(value, token string) bool {
	for _, v := range strings.Split(value, ",") {
		if strings.EqualFold(strings.TrimSpace(v), token) {
			return true
		}
	}
	return false
}

// TestApplyCORS: after ApplyCORS the real S3 server lets a page on an
// allowed origin read a download link in ranges (preflight, then a GET
// whose Content-Range the page may read), and tells a page on any other
// origin nothing.
func TestApplyCORS(t *testing.T) {
	b := newBucket(t, func(c *s3.Config) { c.CORSAllowedOrigins = []string{dashboardOrigin} })
	ctx := t.Context()
	if _, err := b.Put(ctx, "org/crawl.wacz", strings.NewReader("0123456789"), 10, "application/wacz"); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyCORS(ctx); err != nil {
		t.Fatal(err)
	}
	// Startup applies the rules on every start: a second time must work.
	if err := b.ApplyCORS(ctx); err != nil {
		t.Fatalf("ApplyCORS again: %v", err)
	}
	link, err := b.PresignGet(ctx, "org/crawl.wacz", time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	pre := corsRequest(t, http.MethodOptions, link, dashboardOrigin,
		"Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "range,if-none-match")
	h := pre.Header
	if pre.StatusCode/100 != 2 || h.Get("Access-Control-Allow-Origin") != dashboardOrigin ||
		!hasToken(h.Get("Access-Control-Allow-Methods"), "GET") ||
		!hasToken(h.Get("Access-Control-Allow-Headers"), "Range") ||
		!hasToken(h.Get("Access-Control-Allow-Headers"), "If-None-Match") {
		t.Errorf("preflight from the allowed origin: %s %v", pre.Status, h)
	}
	if got := h.Get("Access-Control-Max-Age"); got != "3600" {
		t.Errorf("preflight Access-Control-Max-Age = %q, want 3600", got)
	}

	get := corsRequest(t, http.MethodGet, link, dashboardOrigin, "Range", "bytes=2-5")
	h = get.Header
	if get.StatusCode != http.StatusPartialContent || h.Get("Content-Range") != "bytes 2-5/10" ||
		h.Get("Access-Control-Allow-Origin") != dashboardOrigin {
		t.Errorf("ranged GET from the allowed origin: %s %v", get.Status, h)
	}
	for _, name := range []string{"Content-Range", "Content-Length", "ETag", "Accept-Ranges"} {
		if !hasToken(h.Get("Access-Control-Expose-Headers"), name) {
			t.Errorf("ranged GET does not expose %s: Access-Control-Expose-Headers %q", name, h.Get("Access-Control-Expose-Headers"))
		}
	}

	// Another origin learns nothing: no Access-Control-* header, so the
	// browser keeps the answer from the page.
	for _, resp := range []*http.Response{
		corsRequest(t, http.MethodOptions, link, otherOrigin,
			"Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "range"),
		corsRequest(t, http.MethodGet, link, otherOrigin, "Range", "bytes=2-5"),
	} {
		for name := range resp.Header {
			if strings.HasPrefix(name, "Access-Control-") {
				t.Errorf("%s from another origin got %s: %q", resp.Request.Method, name, resp.Header.Get(name))
			}
		}
	}

	// Methods beyond GET and HEAD are not allowed from the page either.
	put := corsRequest(t, http.MethodOptions, link, dashboardOrigin, "Access-Control-Request-Method", "PUT")
	if put.Header.Get("Access-Control-Allow-Origin") != "" && hasToken(put.Header.Get("Access-Control-Allow-Methods"), "PUT") {
		t.Errorf("preflight of a PUT allowed: %v", put.Header)
	}
}

// TestApplyCORSWithoutOrigins leaves the bucket alone: no rules appear.
func TestApplyCORSWithoutOrigins(t *testing.T) {
	b := newBucket(t)
	if err := b.ApplyCORS(t.Context()); err != nil {
		t.Fatal(err)
	}
	resp := corsRequest(t, http.MethodOptions, b.URL()+"any", dashboardOrigin, "Access-Control-Request-Method", "GET")
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("a bucket without cors_allowed_origins allows %q", got)
	}
}

// TestApplyCORSRefusesBadOrigins: an origin with a path or trailing slash
// never matches what a browser sends, so it is an error, not a silent
// misconfiguration. Nothing reaches the server.
func TestApplyCORSRefusesBadOrigins(t *testing.T) {
	for _, origin := range []string{"https://crawls.example.org/", "crawls.example.org", "https://a.org/app", "ftp://a.org", ""} {
		b, err := s3.New(s3.Config{Name: "t", AccessKey: "a", SecretKey: "s", BucketName: "b",
			EndpointURL: "http://127.0.0.1:1/", CORSAllowedOrigins: []string{dashboardOrigin, origin}}, s3.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.ApplyCORS(t.Context()); err == nil || !strings.Contains(err.Error(), "cors_allowed_origins") {
			t.Errorf("origin %q: ApplyCORS = %v, want a cors_allowed_origins error", origin, err)
		}
	}
}
