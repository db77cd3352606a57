package operator_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/store"
)

// BenchmarkProgressWriteFloor (issue 28): how many progress writes a
// second this cluster's API server takes at most, with nothing else
// running: 1,000 CrawlJobs with a running crawl's status, their page
// counts written as the operator's progress lane writes them (a merge
// patch of the status's changed stats, unconditional), by 8, 16, 32 and
// 64 callers with no client-side limit, for PROGRESS_FLOOR_SECONDS
// (default 15) each.
//
// A thousand busy crawls (10 % of 10,000), each written once per 2 s
// stats interval, want 500 writes a second; at a rate R a round over
// them takes 1,000 / R seconds, which is what a page done then waits for
// its status at worst. So this says whether the 10,000-crawl row
// "busy crawl's change → status ≤ 2 s" fits the cluster at all, before
// the kubelet, the scheduler, MongoDB and the crawls' Redis take their
// share of the two cores.
func BenchmarkProgressWriteFloor(b *testing.B) {
	const n = 1000
	window := 15 * time.Second
	if s, err := strconv.Atoi(os.Getenv("PROGRESS_FLOOR_SECONDS")); err == nil && s > 0 {
		window = time.Duration(s) * time.Second
	}
	h := newHarness(b)
	rc := rest.CopyConfig(h.env.Config())
	rc.QPS, rc.Burst, rc.RateLimiter = 10000, 10000, nil
	crs := versioned.NewForConfigOrDie(rc)
	names := runningCrawlJobs(b, h, crs, n)

	b.ResetTimer()
	for _, callers := range []int{8, 16, 32, 64} {
		rate, p99 := patchProgress(b, crs, h.ns, names, callers, window)
		b.Logf("%d callers: %.0f progress writes/s, each p99 %v; a round over %d crawls %.1f s",
			callers, rate, p99.Round(time.Millisecond), n, float64(n)/rate)
		b.ReportMetric(rate, fmt.Sprintf("writes/s-%d", callers))
	}
}

// runningCrawlJobs creates n CrawlJobs (no finalizer: no operator runs)
// with the status the operator writes for a running scale-1 crawl, and
// returns their names.
func runningCrawlJobs(b *testing.B, h *harness, crs versioned.Interface, n int) []string {
	b.Helper()
	ctx := context.Background()
	names := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		id := fmt.Sprintf("manual-floor-%04d", i)
		names[i] = k8s.CrawlJobName(id)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cj := &trawlerv1.CrawlJob{
				ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: h.ns,
					Labels: map[string]string{k8s.LabelCrawl: id, k8s.LabelRole: k8s.RoleJob, k8s.LabelOrg: h.org.String()}},
				Spec: trawlerv1.CrawlJobSpec{ID: id, OID: h.org.String(), CID: h.org.String(), Scale: 1,
					ConfigMap: k8s.CrawlConfigMapName(id), StorageName: "default"},
			}
			created, err := crs.TrawlerV1().CrawlJobs(h.ns).Create(ctx, cj, metav1.CreateOptions{})
			if err != nil {
				b.Error(err)
				return
			}
			created.Status = runningStatus(created.Generation)
			if _, err := crs.TrawlerV1().CrawlJobs(h.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return names
}

// runningStatus is a running scale-1 crawl's status as the operator
// writes it.
func runningStatus(generation int64) trawlerv1.CrawlJobStatus {
	now := metav1.Now()
	req := func(storage string) map[string]string {
		return map[string]string{"cpu": "900m", "memory": "1800Mi", "storage": storage}
	}
	return trawlerv1.CrawlJobStatus{State: store.StateRunning, Scale: 1, InitRedis: true,
		LastActiveTime: &now, RunningSince: &now, CrawlerImage: "webrecorder/browsertrix-crawler:1.6.0",
		Pods: map[string]trawlerv1.PodStatus{
			"redis": {Phase: "Running", Requests: map[string]string{"cpu": "100m", "memory": "200Mi", "storage": "1Gi"}},
			"0":     {Phase: "Running", Requests: req("26Gi")},
		},
		ObservedGeneration: generation}
}

// patchProgress writes page counts to the named CrawlJobs round-robin by
// that many callers for the window, and returns the writes a second and
// their p99.
func patchProgress(b *testing.B, crs versioned.Interface, ns string, names []string, callers int, window time.Duration) (float64, time.Duration) {
	b.Helper()
	ctx := context.Background()
	var next, done atomic.Int64
	var mu sync.Mutex
	var took []time.Duration
	deadline := time.Now().Add(window)
	start := time.Now()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) {
				i := next.Add(1)
				name := names[int(i)%len(names)]
				patch := fmt.Sprintf(`{"status":{"pagesDone":%d,"pagesFound":%d,"size":%d,"sizeHuman":"%d kB"}}`,
					i, i+10, i*1000, i)
				t0 := time.Now()
				if _, err := crs.TrawlerV1().CrawlJobs(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
				done.Add(1)
			}
			mu.Lock()
			took = append(took, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), percentile(took, 0.99)
}
