package operator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// TestCrawlRunsToComplete follows one crawl from launch to removal: the
// children as the crawler expects them, Redis only once a crawler runs,
// the states, stats and files, and the teardown.
func TestCrawlRunsToComplete(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	// A watch from before the crawl exists tells which pod came first; a
	// poll could miss the moment between the two creates.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := h.kube.CoreV1().Pods(h.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	id := h.startCrawl(crawlOpts{scale: 1, seed: "https://example.com/?sim-pages=30&sim-fail=0.2"})

	crawler, redis := k8s.CrawlerName(id, 0), k8s.RedisName(id)
	var first string
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added && (p.Name == crawler || p.Name == redis) {
			first = p.Name
			break
		}
	}
	if first != crawler {
		t.Errorf("first pod created: %q, want the crawler pod %s before its redis pod", first, crawler)
	}
	h.waitFor("crawler pod", 20*time.Second, func() bool {
		_, ok := h.pods(id)[crawler]
		return ok
	})
	p := h.pods(id)[crawler]
	if p.Spec.Hostname != crawler || p.Spec.Subdomain != "crawler" || p.Spec.RestartPolicy != corev1.RestartPolicyOnFailure ||
		p.Spec.PriorityClassName != "crawl-instance-0" || p.Labels["role"] != "crawler" || p.Labels["crawl"] != id {
		t.Errorf("crawler pod %+v", p.Spec)
	}
	pvcs := h.pvcs(id)
	if _, ok := pvcs[crawler]; !ok {
		t.Errorf("no crawler pvc: %v", pvcs)
	}
	if _, ok := pvcs[redis]; !ok {
		t.Errorf("no redis pvc: %v", pvcs)
	}

	h.waitState(id, 30*time.Second, store.StateRunning, store.StatePendingWait, store.StateGenerateWACZ,
		store.StateUploadingWACZ, store.StateComplete)
	if _, ok := h.pods(id)[redis]; !ok && h.crawl(id).State == store.StateRunning {
		t.Error("running without a redis pod")
	}
	h.waitFor("live stats in the crawl document", 30*time.Second, func() bool {
		c := h.crawl(id)
		return c.Stats != nil && c.Stats.Done > 0
	})

	final := h.waitState(id, 60*time.Second, store.FinishedStates...)
	if final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
	c := h.crawl(id)
	if c.Finished == nil || c.Stats == nil || c.Stats.Found == 0 || c.Stats.Done != c.Stats.Found {
		t.Errorf("final crawl finished %v stats %+v", c.Finished, c.Stats)
	}
	if len(c.Files) != 1 || !strings.HasPrefix(c.Files[0].Filename, h.org.String()+"/") || c.FileCount != 1 || c.FileSize <= 0 {
		t.Errorf("files %+v", c.Files)
	}
	if c.Pods["0"].Phase == "" {
		t.Errorf("pod status not recorded: %+v", c.Pods)
	}
	errs, total, err := h.store.ListCrawlErrors(context.Background(), id, store.Paging{})
	if err != nil || total == 0 || int64(len(errs)) != total {
		t.Errorf("errors %d/%d %v: failed pages should have logged errors", len(errs), total, err)
	}

	h.waitFor("post-crawl tasks", 30*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	h.waitFor("crawl job removed after its ttl", 60*time.Second, func() bool { return h.gone(id) })
	h.waitFor("children removed", 30*time.Second, func() bool { return len(h.pods(id)) == 0 })
	if left := h.pvcs(id); len(left) > 0 {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range left {
				if !yield(n) {
					return
				}
			}
		})
		h.waitFor("pvcs removed "+strings.Join(names, ","), 30*time.Second, func() bool { return len(h.pvcs(id)) == 0 })
	}
}
