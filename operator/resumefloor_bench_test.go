package operator_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/operator"
)

// BenchmarkResumeFloor (issue 29): the Kubernetes part of resuming 100
// paused crawls at once, without the operator: their PVCs exist and are
// bound (a pause keeps them), and the bench creates each crawl's Redis
// pod and crawler pod, as the operator renders them, by 64 callers (the
// operator's 48 workers and the 16 asking), then times each crawl until
// the watch shows both its pods running. No resume can be recorded
// sooner on this cluster, before the operator's own reads and writes
// (the crawl document's transition, the status) take their turn on the
// same two cores. Three rounds; it reports the per-crawl p50 and p99 of
// the rounds together.
func BenchmarkResumeFloor(b *testing.B) {
	const n, rounds, callers = 100, 3, 64
	h := newHarness(b)
	cfg := stubConfig(h.config(), h.env.Redis.Addr())
	client := kubernetes.NewForConfigOrDie(operator.RateLimitedRestConfig(h.env.Config()))
	jobs := h.benchJobs(n)
	pods := map[string][]*corev1.Pod{}
	for _, j := range jobs {
		pvcs, ps := operator.NewCrawlChildren(j, cfg)
		for _, pvc := range pvcs {
			pvc.OwnerReferences = nil // no CrawlJob here
			if _, err := client.CoreV1().PersistentVolumeClaims(h.ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		for _, p := range ps {
			p.OwnerReferences = nil
		}
		pods[j.Spec.ID] = ps
	}
	h.waitFor("PVCs bound", 2*time.Minute, func() bool { return h.allPVCsBound() })

	b.ResetTimer()
	var took []time.Duration
	for r := range rounds {
		running := h.podsFirst(context.Background(), h.ns, k8s.LabelCrawl, 2*n,
			func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, callers)
		for _, ps := range pods {
			for _, p := range ps {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					if _, err := client.CoreV1().Pods(h.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
						b.Error(err)
					}
				})
			}
		}
		wg.Wait()
		at := await(b, "the pods running", running)
		var round []time.Duration
		for id, ps := range pods {
			times := make([]time.Time, len(ps))
			for i, p := range ps {
				times[i] = at[p.Name]
			}
			last := slices.MaxFunc(times, time.Time.Compare)
			if last.IsZero() {
				b.Fatalf("crawl %s: pods never seen running", id)
			}
			round = append(round, last.Sub(start))
		}
		b.Logf("round %d: each crawl's pods running %s", r+1, summary(round))
		took = append(took, round...)
		h.removePods()
	}
	b.ReportMetric(percentile(took, 0.5).Seconds(), "s-p50")
	b.ReportMetric(percentile(took, 0.99).Seconds(), "s-p99")
}

// allPVCsBound reports whether every PVC in the harness's namespace is bound.
func (h *harness) allPVCsBound() bool {
	pvcs, err := h.kube.CoreV1().PersistentVolumeClaims(h.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, p := range pvcs.Items {
		if p.Status.Phase != corev1.ClaimBound {
			return false
		}
	}
	return true
}

// removePods deletes every pod in the harness's namespace with no grace
// and waits until they are gone, keeping the PVCs, as a pause does.
func (h *harness) removePods() {
	h.t.Helper()
	ctx := context.Background()
	zero := int64(0)
	if err := h.kube.CoreV1().Pods(h.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.waitFor("pods gone from "+h.ns, 2*time.Minute, func() bool {
		pods, err := h.kube.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelCrawl})
		return err == nil && len(pods.Items) == 0
	})
}
