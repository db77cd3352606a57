package operator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

// hookReceiver is a webhook endpoint subscribed to the harness org's
// crawlStarted (/started) and crawlFinished (/finished), with a running
// Notifier delivering to it.
type hookReceiver struct {
	mu       sync.Mutex
	got      map[string][]string
	origin   string
	notifier *webhook.Notifier
}

func newHookReceiver(t *testing.T, h *harness) *hookReceiver {
	r := &hookReceiver{got: map[string][]string{}, origin: "https://app.example.com"}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got[req.URL.Path] = append(r.got[req.URL.Path], string(b))
		r.mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	ctx := context.Background()
	if err := h.store.SetOrgWebhooks(ctx, h.org, map[string]string{store.EventCrawlStarted: recv.URL + "/started",
		store.EventCrawlFinished: recv.URL + "/finished"}, r.origin); err != nil {
		t.Fatal(err)
	}
	var err error
	r.notifier, err = webhook.New(webhook.Config{MaxAttempts: 5, RetryDelay: 100 * time.Millisecond, MaxRetryDelay: time.Minute,
		Timeout: 15 * time.Second, PollInterval: 10 * time.Second, Workers: 8}, webhook.Deps{Store: h.store,
		Allowed: netpolicy.AllowList{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		Resources: func(_ context.Context, c *store.Crawl) ([]string, error) {
			paths := make([]string, len(c.Files))
			for i := range c.Files {
				paths[i] = c.Files[i].Path("/data/")
			}
			return paths, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.notifier.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// bodies are the bodies posted to path so far.
func (r *hookReceiver) bodies(path string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.got[path]...)
}

// TestCrawlWebhooks: a receiver subscribed to crawlStarted and
// crawlFinished gets each once for a crawl, with upstream's exact bodies,
// and the notifications record one successful attempt each.
func TestCrawlWebhooks(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	hooks := newHookReceiver(t, h)
	deps := h.deps()
	deps.Events = hooks.notifier
	h.startOperatorWith(h.config(), deps)
	bodies, origin := hooks.bodies, hooks.origin

	id := h.startCrawl(crawlOpts{})
	h.waitState(id, 60*time.Second, store.StateComplete)
	h.waitFor("both webhooks", 30*time.Second, func() bool {
		return len(bodies("/started")) > 0 && len(bodies("/finished")) > 0
	})
	crawl := h.crawl(id)
	if len(crawl.Files) == 0 {
		t.Fatal("crawl has no files")
	}
	urls := make([]string, len(crawl.Files))
	for i := range crawl.Files {
		if p := crawl.Files[i].Path("/data/"); strings.Contains(p, "://") {
			urls[i] = fmt.Sprintf("%q", p)
		} else {
			urls[i] = fmt.Sprintf("%q", origin+p)
		}
	}
	wantStarted := fmt.Sprintf(`{"downloadUrls":[],"orgId":"%s","itemId":"%s","scheduled":false,"event":"crawlStarted"}`, h.org, id)
	wantFinished := fmt.Sprintf(`{"downloadUrls":[%s],"orgId":"%s","itemId":"%s","event":"crawlFinished","state":"complete"}`,
		strings.Join(urls, ","), h.org, id)
	if b := bodies("/started"); len(b) != 1 || b[0] != wantStarted {
		t.Errorf("crawlStarted bodies %q\nwant [%s]", b, wantStarted)
	}
	if b := bodies("/finished"); len(b) != 1 || b[0] != wantFinished {
		t.Errorf("crawlFinished bodies %q\nwant [%s]", b, wantFinished)
	}
	h.waitFor("attempts recorded", 10*time.Second, func() bool {
		notes, _, err := h.store.ListNotifications(ctx, h.org, store.Paging{})
		if err != nil || len(notes) != 2 {
			return false
		}
		for _, note := range notes {
			if !note.Success || note.Attempts != 1 {
				return false
			}
		}
		return notes[0].Event == store.EventCrawlStarted && notes[1].Event == store.EventCrawlFinished
	})
}

// failingEvents cannot store crawlStarted notifications (a store outage).
type failingEvents struct {
	mu    sync.Mutex
	calls int
}

func (f *failingEvents) CrawlStarted(context.Context, *store.Crawl) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return errors.New("injected: notifications unavailable")
}

func (f *failingEvents) CrawlFinished(context.Context, *store.Crawl) error { return nil }

func (f *failingEvents) called() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// TestCrawlStartedSurvivesOperatorRestart: an operator that could not
// store a running crawl's crawlStarted notification stops; the next one
// stores and delivers it, once, and records that in the job's status.
func TestCrawlStartedSurvivesOperatorRestart(t *testing.T) {
	h := newHarness(t)
	hooks := newHookReceiver(t, h)
	failing := &failingEvents{}
	deps := h.deps()
	deps.Events = failing
	first := h.startOperatorWith(h.config(), deps)
	id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=400&sim-page-ms=100"})
	h.waitState(id, 60*time.Second, store.StateRunning)
	h.waitFor("a failed crawlStarted attempt", 20*time.Second, func() bool { return failing.called() > 0 })
	first.stop()
	if j, err := h.job(id); err != nil || meta.IsStatusConditionTrue(j.Status.Conditions, operator.CondStartedNotified) {
		t.Fatalf("job after the failed notification: %v", err)
	}

	deps.Events = hooks.notifier
	h.startOperatorWith(h.config(), deps)
	h.waitFor("crawlStarted delivered", 30*time.Second, func() bool { return len(hooks.bodies("/started")) > 0 })
	h.waitFor("StartedNotified condition", 30*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && meta.IsStatusConditionTrue(j.Status.Conditions, operator.CondStartedNotified)
	})
	want := fmt.Sprintf(`{"downloadUrls":[],"orgId":"%s","itemId":"%s","scheduled":false,"event":"crawlStarted"}`, h.org, id)
	if b := hooks.bodies("/started"); len(b) != 1 || b[0] != want {
		t.Fatalf("crawlStarted bodies %q, want [%s]", b, want)
	}
}
