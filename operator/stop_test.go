package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestErrorsLoggedWhileStoppingAreKept cancels a crawl whose pages fail
// often and slowly: its crawlers finish the pages they have started after
// the cancel, and log their errors while they stop. Every error line a
// crawler logged is recorded.
func TestErrorsLoggedWhileStoppingAreKept(t *testing.T) {
	h := newHarness(t)
	// Nine pages in ten fail (those whose number does not end in 0), so
	// the pages a crawler finishes after the cancel almost surely log an
	// error; the others keep the crawl growing.
	h.crawlArgs(" --sim.failUrlRx sim/[0-9]*[1-9]$")
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{scale: 2, seed: "https://example.com/?sim-pages=5000&sim-links=30&sim-page-ms=5000"})
	h.waitFor("error lines recorded", 60*time.Second, func() bool {
		_, n, err := h.store.ListCrawlErrors(context.Background(), id, store.Paging{})
		return err == nil && n > 0
	})
	atCancel := h.errorLinesLogged(id, 2)
	if err := h.launch.CancelCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, 10*time.Second, store.StateCanceled)
	h.waitFor("crawler pods gone", 60*time.Second, func() bool {
		for _, p := range h.pods(id) {
			if p.Labels[k8s.LabelRole] == k8s.RoleCrawler {
				return false
			}
		}
		return true
	})
	h.waitFor("post-crawl tasks", 60*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	logged := h.errorLinesLogged(id, 2)
	if logged <= atCancel {
		t.Fatalf("no error logged while stopping (%d at the cancel, %d in all): the test shows nothing", atCancel, logged)
	}
	_, recorded, err := h.store.ListCrawlErrors(context.Background(), id, store.Paging{})
	if err != nil {
		t.Fatal(err)
	}
	if int(recorded) != logged {
		t.Errorf("%d error lines recorded, %d logged (%d of them while stopping)", recorded, logged, logged-atCancel)
	}
}

// errorLinesLogged counts the error and fatal lines in the logs of the
// crawl's first scale crawler pods (the kubelet keeps them after the pods
// are gone).
func (h *harness) errorLinesLogged(id string, scale int) int {
	n := 0
	for i := range scale {
		for _, line := range strings.Split(h.env.Kubelet.Logs(h.ns, k8s.CrawlerName(id, i), "crawler"), "\n") {
			if strings.Contains(line, `"logLevel":"error"`) || strings.Contains(line, `"logLevel":"fatal"`) {
				n++
			}
		}
	}
	return n
}

// crawlArgs appends to the CRAWL_ARGS of every crawler of the test's
// namespace.
func (h *harness) crawlArgs(extra string) {
	h.t.Helper()
	ctx := context.Background()
	for _, name := range []string{k8s.SharedCrawlerConfigName, k8s.SharedCrawlerConfigV1Name} {
		cm, err := h.kube.CoreV1().ConfigMaps(h.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
		cm.Data["CRAWL_ARGS"] += extra
		if _, err := h.kube.CoreV1().ConfigMaps(h.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
}
