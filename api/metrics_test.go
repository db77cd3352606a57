package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
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
		got := 0.0
		for _, m := range series(t, e, "trawler_http_requests_total") {
			if m.labels["method"] == tc.method && m.labels["route"] == tc.route && m.labels["code"] == tc.code {
				got += m.value
			}
		}
		if got != tc.want {
			t.Errorf("requests %s %s %s: %v, want %v", tc.method, tc.route, tc.code, got, tc.want)
		}
	}
	latency := series(t, e, "trawler_http_request_duration_seconds")
	for _, m := range latency {
		if m.labels["route"] == eventsRoute {
			t.Errorf("the event stream is in the latency histogram: %v", m.labels)
		}
	}
	if len(latency) < 4 {
		t.Errorf("%d latency series", len(latency))
	}
}

// sample is one series: its labels and its value (a histogram's count).
type sample struct {
	labels map[string]string
	value  float64
}

// series lists the samples of metric name in the API's registry.
func series(t *testing.T, e *env, name string) []sample {
	t.Helper()
	mfs, err := e.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []sample
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := sample{labels: map[string]string{}}
			for _, lp := range m.GetLabel() {
				l.labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				l.value = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				l.value = float64(m.GetHistogram().GetSampleCount())
			}
			out = append(out, l)
		}
	}
	return out
}
