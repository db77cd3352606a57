package operator

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// Stop reasons (status.stopReason), upstream's values: why a crawl is
// stopping or pausing.
const (
	reasonStoppedByUser = "stopped_by_user"
	reasonTimeLimit     = "time-limit"
	reasonSizeLimit     = "size-limit"
	reasonPaused        = "paused"
	reasonPauseExpired  = "stopped_pause_expired"
)

// annotationAutoPause records on the CrawlJob why the operator paused it
// itself, as "<pausedAt> <reason>": the reason names the paused state,
// and must outlive the pass that asked for the pause (whose status write
// may be lost). It applies while spec.pausedAt is still that time, so a
// later pause by the user is a plain one.
const annotationAutoPause = "trawler.dev/auto-pause"

// pauseReason is why the crawl is asked to pause: a quota, when the
// operator paused it automatically, or its user.
func pauseReason(cj *trawlerv1.CrawlJob) string {
	at, reason, ok := strings.Cut(cj.Annotations[annotationAutoPause], " ")
	if ok && at == cj.Spec.PausedAt && isQuotaPause(reason) {
		return reason
	}
	return reasonPaused
}

// isQuotaPause reports whether reason is one of the automatic pauses (the
// quotas' and a read-only org's), whose reasons are also the names of
// their paused states.
func isQuotaPause(reason string) bool {
	return reason == store.StatePausedTimeQuota || reason == store.StatePausedStorageQuota ||
		reason == store.StatePausedOrgReadOnly
}

// isPauseReason reports whether reason pauses the crawl, by its user or by
// a quota.
func isPauseReason(reason string) bool { return reason == reasonPaused || isQuotaPause(reason) }

// pausedState is the state a crawl pausing for reason reaches once its
// crawlers have exited.
func pausedState(reason string) string {
	if isQuotaPause(reason) {
		return reason
	}
	return store.StatePaused
}

// defaultPausedCrawlLimit is upstream's PAUSED_CRAWL_LIMIT_MINUTES
// default, for a Config that sets none.
const defaultPausedCrawlLimit = 7 * 24 * time.Hour

// statusInterrupted is the :status of a crawler that paused: it uploaded
// what it had and exited 0 (a 0.11 crawler writes it too, when a signal
// interrupts it, and then exits 11 to be restarted).
const statusInterrupted = "interrupted"

// pauseTime is spec.pausedAt, zero when the crawl is not asked to pause
// (or the value is not a time).
func pauseTime(cj *trawlerv1.CrawlJob) time.Time {
	if cj.Spec.PausedAt == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, cj.Spec.PausedAt)
	if err != nil {
		return time.Time{}
	}
	return t
}

// isPaused says the crawl is paused and stays so: asked to pause, and
// already in a paused state. Its crawler pods are not rendered then.
func isPaused(cj *trawlerv1.CrawlJob, reaches string) bool {
	return !pauseTime(cj).IsZero() && store.IsPaused(reaches)
}

// endPaused ends a paused crawl that its user stopped (partial_complete,
// the baseline's name for upstream's stopped_by_user) or that stayed
// paused past the limit (stopped_pause_expired); otherwise it asks to
// look again at the expiry. Both keep the files: the pause upload made
// them before the crawl reached paused.
func (p *plan) endPaused(cj *trawlerv1.CrawlJob, o observed, cfg Config) {
	if !isPaused(cj, p.Reaches) {
		return
	}
	limit := cfg.PausedCrawlLimit
	if limit <= 0 {
		limit = defaultPausedCrawlLimit
	}
	expiry := pauseTime(cj).Add(limit)
	switch {
	case !o.Now.Before(expiry):
		p.StopReason = reasonPauseExpired
		p.move(transition{To: store.StateStoppedPauseExpired, From: store.PausedStates, Finished: true})
	case cj.Spec.Stopping:
		p.StopReason = reasonStoppedByUser
		p.move(transition{To: store.StatePartialComplete, From: store.PausedStates, Finished: true})
	default:
		p.lookAgainIn(expiry.Sub(o.Now))
	}
}

