package operator

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// crawlerActivity is whether a crawler pod runs and what follows for the
// crawl's Redis, which runs only while crawlers do and a while after.
type crawlerActivity struct {
	// Active is set while a crawler pod runs (the CrawlerActive
	// condition).
	Active bool
	// InitRedis says whether the crawl's Redis pod should run.
	InitRedis bool
	// LastActiveTime is when a crawler last stopped running; the Redis
	// idle timer starts there.
	LastActiveTime *metav1.Time
}

// trackActivity works out the crawl's activity. It changes only on an
// edge, so a steady crawl causes no status writes. A crawl resuming from a
// pause gets its Redis back with its crawler pods, not after they run:
// the crawlers need it, and the resume would otherwise wait for one pod
// start after the other.
func (p *plan) trackActivity(st trawlerv1.CrawlJobStatus, o observed, cfg Config, active, resuming bool) {
	a := &crawlerActivity{Active: active, InitRedis: st.InitRedis, LastActiveTime: st.LastActiveTime}
	p.Activity = a
	if active || resuming {
		a.InitRedis = true
		return
	}
	if meta.IsStatusConditionTrue(st.Conditions, CondCrawlerActive) {
		t := metav1.NewTime(o.Now.Truncate(time.Second))
		a.LastActiveTime = &t
	}
	if a.InitRedis && a.LastActiveTime != nil {
		idle := a.LastActiveTime.Add(cfg.RedisIdle)
		if !o.Now.Before(idle) {
			a.InitRedis = false
		} else {
			p.lookAgainIn(idle.Sub(o.Now))
		}
	}
}

// crawlerActive reports whether any crawler pod runs or has run to
// completion (its final state is in Redis). Pending pods, even while
// their containers are created, do not count (upstream #2007).
func crawlerActive(pods map[int]*corev1.Pod) bool {
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
			return true
		}
	}
	return false
}

// schedulingMessage returns the scheduler's reason for the lowest
// unschedulable crawler pod, so users see why a crawl waits.
func schedulingMessage(pods map[int]*corev1.Pod) string {
	for _, i := range slices.Sorted(maps.Keys(pods)) {
		for _, c := range pods[i].Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
				return c.Message
			}
		}
	}
	return ""
}
