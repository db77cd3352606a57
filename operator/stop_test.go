package operator_test

import (
	"context"
	"testing"
	"time"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// TestStopIsGraceful stops a running crawl: the crawler uploads what it
// has and the crawl ends partial_complete, with its file.
func TestStopIsGraceful(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{scale: 2, seed: slowSite})
	h.waitPagesDone(id, 5)
	if err := h.launch.StopCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	h.waitFor("stopping in status", 10*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && j.Status.Stopping
	})
	if final := h.waitState(id, 60*time.Second, store.FinishedStates...); final != store.StatePartialComplete {
		t.Fatalf("final state %s", final)
	}
	if c := h.crawl(id); len(c.Files) != 2 {
		t.Errorf("files %v, want one per instance", c.Files)
	}
}

// TestCancelIsImmediate deletes a running crawl's job: the crawl is
// canceled at once and its crawler pods are deleted, then everything goes.
func TestCancelIsImmediate(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{scale: 2, seed: slowSite})
	h.waitState(id, 30*time.Second, store.StateRunning)
	start := time.Now()
	if err := h.launch.CancelCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, 10*time.Second, store.StateCanceled)
	t.Logf("canceled %v after the delete", time.Since(start))
	h.waitFor("crawler pods deleted", 10*time.Second, func() bool {
		for _, p := range h.pods(id) {
			if p.Labels["role"] == "crawler" && p.DeletionTimestamp == nil {
				return false
			}
		}
		return true
	})
	h.waitFor("job removed", 60*time.Second, func() bool { return h.gone(id) })
	h.waitFor("pods removed", 30*time.Second, func() bool { return len(h.pods(id)) == 0 })
	if c := h.crawl(id); c.Finished == nil || !c.PostCrawlDone {
		t.Errorf("canceled crawl finished %v postCrawlDone %v", c.Finished, c.PostCrawlDone)
	}
}

// TestLimitsStopTheCrawl covers the time, size and page limits.
func TestLimitsStopTheCrawl(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	timed := h.startCrawl(crawlOpts{seed: slowSite, spec: func(s *trawlerv1.CrawlJobSpec) { s.CrawlTimeout = 3 }})
	sized := h.startCrawl(crawlOpts{seed: slowSite, spec: func(s *trawlerv1.CrawlJobSpec) { s.MaxCrawlSize = 300_000 }})
	paged := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=50", limit: 7})

	for _, tc := range []struct {
		name, id, want string
	}{
		{"time limit", timed, store.StatePartialComplete},
		{"size limit", sized, store.StatePartialComplete},
		{"page limit", paged, store.StateComplete},
	} {
		if final := h.waitState(tc.id, 60*time.Second, store.FinishedStates...); final != tc.want {
			t.Errorf("%s: final state %s, want %s", tc.name, final, tc.want)
		}
	}
	if c := h.crawl(paged); c.Stats == nil || c.Stats.Found != 7 {
		t.Errorf("page limit: stats %+v", c.Stats)
	}
	if c := h.crawl(sized); c.Stats == nil || c.Stats.Size <= 300_000 {
		t.Errorf("size limit: stats %+v", c.Stats)
	}
}