// uncharged moves the time limit's start past the time the crawl spent
// paused, on the pass whose crawler runs again after a pause: paused time
// does not count toward the limit. It acts only on the edge where the
// CrawlerActive condition turns true, which the same status write
// records, so a pass repeated on the same status shifts nothing twice.
func (p *plan) uncharged(st trawlerv1.CrawlJobStatus, active bool, now time.Time) {
	if !active || !store.IsPaused(p.Reaches) || p.RunningSince == nil || st.LastActiveTime == nil ||
		meta.IsStatusConditionTrue(st.Conditions, CondCrawlerActive) {
		return
	}
	gap := now.Sub(st.LastActiveTime.Time)
	if gap <= 0 {
		return
	}
	t := metav1.NewTime(p.RunningSince.Add(gap).Truncate(time.Second))
	p.RunningSince = &t
}

// crawlersPaused reports whether every crawler of a crawl asked to pause
// has paused (or failed): their pods may be gone before the store has
// recorded the pause, which is no reason to wait for capacity.
func crawlersPaused(cj *trawlerv1.CrawlJob, r *redisState, scale int32) bool {
	if pauseTime(cj).IsZero() || r == nil || !r.Reachable || scale == 0 {
		return false
	}
	for i := range int(scale) {
		if s := r.Statuses[k8s.CrawlerName(cj.Spec.ID, i)]; s != statusInterrupted && s != "failed" {
			return false
		}
	}
	return true
}

// forgotten are the instances of a paused crawl whose pod is gone and
// whose :status still says interrupted. Left there, the status would
// count toward the next pause before the crawler started on resume had
// paused again (its pod would go with its pages not uploaded).
func forgotten(cj *trawlerv1.CrawlJob, o observed, scale int32) []string {
	if o.Redis == nil {
		return nil
	}
	var names []string
	for i := range int(scale) {
		name := k8s.CrawlerName(cj.Spec.ID, i)
		if o.Crawlers[i] == nil && o.Redis.Statuses[name] == statusInterrupted {
			names = append(names, name)
		}
	}
	return names
}

// stalePaused reports whether crawler pod i paused and exited although
// the crawl is no longer pausing (it was resumed before it reached
// paused): a Succeeded pod is never restarted, so it is deleted and
// created again.
func stalePaused(cj *trawlerv1.CrawlJob, o observed, i int, stopping bool) bool {
	pod := o.Crawlers[i]
	if pod == nil || pod.Status.Phase != corev1.PodSucceeded || stopping || !pauseTime(cj).IsZero() ||
		o.Redis == nil || !o.Redis.Reachable {
		return false
	}
	return o.Redis.Statuses[k8s.CrawlerName(cj.Spec.ID, i)] == statusInterrupted
}

// pauseControl sets what the crawl's Redis must say about pausing:
// <id>:paused while pausing, and its removal once the crawl is paused or
// resumed, before any crawler starts again (a crawler that reads it at
// start pauses at once). The removal is asserted only while it matters:
// while paused, and until no instance's status says interrupted.
func (p *plan) pauseControl(cj *trawlerv1.CrawlJob, o observed, pausing bool) {
	p.Control.Paused = pausing
	if pausing {
		return
	}
	if store.IsPaused(p.Reaches) {
		p.Control.Unpause = true
		if store.IsPaused(cj.Status.State) {
			// Only once the store has recorded the pause: until then a
			// pass may still count these statuses toward it.
			p.Control.Forget = forgotten(cj, o, p.Scale)
		}
		return
	}
	if !pauseTime(cj).IsZero() {
		p.Control.Unpause = true
		return
	}
	if o.Redis != nil {
		for _, s := range o.Redis.Statuses {
			if s == statusInterrupted {
				p.Control.Unpause = true
				return
			}
		}
	}
}
