package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// TestProfileBrowserPodAndExpiry runs one browser pod per ProfileJob,
// keeps it while pinged and removes the job once it expires.
func TestProfileBrowserPodAndExpiry(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	h.startOperator(h.config())
	ctx := context.Background()
	id := "prf-" + strings.ToLower(h.ns[len(h.ns)-5:]) + "abcde"
	expire := metav1.NewTime(time.Now().Add(4 * time.Second))
	err := h.launch.LaunchProfileBrowser(ctx, k8s.ProfileRequest{Spec: trawlerv1.ProfileJobSpec{
		ID: id, OID: h.org.String(), UserID: "u1", StorageName: "default", StartURL: "https://example.com/",
		VNCPassword: "secret", ExpireTime: &expire}})
	if err != nil {
		t.Fatal(err)
	}
	name := k8s.BrowserPodName(id)
	var pod *corev1.Pod
	h.waitFor("browser pod", 10*time.Second, func() bool {
		p, err := h.kube.CoreV1().Pods(h.ns).Get(ctx, name, metav1.GetOptions{})
		pod = p
		return err == nil
	})
	c := pod.Spec.Containers[0]
	if pod.Spec.Hostname != name || pod.Spec.Subdomain != "browser" || c.Command[0] != "create-login-profile" ||
		c.Command[len(c.Command)-1] != "https://example.com/" || pod.Labels[k8s.LabelBrowser] != id {
		t.Errorf("browser pod %+v %v", pod.Spec, c.Command)
	}
	if err := h.launch.PingProfileBrowser(ctx, id); err != nil {
		t.Fatal(err)
	}
	pinged := time.Now()
	h.waitFor("profile job removed after expiry", 60*time.Second, func() bool {
		_, err := h.launch.GetProfileBrowser(ctx, id)
		return err != nil
	})
	if time.Since(pinged) < 20*time.Second {
		t.Errorf("removed %v after a ping that extends it by %v", time.Since(pinged), k8s.ProfileBrowserTTL)
	}
}

// TestNewCrawlPreemptsHigherInstances fills the node with a two-instance
// crawl; a new crawl's instance 0 (priority 0) preempts the other crawl's
// instance 1 (priority -1), which waits and both crawls still complete.
func TestNewCrawlPreemptsHigherInstances(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	// A sandbox node has 8 CPUs: two of these fit, a third does not.
	big := resource.MustParse("3")
	cfg.CrawlerCPU = &big
	h.startOperator(cfg)
	first := h.startCrawl(crawlOpts{scale: 2, seed: "https://example.com/?sim-pages=300&sim-page-ms=1500"})
	h.waitFor("both instances running", 30*time.Second, func() bool {
		pods := h.pods(first)
		return pods[k8s.CrawlerName(first, 0)].Status.Phase == corev1.PodRunning &&
			pods[k8s.CrawlerName(first, 1)].Status.Phase == corev1.PodRunning
	})
	second := h.startCrawl(crawlOpts{scale: 1})
	h.waitFor("the new crawl's instance 0 to run", 60*time.Second, func() bool {
		return h.pods(second)[k8s.CrawlerName(second, 0)].Status.Phase == corev1.PodRunning
	})
	if p := h.pods(first)[k8s.CrawlerName(first, 1)]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
		t.Errorf("the other crawl's instance 1 was not preempted: %s", p.Status.Phase)
	}
	if p := h.pods(first)[k8s.CrawlerName(first, 0)]; p.Status.Phase != corev1.PodRunning {
		t.Errorf("the other crawl's instance 0 was preempted: %s", p.Status.Phase)
	}
	if final := h.waitState(second, 60*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Errorf("new crawl ended %s", final)
	}
	if err := h.launch.ScaleCrawl(context.Background(), first, 1); err != nil {
		t.Fatal(err)
	}
	if final := h.waitState(first, 120*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Errorf("preempted crawl ended %s", final)
	}
}
