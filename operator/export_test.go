package operator

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// DefaultTestConfig is testConfig for the operator_test tests.
func DefaultTestConfig() Config { return testConfig() }

// RateLimitedRestConfig returns a copy of base with the Kubernetes client
// rate limits main sets by default (operator.kube_qps 200 and
// operator.kube_burst 400), for the clients tests give the operator:
// client-go's defaults (5/10) would make creating a hundred crawls take a
// minute.
func RateLimitedRestConfig(base *rest.Config) *rest.Config {
	rc := rest.CopyConfig(base)
	rc.QPS, rc.Burst = 200, 400
	rc.RateLimiter = nil
	return rc
}

// NewCrawlChildren renders every child a new crawl gets (its PVCs, its
// Redis pod and its crawler pods) as the operator creates them, in name
// order, so a benchmark can create the same objects without it.
func NewCrawlChildren(cj *trawlerv1.CrawlJob, cfg Config) ([]*corev1.PersistentVolumeClaim, []*corev1.Pod) {
	plan := childPlan{RedisPVC: true, RedisPod: true}
	for i := range int(cj.Spec.Scale) {
		plan.CrawlerPVCs = append(plan.CrawlerPVCs, i)
		plan.CrawlerPods = append(plan.CrawlerPods, i)
	}
	ch := desiredChildren(cj, cfg, plan)
	return byName(ch.PVCs), byName(ch.Pods)
}

// BrowserPod is the profile browser pod the operator creates for pj, so
// the chart's egress policy can be checked against its labels.
func BrowserPod(pj *trawlerv1.ProfileJob, cfg Config) *corev1.Pod { return browserPod(pj, cfg) }

// FirstStatus is the status the operator writes in its first pass over a
// new CrawlJob whose config map exists, for a benchmark that writes it
// without the operator.
func FirstStatus(cj *trawlerv1.CrawlJob, cfg Config, now time.Time) trawlerv1.CrawlJobStatus {
	o := observed{Now: now, Crawlers: map[int]*corev1.Pod{},
		PVCs: map[string]*corev1.PersistentVolumeClaim{}, ConfigMapOK: true, OrgSlotFree: true}
	return crawlStatus(cj, decide(cj, o, cfg), o)
}

// byName lists a map's values in key order.
func byName[T any](m map[string]T) []T {
	out := make([]T, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[name])
	}
	return out
}

// SyncBuffer is a goroutine-safe log sink. It is exported from this test
// file so the package's own tests and its operator_test tests share one.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
