package operator

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// observed is what one sync learned about a CrawlJob's world: its
// children, its config, its org's gate, its Redis and its background
// tasks, then the store's answers to the plan.
type observed struct {
	Now time.Time
	// Crawlers are the crawler pods by instance index (terminating ones
	// included); RedisPod is nil when absent.
	Crawlers map[int]*corev1.Pod
	RedisPod *corev1.Pod
	PVCs     map[string]*corev1.PersistentVolumeClaim
	// ConfigMapOK is false when spec.configMap is missing or lacks the
	// crawl config key.
	ConfigMapOK bool
	// OrgSlotFree is the org concurrency gate (meaningful while starting).
	OrgSlotFree bool
	// QuotaSkip is the skipped state the org's quotas end the crawl in
	// at its first sync, "" when it may start (skipState).
	QuotaSkip string
	// Usage is the latest measured usage of the crawl's pods by pod name
	// (empty without metrics).
	Usage map[string]podUsage
	// Redis is the poller's last state, nil when none polled yet.
	Redis *redisState
	// ExecClock is when the crawl's crawler seconds were last counted,
	// nil while the operator does not know (execCharges).
	ExecClock *time.Time
	// ExecQuotaFreeAt is when the crawl's org was last read and had no
	// quota to enforce (execAnswer.QuotaFreeAt); zero when it had one, or
	// the last count read no org.
	ExecQuotaFreeAt time.Time
	// Exec is the store's answer to the plan's accounting tick, nil when
	// there was none or it failed. The sync learns it after decide.
	Exec *execAnswer
	// FinishTasksDone is true when the post-crawl tasks just completed.
	FinishTasksDone bool
	// StartedNotified is true when the crawlStarted notification was just
	// stored.
	StartedNotified bool
	// FailureReported is true when the failure report (see
	// CondFailureReported) was just stored.
	FailureReported bool
	// Answers are the store's answers to the plan's transitions, in
	// order: fewer than the transitions when it refused one (the crawl
	// is then not in the state the later ones start from) or failed. The
	// sync learns them after decide, which never reads them.
	Answers []transitionResult
}

// transition is a state change to attempt as a compare-and-set on the
// crawl document.
type transition struct {
	To       string
	From     []string
	Finished bool
	Stats    *store.CrawlStats
}

// waitingCapacityFrom are the states a crawl leaves for waiting_capacity
// when its crawlers or its Redis are not there: a crawl already waiting
// (for capacity or for its org's limit) stays as it is.
var waitingCapacityFrom = slices.Concat([]string{store.StateStarting}, store.RunningStates)

