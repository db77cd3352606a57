package operator

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// fatalExitCode is the code browsertrix-crawler exits with on
// logger.fatal: bad arguments, an include or exclude regex Node cannot
// compile, a malformed webhook URL... Kubernetes restarts the container,
// which fails the same way again, forever (crawler protocol §3.3).
const fatalExitCode = 17

// crashLoop tells why the crawl's crawlers cannot get anywhere, or ""
// while they can: a crawler exited with the crawler's fatal code, or the
// crawler containers restarted cfg.CrashLoopRestarts times, together,
// without a page done in between. Neither rule applies to a crawl asked
// to stop (stopping): its crawlers exit with the fatal code when they
// have nothing to upload, and their final statuses, not their exits,
// decide how it ends (upstream's rule). It also returns the restarts
// counted when the crawl last got a page done
// (status.restartsAtProgress, of which st holds the last value).
func crashLoop(st trawlerv1.CrawlJobStatus, o observed, cfg Config, stopping bool) (reason string, restartsAtProgress int32) {
	var restarts int32
	fatal := ""
	for _, i := range slices.Sorted(maps.Keys(o.Crawlers)) {
		p := o.Crawlers[i]
		cs := crawlerContainer(p)
		if cs == nil {
			continue
		}
		restarts += cs.RestartCount
		// A crawler stopped alone (scaled down) with nothing done writes
		// "failed" before its fatal exit: that is no crash either.
		if fatal == "" && exitedWith(cs, fatalExitCode) && !wroteFailed(o.Redis, p.Name) {
			fatal = fmt.Sprintf("crawler %s exited with the crawler's fatal code %d; it would only fail again", p.Name, fatalExitCode)
		}
	}
	restartsAtProgress = st.RestartsAtProgress
	progressed := o.Redis != nil && o.Redis.Reachable && o.Redis.PagesDone > st.PagesDone
	if progressed || restarts < restartsAtProgress {
		// Pages got done, or pods were recreated (their counts start again).
		restartsAtProgress = restarts
	}
	switch since := restarts - restartsAtProgress; {
	case stopping:
		return "", restartsAtProgress
	case fatal != "":
		return fatal, restartsAtProgress
	case cfg.CrashLoopRestarts > 0 && since >= int32(cfg.CrashLoopRestarts):
		return fmt.Sprintf("crawler containers restarted %d times without a page done; the crawl is getting nowhere", since), restartsAtProgress
	}
	return "", restartsAtProgress
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
