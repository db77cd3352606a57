package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/sandbox/metricstest"
)

// TestMetricsAfterACrawl scrapes /metrics after a crawl that someone
// followed: the API, store, Redis, operator and process series are there
// with values that fit what happened.
func TestMetricsAfterACrawl(t *testing.T) {
	needStack(t)
	c := e2etest.LoginAs(t, stack.url, nil, stack.user, stack.password)
	oid := c.OrgID()
	// A receiver of the org's crawlFinished webhook, so that a delivery
	// is counted.
	delivered := make(chan struct{}, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		delivered <- struct{}{}
	}))
	defer receiver.Close()
	c.JSON("POST", "/api/orgs/"+oid+"/event-webhook-urls", map[string]any{"crawlFinished": receiver.URL + "/finished"}, 200, nil)
	defer c.JSON("POST", "/api/orgs/"+oid+"/event-webhook-urls", map[string]any{}, 200, nil)
	var added struct {
		RunNowJob string `json:"run_now_job"`
	}
	c.JSON("POST", "/api/orgs/"+oid+"/crawlconfigs/", map[string]any{
		"name": "metered", "runNow": true, "scale": 2,
		// Long enough (about 12 s) that a status shows both crawlers
		// running: at 100 ms a page it could end between two passes.
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/?sim-pages=60&sim-page-ms=400"}}},
	}, 200, &added)
	id := added.RunNowJob

	// Follow it to its end through its event stream, as the dashboard does.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET",
		stack.url+"/api/orgs/"+oid+"/crawls/"+id+"/events?auth_bearer="+url.QueryEscape(c.Token), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	var during prometheus.Gatherer // scraped while both crawlers ran
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last = data
			if during == nil && bothRunning(data) {
				during = scrape(t)
			}
		}
	}
	resp.Body.Close()
	if !strings.Contains(last, `"reason":"finished"`) {
		t.Fatalf("the stream ended with %s (%v)", last, sc.Err())
	}
	if during == nil {
		t.Fatal("no crawl event showed both crawlers running")
	}
	// What the operator manages, read from its caches while the crawl ran:
	// at least this crawl's job, two crawler pods and their PVCs, and its
	// Redis (the dashboard test's crawl may still be winding down).
	for _, g := range []struct {
		name   string
		labels map[string]string
		least  float64
	}{
		{"trawler_operator_crawljobs", map[string]string{"state": "running"}, 1},
		{"trawler_operator_pods", map[string]string{"role": "crawler", "phase": "Running"}, 2},
		{"trawler_operator_pods", map[string]string{"role": "redis"}, 1},
		{"trawler_operator_pvcs", map[string]string{"role": "crawler"}, 2},
	} {
		if v, _ := metricstest.Sum(t, during, g.name, g.labels); v < g.least || v > 20 {
			t.Errorf("while the crawl ran, %s%v = %v, want %v or a few more", g.name, g.labels, v, g.least)
		}
	}

	select {
	case <-delivered:
	case <-time.After(time.Minute):
		t.Fatal("no crawlFinished webhook within a minute of the crawl's end")
	}
	m := scrape(t)
	for range 100 { // the attempt is counted just after the receiver answered
		if v, _ := metricstest.Sum(t, m, "trawler_webhook_deliveries_total", map[string]string{"event": "crawlFinished", "outcome": "success"}); v > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling /metrics, not synchronising
		m = scrape(t)
	}
	check := func(name string, labels map[string]string, ok func(float64) bool, want string) {
		t.Helper()
		v, found := metricstest.Sum(t, m, name, labels)
		if !found || !ok(v) {
			t.Errorf("%s%v = %v (found %v), want %s", name, labels, v, found, want)
		}
	}
	positive := func(v float64) bool { return v > 0 }
	crawlRoute := "/api/orgs/:oid/crawls/:crawl_id/events"
	check("trawler_http_requests_total", map[string]string{"method": "POST", "route": "/api/orgs/:oid/crawlconfigs", "code": "200"}, positive, "> 0")
	check("trawler_http_requests_total", map[string]string{"route": crawlRoute, "code": "200"}, positive, "> 0")
	check("trawler_http_request_duration_seconds_count", map[string]string{"route": "/api/auth/jwt/login"}, positive, "> 0")
	if _, found := metricstest.Sum(t, m, "trawler_http_request_duration_seconds_count", map[string]string{"route": crawlRoute}); found {
		t.Error("the event stream is in the latency histogram")
	}
	check("trawler_crawl_event_streams", nil, func(v float64) bool { return v == 0 }, "0 after the stream ended")
	check("trawler_mongo_command_duration_seconds_count", map[string]string{"command": "find"}, positive, "> 0")
	check("trawler_mongo_command_duration_seconds_count", map[string]string{"command": "update"}, positive, "> 0")
	check("trawler_redis_command_duration_seconds_count", map[string]string{"command": "pipeline"}, positive, "> 0")
	check("trawler_webhook_deliveries_total", map[string]string{"event": "crawlFinished", "outcome": "success"}, positive, "> 0")
	check("trawler_webhook_delivery_duration_seconds_count", map[string]string{"event": "crawlFinished"}, positive, "> 0")
	check("trawler_operator_reconcile_duration_seconds_count", map[string]string{"queue": "crawljobs"}, positive, "> 0")
	check("trawler_operator_reconcile_errors_total", map[string]string{"queue": "crawljobs"}, func(v float64) bool { return v >= 0 }, "present")
	check("trawler_operator_crawljob_status_writes_total", map[string]string{"result": "ok"}, positive, "> 0")
	check("workqueue_adds_total", map[string]string{"name": "crawljobs"}, positive, "> 0")
	check("workqueue_depth", map[string]string{"name": "crawljobs"}, func(v float64) bool { return v >= 0 && v < 100 }, "small")
	check("workqueue_work_duration_seconds_count", map[string]string{"name": "crawljobs"}, positive, "> 0")
	// The finished CrawlJob stays for operator.finished_crawljob_ttl (30 s).
	var kept float64
	for _, st := range []string{"complete", "partial_complete"} {
		v, _ := metricstest.Sum(t, m, "trawler_operator_crawljobs", map[string]string{"state": st})
		kept += v
	}
	if running, _ := metricstest.Sum(t, m, "trawler_operator_crawljobs", map[string]string{"state": "running"}); running != 0 || kept < 1 {
		t.Errorf("trawler_operator_crawljobs: %v running, %v finished; want the finished crawl's job", running, kept)
	}
	check("trawler_leader", nil, func(v float64) bool { return v == 1 }, "1 (trawler dev runs the operator)")
	check("go_goroutines", nil, positive, "> 0")
	check("process_resident_memory_bytes", nil, func(v float64) bool { return v > 1<<20 && v < 4<<30 }, "between 1 MiB and 4 GiB")
	for _, family := range []string{"trawler_mongo_command", "trawler_redis_command"} {
		calls, _ := metricstest.Sum(t, m, family+"_duration_seconds_count", nil)
		failed, _ := metricstest.Sum(t, m, family+"_errors_total", nil)
		if failed > calls {
			t.Errorf("%s: %v failures of %v calls", family, failed, calls)
		}
	}
}

// bothRunning reports whether the data of an event is a running crawl
// whose two crawlers say they are running.
func bothRunning(data string) bool {
	var ev struct {
		State     string `json:"state"`
		Instances []struct {
			Status *string `json:"status"`
		} `json:"instances"`
	}
	if json.Unmarshal([]byte(data), &ev) != nil || ev.State != "running" || len(ev.Instances) != 2 {
		return false
	}
	for _, in := range ev.Instances {
		if in.Status == nil || *in.Status != "running" {
			return false
		}
	}
	return true
}

// scrape reads /metrics.
func scrape(t *testing.T) prometheus.Gatherer {
	t.Helper()
	resp, err := http.Get(stack.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	g, err := metricstest.Parse(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return g
}
