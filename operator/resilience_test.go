package operator_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// TestRestartTimeRecreatesCrawlerPods changes the crawl config and asks
// for a restart: the crawler pods are recreated, their PVCs kept, and the
// crawl goes on to complete.
func TestRestartTimeRecreatesCrawlerPods(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{scale: 2, seed: slowSite})
	h.waitPagesDone(id, 5)
	before := h.pods(id)
	pvcsBefore := h.pvcs(id)
	if err := h.launch.RestartCrawl(context.Background(), id, []byte(`{"seeds":[{"url":"`+slowSite+`"}]}`)); err != nil {
		t.Fatal(err)
	}
	j, _ := h.job(id)
	want := j.Spec.RestartTime
	h.waitFor("new crawler pods and restartTime recorded", 60*time.Second, func() bool {
		j, err := h.job(id)
		if err != nil || j.Status.RestartTime != want {
			return false
		}
		now := h.pods(id)
		for i := range 2 {
			name := k8s.CrawlerName(id, i)
			if now[name].UID == "" || now[name].UID == before[name].UID {
				return false
			}
		}
		return true
	})
	for name, p := range h.pvcs(id) {
		if pvcsBefore[name].UID != p.UID {
			t.Errorf("pvc %s was recreated", name)
		}
	}
	if final := h.waitState(id, 90*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
}

