package operator_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/store"
)

// TestCrawlRunsOnItsChannel: a crawl on channel "test" gets crawler pods
// of that channel's image and pull policy and crawls to the end on them;
// a crawl whose channel has left the configuration runs the default
// channel instead of being stranded (spec §5.2, §8.5 item 2).
func TestCrawlRunsOnItsChannel(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	cfg := h.config()
	testImage := crawlersim.Image + ":edge"
	cfg.CrawlerChannels = k8s.CrawlerChannels{
		{ID: k8s.DefaultChannel, Image: crawlersim.Image, Protocol: k8s.ProtocolV011},
		{ID: "test", Image: testImage, ImagePullPolicy: "IfNotPresent", Protocol: k8s.ProtocolV011},
	}
	cfg.CrawlerPullPolicy = "Never"
	h.startOperator(cfg)

	onTest := h.startCrawl(crawlOpts{scale: 2, seed: "https://example.com/?sim-pages=12&sim-page-ms=100",
		spec: func(s *trawlerv1.CrawlJobSpec) { s.CrawlerChannel = "test" }})
	retired := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=6&sim-page-ms=100",
		spec: func(s *trawlerv1.CrawlJobSpec) { s.CrawlerChannel = "retired" }})

	for id, want := range map[string]struct {
		image  string
		policy corev1.PullPolicy
		pods   int
	}{onTest: {testImage, corev1.PullIfNotPresent, 2}, retired: {crawlersim.Image, corev1.PullNever, 1}} {
		var crawlers []corev1.Pod
		h.waitFor("crawler pods of "+id, 30*time.Second, func() bool {
			crawlers = crawlers[:0]
			for _, p := range h.pods(id) {
				if p.Labels[k8s.LabelRole] == k8s.RoleCrawler {
					crawlers = append(crawlers, p)
				}
			}
			return len(crawlers) == want.pods
		})
		for _, p := range crawlers {
			if c := p.Spec.Containers[0]; c.Image != want.image || c.ImagePullPolicy != want.policy {
				t.Errorf("%s: image %s (%s), want %s (%s)", p.Name, c.Image, c.ImagePullPolicy, want.image, want.policy)
			}
		}
	}
	for _, id := range []string{onTest, retired} {
		if got := h.waitState(id, 90*time.Second, store.StateComplete, store.StateFailed, store.StateCanceled); got != store.StateComplete {
			t.Errorf("crawl %s ended %s", id, got)
		}
	}
}
