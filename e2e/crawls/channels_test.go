package crawls

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
)

// TestCrawlerChannels: the configured channels are listed; a workflow on
// an unknown channel is 404 crawler_not_found; one on "test" crawls to
// the end on crawler pods of the test image and pull policy, and its
// crawl records the channel and image (spec §8.5 items 1 and 2).
func TestCrawlerChannels(t *testing.T) {
	stack := sharedStack(t)
	c := newClient(t, stack)

	channels := c.Object("GET", c.Org("/crawlconfigs/crawler-channels"), nil, 200)
	got, _ := json.Marshal(channels)
	want := `{"channels":[{"id":"default","image":"webrecorder/browsertrix-crawler:latest","imagePullPolicy":null},` +
		`{"id":"test","image":"` + testChannelImage + `","imagePullPolicy":"IfNotPresent"},` +
		`{"id":"legacy","image":"webrecorder/browsertrix-crawler:0.11.2","imagePullPolicy":"IfNotPresent"}]}`
	if string(got) != want {
		t.Fatalf("channels %s, want %s", got, want)
	}

	body := func(channel string) map[string]any {
		return map[string]any{"name": "on " + channel, "runNow": true, "crawlerChannel": channel,
			"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/?sim-pages=15&sim-page-ms=1000"}}}}
	}
	nope, _ := json.Marshal(body("nope"))
	code, data := c.Send("POST", c.Org("/crawlconfigs/"), bytes.NewReader(nope), "application/json")
	var refused struct{ Detail string }
	if err := json.Unmarshal(data, &refused); err != nil || code != 404 || refused.Detail != "crawler_not_found" {
		t.Fatalf("unknown channel: %d %s", code, data)
	}

	id, _ := c.Object("POST", c.Org("/crawlconfigs/"), body("test"), 200)["run_now_job"].(string)
	if id == "" {
		t.Fatal("no crawl started")
	}
	ns := stack.Config.GetString("crawler_namespace")
	var pod *corev1.Pod
	e2etest.WaitFor(t, time.Minute, "the crawler pod of "+id, func() (bool, error) {
		p, err := stack.Env.Client.CoreV1().Pods(ns).Get(t.Context(), k8s.CrawlerName(id, 0), metav1.GetOptions{})
		pod = p
		return err == nil, err
	})
	if ctr := pod.Spec.Containers[0]; ctr.Image != testChannelImage || ctr.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("crawler pod runs %s (%s), want %s (IfNotPresent)", ctr.Image, ctr.ImagePullPolicy, testChannelImage)
	}
	crawl := c.waitCrawl(id)
	if crawl["state"] != "complete" || crawl["crawlerChannel"] != "test" || crawl["image"] != testChannelImage {
		t.Fatalf("crawl: state %v, channel %v, image %v", crawl["state"], crawl["crawlerChannel"], crawl["image"])
	}
}