// decide is the whole reconcile logic of a CrawlJob, as a pure function of
// the job and what was observed: it admits the crawl or holds it, tears a
// finished one down, and otherwise follows its crawlers and its Redis.
func decide(cj *trawlerv1.CrawlJob, o observed, cfg Config) plan {
	st := cj.Status
	p := newPlan(st)
	p.CrawlerImage = cfg.crawlerChannel(cj.Spec.CrawlerChannel).Image
	p.Problems = validateSpec(cj, cfg, o.ConfigMapOK)

	if cj.DeletionTimestamp != nil && st.Finished == nil {
		// Deleting a job cancels its crawl at once (a crawl whose document
		// is gone or already final adopts that), and tears it down.
		p.move(transition{To: store.StateCanceled, From: store.ActiveStates, Finished: true})
		p.accountExec(cj, o, cfg)
		p.teardown(cj, o)
		p.fastCancel(cj, o, cfg)
		return p
	}
	if st.Finished != nil || store.IsFinished(p.Reaches) {
		p.teardown(cj, o)
		p.fastCancel(cj, o, cfg)
		return p
	}
	if st.State == "" && o.QuotaSkip != "" {
		// Over a quota before anything ran: no children, a failed state.
		p.move(transition{To: o.QuotaSkip, From: []string{store.StateStarting}, Finished: true})
		p.teardown(cj, o)
		return p
	}

	wanted := clampScale(cj.Spec.Scale, cfg.MaxCrawlScale)
	created := cj.CreationTimestamp.Time
	startingTooLong := o.Now.Sub(created) >= cfg.StartingTimeout

	if !o.ConfigMapOK && st.RunningSince == nil {
		// Without its config no crawler can start; give the API a moment to
		// create it, then fail the crawl as upstream does.
		if startingTooLong {
			p.move(transition{To: store.StateFailed, From: store.ActiveStates, Finished: true})
		} else {
			p.lookAgainIn(created.Add(cfg.StartingTimeout).Sub(o.Now))
		}
		return p
	}

	if gatedByOrgLimit(p.Reaches, st.RunningSince) {
		if !o.OrgSlotFree {
			if p.Reaches == store.StateStarting {
				p.move(transition{To: store.StateWaitingOrgLimit, From: []string{store.StateStarting}})
			}
			return p
		}
		if p.Reaches == store.StateWaitingOrgLimit {
			p.move(transition{To: store.StateStarting, From: []string{store.StateWaitingOrgLimit}})
		}
	}

	if p.Scale == 0 {
		// The first render scales up at once.
		p.Scale = wanted
	}
	p.endPaused(cj, o, cfg)
	restarting := cj.Spec.RestartTime != st.RestartTime
	if restarting && len(o.Crawlers) == 0 {
		// Every old pod is gone: record the restart as done and recreate.
		p.RestartRecorded = true
		restarting = false
	}

	active := crawlerActive(o.Crawlers)
	// A paused crawl's crawler pods still exiting are not a crawler
	// running again (the rule trackActivity is given below).
	p.uncharged(st, active && !isPaused(cj, p.Reaches), o.Now)
	reachable := o.Redis != nil && o.Redis.Reachable

	p.resolveScale(cj.Spec.ID, o, wanted)

	// A crawl asked to stop ends by its crawlers' final statuses
	// (running): one stopped before its first page writes "failed" and
	// exits with the fatal code, which is its outcome, not a crash.
	stopAsked := p.Stopping || cj.Spec.Stopping
	crashes := crashLoop(st, o, cfg, stopAsked)
	p.RestartsAtProgress, p.CrawlerRestarts = crashes.AtProgress, crashes.Total
	switch {
	case crashes.Reason != "":
		// The crawler pods stay until the reason and their last log lines
		// are in the crawl's errors (teardown).
		p.FailReason = crashes.Reason
		p.move(transition{To: store.StateFailed, From: store.ActiveStates, Finished: true, Stats: redisStats(o.Redis)})
	case !active && !crawlersPaused(cj, o.Redis, p.Scale):
		p.WaitingReason = schedulingMessage(o.Crawlers)
		if store.IsRunning(p.Reaches) || (p.Reaches == store.StateStarting && startingTooLong) {
			p.move(transition{To: store.StateWaitingCapacity, From: waitingCapacityFrom})
		} else if p.Reaches == store.StateStarting {
			p.lookAgainIn(created.Add(cfg.StartingTimeout).Sub(o.Now))
		}
	case !reachable:
		// A starting crawl's Redis comes up beside its crawlers: not
		// reachable yet is the normal start, not worth a status write of
		// its own (issue 28: at most 3 from create to running); a start
		// that hangs here moves to waiting_capacity after StartingTimeout.
		p.WaitingReason = "waiting for redis"
		if p.Reaches == store.StateStarting {
			p.WaitingReason = ""
		}
		since := o.Now
		if o.Redis != nil {
			since = o.Redis.Since
		}
		if (store.IsRunning(p.Reaches) && o.Now.Sub(since) >= cfg.RedisUnreachableGrace) ||
			(p.Reaches == store.StateStarting && startingTooLong) {
			p.move(transition{To: store.StateWaitingCapacity, From: waitingCapacityFrom})
		} else if store.IsRunning(p.Reaches) {
			p.lookAgainIn(since.Add(cfg.RedisUnreachableGrace).Sub(o.Now))
		} else if p.Reaches == store.StateStarting {
			p.lookAgainIn(created.Add(cfg.StartingTimeout).Sub(o.Now))
		}
	default:
		p.WaitingReason = ""
		if p.RunningSince == nil {
			t := metav1.NewTime(o.Now.Truncate(time.Second))
			p.RunningSince = &t
		}
		p.running(cj, o)
	}
	// After the pass's state changes: a paused crawl's crawlers are done
	// from the pass that pauses it, whose status says so (their pods go
	// then, and the Redis idle timer starts there, with no status write
	// of its own when they are gone).
	p.trackActivity(st, o, cfg, active && !isPaused(cj, p.Reaches), store.IsPaused(p.Reaches) && pauseTime(cj).IsZero())
	p.accountExec(cj, o, cfg)

	p.pauseControl(cj, o, isPauseReason(p.StopReason) && !pauseTime(cj).IsZero() && !store.IsPaused(p.Reaches))

	initRedis := p.Activity.InitRedis
	p.Poll = initRedis
	if speaksV1(cj, cfg) {
		p.Control.Exits = exitLines(o)
	}
	p.Children = childPlan{RedisPVC: true, RedisPod: initRedis}
	// A paused crawl keeps its volumes and runs no crawler.
	paused := isPaused(cj, p.Reaches)
	for i := range int(p.Scale) {
		p.Children.CrawlerPVCs = append(p.Children.CrawlerPVCs, i)
		if !restarting && !paused && !stalePaused(cj, o, i, stopAsked) {
			p.Children.CrawlerPods = append(p.Children.CrawlerPods, i)
		}
	}
	return p
}
