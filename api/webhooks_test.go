package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/trawlerhq/trawler/webhook"
)

// TestWebhookRoutes: owners set the URLs (validated as upstream), a crawl
// the API ends notifies crawlFinished, and the notification can be read
// and sent again.
func TestWebhookRoutes(t *testing.T) {
	var mu sync.Mutex
	var got []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	defer recv.Close()
	received := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}

	// The receiver is on loopback, which the operator allows here.
	e := newEnvWith(t, func(c *Config, _ *Deps) { c.AllowedOutbound = loopbackAllowed })
	n, err := webhook.New(webhook.Config{MaxAttempts: 5, RetryDelay: time.Second, MaxRetryDelay: time.Minute,
		Timeout: 15 * time.Second, PollInterval: time.Hour, Workers: 8}, webhook.Deps{Store: e.store, Allowed: loopbackAllowed})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.webhooks = n
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	for _, bad := range []string{"http://localhost:8080/x", "ftp://example.com/x", "example.com/x"} {
		if r := e.do(asOwner, "POST", e.orgPath("/event-webhook-urls"), map[string]any{"crawlStarted": bad}); r.Code != 422 {
			t.Errorf("webhook URL %s: %d %s", bad, r.Code, r.Body)
		}
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/event-webhook-urls"), map[string]any{}), 403, detailNoOwnerPermission)
	urls := map[string]any{"crawlStarted": recv.URL + "/started", "crawlFinished": recv.URL + "/finished",
		"uploadFinished": "https://example.com/upload"}
	e.mustJSON(asOwner, "POST", e.orgPath("/event-webhook-urls"), urls, 200)
	org := e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200)
	for k, v := range urls {
		if get(org, "webhookUrls", k) != v {
			t.Errorf("webhookUrls.%s = %v, want %v", k, get(org, "webhookUrls", k), v)
		}
	}
	if org["origin"] != "http://example.com" {
		t.Errorf("origin %v", org["origin"])
	}

	_, crawlID := e.startCrawl(asCrawler, "hooked")
	e.launcher.setGone(crawlID)
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+crawlID+"/cancel"), nil, 200)

	list := e.mustJSON(asOwner, "GET", e.orgPath("/webhooks"), nil, 200)
	if list["total"] != 1.0 {
		t.Fatalf("notifications: %v", list)
	}
	item := list["items"].([]any)[0].(map[string]any)
	id := item["id"].(string)
	want := fmt.Sprintf(`{"downloadUrls":[],"orgId":"%s","itemId":"%s","event":"crawlFinished","state":"canceled"}`, e.org, crawlID)
	waitUntil(t, "delivery", func() bool { return received() == 1 })
	mu.Lock()
	first := got[0]
	mu.Unlock()
	if first != want {
		t.Fatalf("received %s\nwant %s", first, want)
	}
	var note map[string]any
	waitUntil(t, "attempt recorded", func() bool {
		note = e.mustJSON(asOwner, "GET", e.orgPath("/webhooks/"+id), nil, 200)
		return note["attempts"] == 1.0
	})
	if note["success"] != true || note["event"] != "crawlFinished" || note["lastAttempted"] == nil ||
		get(note, "body", "state") != "canceled" || note["oid"] != e.org.String() {
		t.Fatalf("notification %v", note)
	}
	if r := e.mustJSON(asOwner, "GET", e.orgPath("/webhooks/"+id+"/retry"), nil, 200); r["success"] != true {
		t.Fatalf("retry: %v", r)
	}
	waitUntil(t, "retry delivered", func() bool {
		return received() == 2 && e.mustJSON(asOwner, "GET", e.orgPath("/webhooks/"+id), nil, 200)["attempts"] == 2.0
	})
	if r := e.do(asOwner, "GET", e.orgPath("/webhooks/not-a-uuid"), nil); r.Code != 422 {
		t.Errorf("bad id: %d", r.Code)
	}
	e.wantDetail(e.do(asOwner, "GET", e.orgPath("/webhooks/5b1f3a0e-8f5c-4a55-9e4b-2b7f4c1d9a10/retry"), nil), 404, "notification_not_found")

	e.mustJSON(asOwner, "POST", e.orgPath("/event-webhook-urls"), map[string]any{}, 200)
	if hooks := get(e.mustJSON(asOwner, "GET", e.orgPath(""), nil, 200), "webhookUrls"); hooks != nil && len(hooks.(map[string]any)) != 0 {
		for _, v := range hooks.(map[string]any) {
			if v != nil {
				t.Fatalf("webhookUrls after clearing: %v", hooks)
			}
		}
	}
}

// waitUntil polls cond for up to 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling, with a deadline
	}
}

// TestWebhookRetryRoute: a failed delivery reads attempts 1, success
// false; the retry route sends at once as one attempt, and the automatic
// retry still comes a minute after it.
func TestWebhookRetryRoute(t *testing.T) {
	var mu sync.Mutex
	statuses := []int{http.StatusServiceUnavailable, http.StatusBadGateway}
	received := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		received++
		if len(statuses) > 0 {
			w.WriteHeader(statuses[0])
			statuses = statuses[1:]
		}
	}))
	defer recv.Close()
	requests := func() int {
		mu.Lock()
		defer mu.Unlock()
		return received
	}

	clk := testclock.NewFakeClock(time.Now())
	e := newEnvWith(t, func(c *Config, d *Deps) { c.AllowedOutbound, d.Clock = loopbackAllowed, clk })
	n, err := webhook.New(webhook.Config{MaxAttempts: 12, RetryDelay: time.Minute, MaxRetryDelay: 8 * time.Hour,
		Timeout: 15 * time.Second, PollInterval: 10 * time.Second, Workers: 8}, webhook.Deps{Store: e.store, Clock: clk,
		Allowed: loopbackAllowed})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.webhooks = n
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	e.mustJSON(asOwner, "POST", e.orgPath("/event-webhook-urls"), map[string]any{"crawlFinished": recv.URL + "/finished"}, 200)
	_, crawlID := e.startCrawl(asCrawler, "hooked")
	e.launcher.setGone(crawlID)
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+crawlID+"/cancel"), nil, 200)
	id := e.mustJSON(asOwner, "GET", e.orgPath("/webhooks"), nil, 200)["items"].([]any)[0].(map[string]any)["id"].(string)
	note := func() map[string]any { return e.mustJSON(asOwner, "GET", e.orgPath("/webhooks/"+id), nil, 200) }

	waitUntil(t, "first attempt", func() bool { return note()["attempts"] == 1.0 })
	if got := note(); got["success"] != false || got["lastAttempted"] == nil {
		t.Fatalf("after a failed delivery: %v", got)
	}
	if r := e.mustJSON(asOwner, "GET", e.orgPath("/webhooks/"+id+"/retry"), nil, 200); r["success"] != true {
		t.Fatalf("retry: %v", r)
	}
	// The clock stands still: only the retry route can send now.
	waitUntil(t, "manual retry", func() bool { return note()["attempts"] == 2.0 })
	if got := note(); got["success"] != false || requests() != 2 {
		t.Fatalf("after a failed manual retry: %v, %d requests", got, requests())
	}
	clk.Step(time.Minute)
	waitUntil(t, "automatic retry", func() bool { return note()["success"] == true })
	if got := note(); got["attempts"] != 3.0 || requests() != 3 {
		t.Fatalf("after the automatic retry: %v, %d requests", got, requests())
	}
}
