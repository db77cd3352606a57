package operator

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// fatalExitCode is the code browsertrix-crawler exits with on
// logger.fatal: bad arguments, an include or exclude regex Node cannot
// compile, a malformed webhook URL... Kubernetes restarts the container,
// which fails the same way again, forever (crawler protocol §3.3).
const fatalExitCode = 17

// crashes is what the crawler containers' restarts tell decide.
type crashes struct {
	// Reason is why the crawl must fail, "" while it need not.
	Reason string
	// AtProgress is the restarts counted when the crawl last got a page
	// done (status.restartsAtProgress).
	AtProgress int32
	// Total counts every restart over the crawl's life
	// (status.crawlerRestarts).
	Total int32
}

// crashLoop tells why the crawl's crawlers cannot get anywhere, or ""
// while they can: a crawler exited with the crawler's fatal code, or the
// crawler containers restarted cfg.CrashLoopRestarts times, together,
// without a page done in between. Neither rule applies to a crawl asked
// to stop (stopping): its crawlers exit with the fatal code when they
// have nothing to upload, and their final statuses, not their exits,
// decide how it ends (upstream's rule). A crawl whose crawlers got a
// page or so done between crashes would pass both for hours, so the
// restarts are also counted over the crawl's life, progress or not,
// stopping or not: at cfg.MaxCrawlerRestarts the crawl fails too. st is
// the status last written.
func crashLoop(st trawlerv1.CrawlJobStatus, o observed, cfg Config, stopping bool) crashes {
	var restarts int32
	fatal := ""
	c := crashes{AtProgress: st.RestartsAtProgress, Total: st.CrawlerRestarts}
	for _, i := range slices.Sorted(maps.Keys(o.Crawlers)) {
		p := o.Crawlers[i]
		cs := crawlerContainer(p)
		if cs == nil {
			continue
		}
		restarts += cs.RestartCount
		c.Total += restartsSince(st, i, cs.RestartCount)
		// A crawler stopped alone (scaled down) with nothing done writes
		// "failed" before its fatal exit: that is no crash either.
		if fatal == "" && exitedWith(cs, fatalExitCode) && !wroteFailed(o.Redis, p.Name) {
			fatal = fmt.Sprintf("crawler %s exited with the crawler's fatal code %d; it would only fail again", p.Name, fatalExitCode)
		}
	}
	progressed := o.Redis != nil && o.Redis.Reachable && o.Redis.PagesDone > st.PagesDone
	if progressed || restarts < c.AtProgress {
		// Pages got done, or pods were recreated (their counts start again).
		c.AtProgress = restarts
	}
	switch since := restarts - c.AtProgress; {
	case fatal != "" && !stopping:
		c.Reason = fatal
	case cfg.CrashLoopRestarts > 0 && since >= int32(cfg.CrashLoopRestarts) && !stopping:
		c.Reason = fmt.Sprintf("crawler containers restarted %d times without a page done; the crawl is getting nowhere", since)
	case cfg.MaxCrawlerRestarts > 0 && c.Total >= int32(cfg.MaxCrawlerRestarts):
		c.Reason = fmt.Sprintf("crawler containers restarted %d times in all, the most operator.max_crawler_restarts allows; the crawl keeps crashing", c.Total)
	}
	return c
}

// restartsSince is how many times crawler pod i's container restarted
// since the status last written, which holds its count then. A count
// below that one is a pod recreated since: all its restarts are new.
// (Every change of the total is written at once, with the pods' counts,
// so the two never disagree.)
func restartsSince(st trawlerv1.CrawlJobStatus, i int, count int32) int32 {
	prev := st.Pods[strconv.Itoa(i)].Restarts
	if count < prev {
		return count
	}
	return count - prev
}

// crawlerContainer is the status of a pod's crawler container (its first),
// nil before the kubelet reports one.
func crawlerContainer(p *corev1.Pod) *corev1.ContainerStatus {
	if len(p.Spec.Containers) == 0 {
		return nil
	}
	name := p.Spec.Containers[0].Name
	for i := range p.Status.ContainerStatuses {
		if cs := &p.Status.ContainerStatuses[i]; cs.Name == name {
			return cs
		}
	}
	return nil
}

// lastTermination is how the container's current run ended, or else its
// previous one (nil when neither has).
func lastTermination(cs *corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if cs.State.Terminated != nil {
		return cs.State.Terminated
	}
	return cs.LastTerminationState.Terminated
}

// exitedWith tells whether the container's current or last run ended
// with code.
func exitedWith(cs *corev1.ContainerStatus, code int32) bool {
	for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if t != nil && t.ExitCode == code {
			return true
		}
	}
	return false
}

// wroteFailed tells whether a crawler instance wrote its final "failed"
// to Redis.
func wroteFailed(r *redisState, instance string) bool {
	return r != nil && r.Statuses[instance] == "failed"
}