// TestEvictedPodIsRecreated marks a crawler pod Failed (as an eviction
// does): the operator replaces it and the crawl completes.
func TestEvictedPodIsRecreated(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{seed: slowSite})
	name := k8s.CrawlerName(id, 0)
	h.waitPagesDone(id, 3)
	old := h.pods(id)[name]
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"phase": "Failed", "reason": "Evicted",
		"message": "The node was low on resource: ephemeral-storage."}})
	if _, err := h.kube.CoreV1().Pods(h.ns).Patch(context.Background(), name, types.MergePatchType, patch,
		metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	h.waitFor("replacement pod", 30*time.Second, func() bool {
		p, ok := h.pods(id)[name]
		return ok && p.UID != old.UID
	})
	if final := h.waitState(id, 90*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
}

// cordon makes the scheduler leave every node alone (or not).
func (h *harness) cordon(on bool) {
	h.t.Helper()
	for _, n := range h.env.Kubelet.NodeNames() {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": on}})
		if _, err := h.kube.CoreV1().Nodes().Patch(context.Background(), n, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
}

// TestRedisPausedWithoutCrawlersAndResumed takes the crawler away with no
// room to come back: the Redis pod is removed after the idle time, its
// PVC stays, and when the crawler runs again Redis returns with the
// crawl's state and the crawl resumes.
func TestRedisPausedWithoutCrawlersAndResumed(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	cfg.RedisIdle = 2 * time.Second
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{seed: slowSite})
	h.waitPagesDone(id, 5)
	h.cordon(true)
	t.Cleanup(func() { h.cordon(false) })
	redisPVC := h.pvcs(id)[k8s.RedisName(id)].UID
	if err := h.kube.CoreV1().Pods(h.ns).Delete(context.Background(), k8s.CrawlerName(id, 0), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("redis paused", 30*time.Second, func() bool {
		_, ok := h.pods(id)[k8s.RedisName(id)]
		return !ok
	})
	if h.pvcs(id)[k8s.RedisName(id)].UID != redisPVC {
		t.Fatal("redis pvc was not kept")
	}
	j, _ := h.job(id)
	doneBefore := j.Status.PagesDone
	h.cordon(false)
	h.waitFor("redis back", 30*time.Second, func() bool {
		p, ok := h.pods(id)[k8s.RedisName(id)]
		return ok && p.Status.Phase == corev1.PodRunning
	})
	if final := h.waitState(id, 90*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
	if c := h.crawl(id); c.Stats.Done < doneBefore || c.Stats.Done != c.Stats.Found {
		t.Errorf("crawl restarted from scratch or lost pages: before %d, final %+v", doneBefore, c.Stats)
	}
}

// TestOutagesSlowOnlyTheCrawlsThatNeedThem makes one crawl's Redis
// unreachable while another crawl runs to completion, then stops MongoDB
// mid-crawl: nothing recorded is lost once both come back.
func TestOutagesSlowOnlyTheCrawlsThatNeedThem(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	ctx := context.Background()
	cut := h.startCrawl(crawlOpts{seed: slowSite})
	h.waitPagesDone(cut, 3)
	dns := h.env.Kubelet.DNS()
	host := k8s.RedisName(cut) + ".redis." + h.ns + ".svc.cluster.local"
	addr, ok := dns.Resolve(host)
	if !ok {
		t.Fatal("crawl redis not registered")
	}
	dns.Unregister(host, addr)
	other := h.startCrawl(crawlOpts{})
	if final := h.waitState(other, 60*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("a healthy crawl ended %s while another's redis was down", final)
	}
	dns.Register(host, addr)

	h.waitState(cut, 30*time.Second, store.StateRunning)
	if err := h.env.Mongo.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := h.env.Mongo.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if final := h.waitState(cut, 120*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
	c := h.crawl(cut)
	if len(c.Files) != 1 || c.Stats.Done != c.Stats.Found {
		t.Errorf("after the outages: files %v stats %+v", c.Files, c.Stats)
	}
}

// TestRestartOfAWaitingCrawlRecreatesItsPodsOnce restarts crawls whose
// crawler cannot be scheduled, as an exclusion edit does: one waiting for
// capacity, one still starting. Each gets its new crawler pod once and
// records the restart; the new pod then stays.
func TestRestartOfAWaitingCrawlRecreatesItsPodsOnce(t *testing.T) {
	for _, tc := range []struct {
		name            string
		startingTimeout time.Duration
		state           string
	}{
		{"waiting_capacity", 2 * time.Second, store.StateWaitingCapacity},
		{"starting", time.Hour, store.StateStarting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cfg := h.config()
			huge := resource.MustParse("100")
			cfg.CrawlerCPU = &huge
			cfg.StartingTimeout = tc.startingTimeout
			h.startOperator(cfg)
			id := h.startCrawl(crawlOpts{})
			h.waitState(id, 20*time.Second, tc.state)
			name := k8s.CrawlerName(id, 0)
			h.waitFor("a pending crawler pod", 10*time.Second, func() bool { return h.pods(id)[name].UID != "" })
			old := h.pods(id)[name].UID

			// Every crawler pod created from now on.
			w, err := h.kube.CoreV1().Pods(h.ns).Watch(context.Background(), metav1.ListOptions{
				LabelSelector: k8s.LabelCrawl + "=" + id, ResourceVersion: h.pods(id)[name].ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var mu sync.Mutex
			created := map[types.UID]bool{}
			go func() {
				for ev := range w.ResultChan() {
					if p, ok := ev.Object.(*corev1.Pod); ok && p.Name == name && p.UID != old {
						mu.Lock()
						created[p.UID] = true
						mu.Unlock()
					}
				}
			}()

			if err := h.launch.RestartCrawl(context.Background(), id, []byte(`{"seeds":[{"url":"https://example.com/"}],"exclude":["nope"]}`)); err != nil {
				t.Fatal(err)
			}
			j, _ := h.job(id)
			want := j.Spec.RestartTime
			h.waitFor("restartTime recorded with a new pod", 30*time.Second, func() bool {
				j, err := h.job(id)
				p := h.pods(id)[name]
				return err == nil && j.Status.RestartTime == want && p.UID != "" && p.UID != old && p.DeletionTimestamp == nil
			})
			// A churning operator would delete the new pod at its next pass.
			recreated := h.pods(id)[name].UID
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				if p := h.pods(id)[name]; p.UID != recreated || p.DeletionTimestamp != nil {
					t.Fatalf("the recreated pod was deleted again (uid %s -> %s)", recreated, p.UID)
				}
				time.Sleep(50 * time.Millisecond)
			}
			mu.Lock()
			if len(created) != 1 {
				t.Errorf("the crawler pod was created %d times for one restart", len(created))
			}
			mu.Unlock()
			if s := h.crawl(id).State; s != tc.state {
				t.Errorf("state %s after the restart, want %s", s, tc.state)
			}
		})
	}
}
