package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox/metricstest"
)

// TestHTTPMetrics: requests are counted by route template and status, with
// their latency; paths no route knows share one label; event streams are
// counted but kept out of the latency histogram.
func TestHTTPMetrics(t *testing.T) {
	e := newEnv(t)
	srv := e.httpServer()
	_, id := e.startCrawl(asCrawler, "metered")
	e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)
	e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id+"/"), nil, 200) // the same route
	e.do(asViewer, "GET", e.orgPath("/crawls/nope"), nil)
	e.do("", "GET", "/api/no/such/path/1", nil)
	e.do("", "GET", "/api/no/such/path/2", nil)
	e.setState(id, "canceled")
	c, _ := e.openStream(srv, asViewer, id, "")
	c.all(t, 10*time.Second)
	files := httptest.NewServer(e.srv.Instrument("/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})))
	defer files.Close()
	if resp, err := http.Get(files.URL + "/some/file.js"); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	crawlRoute := "/api/orgs/:oid/crawls/:crawl_id"
	eventsRoute := crawlRoute + "/events"
	for _, tc := range []struct {
		method, route, code string
		want                float64
	}{
		{"GET", crawlRoute, "200", 2},
		{"GET", crawlRoute, "404", 1},
		{"GET", unmatchedRoute, "404", 2},
		{"GET", eventsRoute, "200", 1},
		{"GET", "/", "418", 1},
		{"POST", "/api/auth/jwt/login", "200", float64(len(e.tokens))},
	} {
		got, _ := metricstest.Sum(t, e.metrics, "trawler_http_requests_total",
			map[string]string{"method": tc.method, "route": tc.route, "code": tc.code})
		if got != tc.want {
			t.Errorf("requests %s %s %s: %v, want %v", tc.method, tc.route, tc.code, got, tc.want)
		}
	}
	if _, found := metricstest.Sum(t, e.metrics, "trawler_http_request_duration_seconds", map[string]string{"route": eventsRoute}); found {
		t.Error("the event stream is in the latency histogram")
	}
	for _, route := range []string{crawlRoute, unmatchedRoute, "/"} {
		if n, _ := metricstest.Sum(t, e.metrics, "trawler_http_request_duration_seconds", map[string]string{"route": route}); n == 0 {
			t.Errorf("no latency of %s", route)
		}
	}
}
