package operator_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// pageRecord is a page as a 1.x crawler pushes it to <id>:pages.
func pageRecord(id uuid.UUID, url string, depth int) string {
	return fmt.Sprintf(`{"id":%q,"url":%q,"title":"page %s","loadState":4,"ts":"2026-12-02T10:00:0%d.000Z","mime":"text/html","status":200,"depth":%d,"seed":%t,"filename":"x.wacz"}`,
		id, url, url, depth, depth, depth == 0)
}

// pushPages LPUSHes page records into the crawl's Redis, as the crawler
// does.
func (h *harness) pushPages(id string, recs ...string) {
	h.t.Helper()
	for _, r := range recs {
		if err := h.crawlRedis(id).LPush(context.Background(), crawlredis.Keys(id).Pages(), r).Err(); err != nil {
			h.t.Fatal(err)
		}
	}
}

// storedPages lists the crawl's stored pages.
func (h *harness) storedPages(id string) []store.Page {
	h.t.Helper()
	pages, _, err := h.store.ListPages(context.Background(), store.PageQuery{CrawlIDs: []string{id}, NoCount: true})
	if err != nil {
		h.t.Fatal(err)
	}
	return pages
}

// pushedPagesOnly runs the crawls of cfg on 0.11 crawlers, which send no
// page records of their own: the tests push every page the operator sees.
func pushedPagesOnly(cfg operator.Config) operator.Config {
	cfg.CrawlerChannels = slices.Clone(cfg.CrawlerChannels)
	for i := range cfg.CrawlerChannels {
		cfg.CrawlerChannels[i].Protocol = k8s.ProtocolV011
	}
	return cfg
}

// TestPagesArriveWhileTheCrawlRuns is upstream-2026 §8.3 item 6: a page
// pushed to <id>:pages is stored while the crawl runs, a duplicate page id
// is ignored, the list is emptied, and the finished crawl counts them.
func TestPagesArriveWhileTheCrawlRuns(t *testing.T) {
	h := newHarness(t)
	h.startOperator(pushedPagesOnly(h.config()))
	id := h.startCrawl(crawlOpts{seed: slowSite})
	h.waitState(id, 60*time.Second, store.StateRunning)

	seed := uuid.New()
	h.pushPages(id, pageRecord(seed, "https://example.com/", 0))
	h.waitFor("the page stored", 30*time.Second, func() bool { return len(h.storedPages(id)) == 1 })
	p := h.storedPages(id)[0]
	if p.ID != seed || p.OID != h.org || !p.IsSeed || p.Filename == nil || *p.Filename != "x.wacz" {
		t.Errorf("stored page %+v", p)
	}

	h.pushPages(id, pageRecord(seed, "https://example.com/", 0), pageRecord(uuid.New(), "https://example.com/a", 1),
		pageRecord(uuid.New(), "https://example.com/b", 1))
	h.waitFor("the list emptied", 30*time.Second, func() bool {
		n, err := h.crawlRedis(id).LLen(context.Background(), crawlredis.Keys(id).Pages()).Result()
		return err == nil && n == 0
	})
	h.waitFor("three pages", 30*time.Second, func() bool { return len(h.storedPages(id)) == 3 })

	if err := h.launch.StopCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	h.waitFor("post-crawl tasks", 120*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	c := h.crawl(id)
	if c.PageCount != 3 || c.UniquePageCount != 3 || !store.IsSuccessful(c.State) {
		t.Errorf("crawl %s: pageCount %d, uniquePageCount %d", c.State, c.PageCount, c.UniquePageCount)
	}
}

// TestCanceledCrawlKeepsNoPages is §8.3 item 9 for the operator: pages a
// canceled crawl sent, even ones still in its Redis at the end, are gone
// with it and its counters stay 0.
func TestCanceledCrawlKeepsNoPages(t *testing.T) {
	h := newHarness(t)
	h.startOperator(pushedPagesOnly(h.config()))
	id := h.startCrawl(crawlOpts{seed: slowSite})
	h.waitState(id, 60*time.Second, store.StateRunning)
	h.pushPages(id, pageRecord(uuid.New(), "https://example.com/", 0))
	h.waitFor("the page stored", 30*time.Second, func() bool { return len(h.storedPages(id)) == 1 })
	h.pushPages(id, pageRecord(uuid.New(), "https://example.com/a", 1))
	if err := h.launch.CancelCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	h.waitFor("post-crawl tasks", 120*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	if n := len(h.storedPages(id)); n != 0 || h.crawl(id).PageCount != 0 {
		t.Errorf("canceled crawl: %d pages, pageCount %d", n, h.crawl(id).PageCount)
	}
}

// waczPages stands in for the API's reader of WACZ pages: it stores one
// page for each crawl it is asked about.
type waczPages struct {
	st    *store.Mongo
	org   uuid.UUID
	mu    sync.Mutex
	asked []string
}

func (w *waczPages) AddWACZPages(ctx context.Context, crawlID string) error {
	w.mu.Lock()
	w.asked = append(w.asked, crawlID)
	w.mu.Unlock()
	_, err := w.st.AddPages(ctx, []store.Page{{ID: uuid.New(), OID: w.org, CrawlID: crawlID, URL: "https://example.com/",
		TS: time.Now().UTC().Truncate(time.Millisecond), IsSeed: true}})
	return err
}

// TestFinishedCrawlReadsWACZPages: a crawl whose crawler sent no pages
// (0.11) has them read from its WACZ files after it ends, before they are
// counted.
func TestFinishedCrawlReadsWACZPages(t *testing.T) {
	h := newHarness(t)
	w := &waczPages{st: h.store, org: h.org}
	deps := h.deps()
	deps.Pages = w
	h.startOperatorWith(pushedPagesOnly(h.config()), deps)
	id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=3"})
	h.waitFor("post-crawl tasks", 120*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	w.mu.Lock()
	asked := fmt.Sprint(w.asked)
	w.mu.Unlock()
	if asked != "["+id+"]" {
		t.Errorf("WACZ pages read for %s, want [%s]", asked, id)
	}
	if c := h.crawl(id); c.PageCount != 1 {
		t.Errorf("pageCount %d, want the page read from the WACZ", c.PageCount)
	}
}
