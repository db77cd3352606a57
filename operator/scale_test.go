package operator_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// slowSite is a synthetic site that takes a few seconds to crawl.
const slowSite = "https://example.com/?sim-pages=150&sim-page-ms=1500"

// crawlRedis connects to a crawl's Redis pod the way the operator does.
func (h *harness) crawlRedis(id string) *redis.Client {
	cfg := h.config()
	opts, err := redis.ParseURL(k8s.RedisURL(id, cfg.Namespace, cfg.ClusterDomain))
	if err != nil {
		h.t.Fatal(err)
	}
	opts.Dialer = h.env.Dial
	c := redis.NewClient(opts)
	h.t.Cleanup(func() { c.Close() })
	return c
}

// TestSeedScenarioScaleDown is upstream PR #1149's scenario: a crawl at
// scale 3 is scaled to 1 while crawling; instances 1 and 2 stop
// gracefully and stay Completed while instance 0 runs on, their WACZs are
// recorded, and the crawl ends complete.
func TestSeedScenarioScaleDown(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{scale: 3, seed: slowSite})
	h.waitFor("three running crawlers", 30*time.Second, func() bool {
		n := 0
		for _, p := range h.pods(id) {
			if p.Labels[k8s.LabelRole] == k8s.RoleCrawler && p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 3
	})
	h.waitPagesDone(id, 10)
	if err := h.launch.ScaleCrawl(context.Background(), id, 1); err != nil {
		t.Fatal(err)
	}

	c0, c1, c2 := k8s.CrawlerName(id, 0), k8s.CrawlerName(id, 1), k8s.CrawlerName(id, 2)
	// Watch every pod update: the Completed state of a dropped instance
	// may last only milliseconds.
	w, err := h.kube.CoreV1().Pods(h.ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: k8s.LabelCrawl + "=" + id})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	phase := map[string]corev1.PodPhase{}
	completedWhileRunning := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			phase[p.Name] = p.Status.Phase
			if p.Status.Phase == corev1.PodSucceeded && phase[c0] == corev1.PodRunning {
				completedWhileRunning[p.Name] = true
			}
			mu.Unlock()
		}
	}()
	h.waitFor("instances 1 and 2 dropped", 60*time.Second, func() bool {
		pods := h.pods(id)
		_, has1 := pods[c1]
		_, has2 := pods[c2]
		j, err := h.job(id)
		return err == nil && !has1 && !has2 && j.Status.Scale == 1
	})
	mu.Lock()
	if !completedWhileRunning[c1] || !completedWhileRunning[c2] {
		t.Errorf("instances Completed while instance 0 ran: %v, want both 1 and 2", completedWhileRunning)
	}
	mu.Unlock()
	h.waitFor("their PVCs removed", 30*time.Second, func() bool {
		pvcs := h.pvcs(id)
		_, has1 := pvcs[c1]
		_, has2 := pvcs[c2]
		return !has1 && !has2
	})
	rdb := h.crawlRedis(id)
	h.waitFor("their redis fields removed", 10*time.Second, func() bool {
		ctx := context.Background()
		st, _ := rdb.HGetAll(ctx, id+":status").Result()
		so, _ := rdb.HGetAll(ctx, id+":stopone").Result()
		_, s1 := st[c1]
		_, s2 := st[c2]
		return !s1 && !s2 && len(so) == 0
	})

	if final := h.waitState(id, 90*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
	files := map[string]bool{}
	for _, f := range h.crawl(id).Files {
		for _, suffix := range []string{"-0.wacz", "-1.wacz", "-2.wacz"} {
			if strings.HasSuffix(f.Filename, suffix) {
				files[suffix] = true
			}
		}
	}
	if len(files) != 3 {
		t.Errorf("WACZs recorded %v, want one from each instance", h.crawl(id).Files)
	}
}

// TestScaleUpIsImmediate adds instances to a running crawl at once.
func TestScaleUpIsImmediate(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{scale: 1, seed: slowSite})
	h.waitState(id, 30*time.Second, store.StateRunning)
	h.waitFor("pages found", 30*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && j.Status.PagesFound >= 3
	})
	start := time.Now()
	if err := h.launch.ScaleCrawl(context.Background(), id, 3); err != nil {
		t.Fatal(err)
	}
	h.waitFor("three crawler pods", 10*time.Second, func() bool {
		pods := h.pods(id)
		_, ok := pods[k8s.CrawlerName(id, 2)]
		return ok
	})
	t.Logf("instance 2 created %v after the scale-up", time.Since(start))
	if final := h.waitState(id, 90*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
}
