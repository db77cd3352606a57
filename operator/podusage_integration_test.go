package operator_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// apiCounter counts requests: writes (not GET or watch), and any to
// metrics.k8s.io.
type apiCounter struct {
	next http.RoundTripper
	c    *apiCounts
}

type apiCounts struct {
	mu      sync.Mutex
	writes  int
	metrics []string
}

func (a apiCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	a.c.mu.Lock()
	if r.Method != http.MethodGet {
		a.c.writes++
	}
	if strings.HasPrefix(r.URL.Path, "/apis/metrics.k8s.io") {
		a.c.metrics = append(a.c.metrics, r.Method+" "+r.URL.Path)
	}
	a.c.mu.Unlock()
	return a.next.RoundTrip(r)
}

func (c *apiCounts) get() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, append([]string(nil), c.metrics...)
}

// TestUsageWithoutMetricsAPI: the sandbox's apiserver serves no
// metrics.k8s.io. An operator given a metrics client and a short interval
// looks for the API once, logs that once, never lists, reports no usage
// and writes nothing while its crawls run steadily.
func TestUsageWithoutMetricsAPI(t *testing.T) {
	h := newHarness(t)
	cfg := stubConfig(h.config(), h.env.Redis.Addr())
	cfg.MetricsInterval = 100 * time.Millisecond
	rc := operator.RateLimitedRestConfig(h.env.Config())
	counts := &apiCounts{}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return apiCounter{next: rt, c: counts} }
	deps := h.deps()
	deps.Kube, deps.Trawler, deps.Metrics = kubernetes.NewForConfigOrDie(rc), versioned.NewForConfigOrDie(rc),
		metricsclient.NewForConfigOrDie(rc)
	h.startOperatorWith(cfg, deps)

	jobs := h.benchJobs(3)
	h.createJobs(jobs)
	h.waitFor("every crawl running", time.Minute, func() bool {
		list, err := h.trawler.TrawlerV1().CrawlJobs(h.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != len(jobs) {
			return false
		}
		for _, j := range list.Items {
			if j.Status.State != store.StateRunning || len(j.Status.Pods) < 2 {
				return false
			}
			// The pod view is progress, written within the stats interval.
			for _, p := range j.Status.Pods {
				if p.Phase != string(corev1.PodRunning) {
					return false
				}
			}
		}
		return true
	})
	time.Sleep(time.Second)

	// 30 metrics rounds and the informers' resync (10 s) make no request
	// to write anything.
	before, _ := counts.get()
	time.Sleep(12 * time.Second)
	after, metrics := counts.get()
	if after != before {
		t.Errorf("%d writes while nothing changed", after-before)
	}
	if len(metrics) != 1 || metrics[0] != "GET /apis/metrics.k8s.io/v1beta1" {
		t.Errorf("metrics.k8s.io requests %q, want the one look-up at start", metrics)
	}
	var notServed int
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, "pod metrics") {
			if strings.Contains(l, "not served") && strings.Contains(l, "level=INFO") && !strings.Contains(l, "err=") {
				notServed++
			} else {
				t.Errorf("unexpected log line %q", l)
			}
		}
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Errorf("log line %q", l)
		}
	}
	if notServed != 1 {
		t.Errorf("%d lines saying metrics are not served, want 1:\n%s", notServed, h.logs.String())
	}
	for _, j := range jobs {
		got, err := h.job(j.Spec.ID)
		if err != nil {
			t.Fatal(err)
		}
		for k, p := range got.Status.Pods {
			if p.Usage != nil {
				t.Errorf("%s pod %s usage %v without metrics", j.Spec.ID, k, p.Usage)
			}
		}
		for k, p := range h.crawl(j.Spec.ID).Pods {
			if p.CPUUsedMilli != 0 || p.MemoryUsed != 0 {
				t.Errorf("%s pod %s usage %+v in the crawl document without metrics", j.Spec.ID, k, p)
			}
		}
	}
}
