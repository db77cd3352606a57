package operator_test

import (
	"context"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/store"
)

// TestDocumentStatsCatchUp: with the progress lane all but starved (one
// status write per 1,000 s, as at ten thousand crawls each crawl's turn
// comes half a minute apart), a busy crawl's document still follows its
// page counts: the poller hands them over once they lag five stats
// intervals (here 1 s). The counts never go back, and the crawl ends
// with its final stats.
func TestDocumentStatsCatchUp(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	cfg := h.config()
	cfg.StatsInterval = 200 * time.Millisecond
	cfg.ProgressQPS = 0.001
	h.startOperator(cfg)
	// 120 pages of 200 ms on two workers: about 12 s of crawling.
	id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=120&sim-page-ms=1000"})

	var seen []int64 // each new pages-done count the document showed while running
	h.waitFor("the crawl complete", 2*time.Minute, func() bool {
		c, err := h.store.GetCrawlByID(context.Background(), id)
		if err != nil {
			return false
		}
		last := int64(-1)
		if len(seen) > 0 {
			last = seen[len(seen)-1]
		}
		if c.State == store.StateComplete {
			if c.Stats == nil || c.Stats.Done < max(last, 1) || c.Stats.Done != c.Stats.Found {
				t.Fatalf("complete with stats %+v after %d pages done: want the final count", c.Stats, last)
			}
			return true
		}
		if c.State != store.StateRunning || c.Stats == nil {
			return false
		}
		switch {
		case c.Stats.Done < last:
			t.Fatalf("the document's pages done went back from %d to %d", last, c.Stats.Done)
		case c.Stats.Done > last:
			seen = append(seen, c.Stats.Done)
		}
		return false
	})
	// Running took about 12 s: a count every second or so, where the
	// starved lane alone gives the document two (the state change to
	// running, the lane's one write).
	if len(seen) < 6 {
		t.Errorf("while running the document showed pages done %v: want it to follow the crawl (6 counts or more)", seen)
	}
}
