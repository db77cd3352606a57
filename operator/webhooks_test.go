package operator_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

// TestCrawlWebhooks: a receiver subscribed to crawlStarted and
// crawlFinished gets each once for a crawl, with upstream's exact bodies,
// and the notifications record one successful attempt each.
func TestCrawlWebhooks(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	got := map[string][]string{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], string(b))
		mu.Unlock()
	}))
	defer recv.Close()
	bodies := func(path string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string{}, got[path]...)
	}

	ctx := context.Background()
	const origin = "https://app.example.com"
	if err := h.store.SetOrgWebhooks(ctx, h.org, map[string]string{webhook.EventCrawlStarted: recv.URL + "/started",
		webhook.EventCrawlFinished: recv.URL + "/finished"}, origin); err != nil {
		t.Fatal(err)
	}
	n := webhook.New(webhook.Config{RetryDelay: 100 * time.Millisecond}, webhook.Deps{Store: h.store,
		Resources: func(_ context.Context, c *store.Crawl) ([]string, error) {
			paths := make([]string, len(c.Files))
			for i := range c.Files {
				paths[i] = c.Files[i].Path("/data/")
			}
			return paths, nil
		}})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { n.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()
	deps := h.deps()
	deps.Events = n
	h.startOperatorWith(h.config(), deps)

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
		return notes[0].Event == webhook.EventCrawlStarted && notes[1].Event == webhook.EventCrawlFinished
	})
}
