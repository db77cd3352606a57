package operator

import (
	"maps"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// teardown plans the children of a finished or deleted crawl: crawler
// pods go first; Redis and the PVCs stay until they are gone; Redis stays
// until the post-crawl tasks have drained it, and a Redis pod paused when
// idle or lost is brought back on its PVC for that; then everything goes.
func (p *plan) teardown(cj *trawlerv1.CrawlJob, o observed) {
	p.Teardown = true
	crawlersLeft := len(o.Crawlers) > 0
	tasksDone := meta.IsStatusConditionTrue(cj.Status.Conditions, CondFinishTasks) || o.FinishTasksDone
	keepRedis := redisHeld(cj, o) && (crawlersLeft || !tasksDone)
	p.Children = childPlan{RedisPod: keepRedis, RedisPVC: keepRedis}
	if crawlersLeft {
		p.Children.RedisPVC = true
		for name := range o.PVCs {
			if i, ok := k8s.CrawlerIndex(cj.Spec.ID, name); ok {
				p.Children.CrawlerPVCs = append(p.Children.CrawlerPVCs, i)
			}
		}
		sort.Ints(p.Children.CrawlerPVCs)
	}
	if failureUnreported(cj.Status, o) {
		// Their logs go with them: keep the crawler pods there are until
		// their last lines are in the crawl's errors.
		p.Children.CrawlerPods = slices.Sorted(maps.Keys(o.Crawlers))
	}
}

// redisHeld tells whether the crawl has a Redis whose data the post-crawl
// tasks must drain: its pod, or its PVC (not being deleted) on which a
// paused or lost pod can come back.
func redisHeld(cj *trawlerv1.CrawlJob, o observed) bool {
	pvc := o.PVCs[k8s.RedisName(cj.Spec.ID)]
	return o.RedisPod != nil || (pvc != nil && pvc.DeletionTimestamp == nil)
}

// failureUnreported tells whether the operator failed the crawl and the
// report of why is not stored yet.
func failureUnreported(st trawlerv1.CrawlJobStatus, o observed) bool {
	return st.FailReason != "" && !o.FailureReported && !meta.IsStatusConditionTrue(st.Conditions, CondFailureReported)
}
