package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/k8s"
)

// TestCrawlerPodRunsItsChannel: the crawler pod runs the image of the
// job's channel with the channel's pull policy, or the crawler default
// when the channel sets none; no channel, and a channel no longer
// configured, run the default channel; without channels it is
// CrawlerImage.
func TestCrawlerPodRunsItsChannel(t *testing.T) {
	cfg := testConfig()
	cfg.CrawlerChannels = k8s.CrawlerChannels{
		{ID: "default", Image: "crawler:1.5", Protocol: k8s.ProtocolV1},
		{ID: "test", Image: "crawler:edge", ImagePullPolicy: "IfNotPresent", Protocol: k8s.ProtocolV011},
	}
	for _, tc := range []struct {
		channel, image string
		policy         corev1.PullPolicy
	}{
		{"test", "crawler:edge", corev1.PullIfNotPresent},
		{"default", "crawler:1.5", corev1.PullAlways},
		{"", "crawler:1.5", corev1.PullAlways},
		{"retired", "crawler:1.5", corev1.PullAlways},
	} {
		cj := newJob(1)
		cj.Spec.CrawlerChannel = tc.channel
		c := crawlerPod(cj, cfg, 0).Spec.Containers[0]
		if c.Image != tc.image || c.ImagePullPolicy != tc.policy {
			t.Errorf("channel %q: image %s (%s), want %s (%s)", tc.channel, c.Image, c.ImagePullPolicy, tc.image, tc.policy)
		}
	}

	cfg.CrawlerChannels = nil
	cj := newJob(1)
	cj.Spec.CrawlerChannel = "test"
	if c := crawlerPod(cj, cfg, 0).Spec.Containers[0]; c.Image != cfg.CrawlerImage || string(c.ImagePullPolicy) != cfg.CrawlerPullPolicy {
		t.Errorf("without channels: %s (%s)", c.Image, c.ImagePullPolicy)
	}
}
