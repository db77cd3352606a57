package operator

import (
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// Condition types the operator maintains on a CrawlJob.
const (
	// CondSpecValid is False while the spec has a problem the user must fix.
	CondSpecValid = "SpecValid"
	// CondCrawlerActive tracks whether a crawler pod runs; its transition
	// time starts the Redis idle timer.
	CondCrawlerActive = "CrawlerActive"
	// CondFinishTasks is True once the post-crawl tasks are done, so a
	// restarted operator does not redo them.
	CondFinishTasks = "FinishTasksDone"
	// CondStartedNotified is True once the crawlStarted notification is
	// stored, so a restarted operator stores it if a crash came between.
	CondStartedNotified = "StartedNotified"
	// CondFailureReported is True once the reason the operator failed a
	// crawl (status.failReason) and its crawler pods' last log lines are
	// in the crawl's errors; the crawler pods stay until then.
	CondFailureReported = "FailureReported"
)

// observed is everything one sync learned. decide reads only this.
type observed struct {
	Now time.Time
	Job *trawlerv1.CrawlJob
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
	// Usage is the latest measured usage of the crawl's pods by pod name
	// (empty without metrics).
	Usage map[string]podUsage
	// Redis is the poller's last state, nil when none polled yet.
	Redis *redisState
	// FinishTasksDone is true when the post-crawl tasks just completed.
	FinishTasksDone bool
	// StartedNotified is true when the crawlStarted notification was just
	// stored.
	StartedNotified bool
	// FailureReported is true when the failure report (see
	// CondFailureReported) was just stored.
	FailureReported bool
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

// decision is what decide concluded: the status fields it decides, the
// state transitions to ask the store for (the store decides whether they
// happen; crawlStatus folds its answers in), the children to have, what
// to assert in Redis and when to look again.
type decision struct {
	// Status holds what decide decides; its State is the state this pass
	// plans to reach, not yet what the crawl is.
	Status      trawlerv1.CrawlJobStatus
	Transitions []transition
	Plan        childPlan
	Control     redisControl
	// Poll says whether the crawl's Redis should be polled.
	Poll bool
	// Teardown is set once the crawl is finished or the job deleted.
	Teardown bool
	// RequeueAfter > 0 asks to look again then, for time-based rules.
	RequeueAfter time.Duration
	// Problems are spec problems for the SpecValid condition and Event.
	Problems []string
}

// decide is the whole reconcile logic of a CrawlJob, as a pure function of
// what was observed.
func decide(o observed, cfg Config) decision {
	cj := o.Job
	d := decision{Status: *cj.Status.DeepCopy()}
	st := &d.Status
	if st.State == "" {
		st.State = store.StateStarting
	}
	st.ObservedGeneration = cj.Generation
	d.Problems = validateSpec(cj, cfg, o.ConfigMapOK)
	setSpecCondition(st, d.Problems, o.Now)

	if cj.DeletionTimestamp != nil && st.Finished == nil {
		// Deleting a job cancels its crawl at once (a crawl whose document
		// is gone or already final adopts that), and tears it down.
		d.plan(transition{To: store.StateCanceled, From: store.ActiveStates, Finished: true})
		d.teardown(o)
		return d
	}
	if st.Finished != nil || store.IsFinished(st.State) {
		d.teardown(o)
		return d
	}

	wanted := clampScale(cj.Spec.Scale, cfg.MaxCrawlScale)
	created := cj.CreationTimestamp.Time
	startingTooLong := o.Now.Sub(created) >= cfg.StartingTimeout

	if !o.ConfigMapOK && st.RunningSince == nil {
		// Without its config no crawler can start; give the API a moment to
		// create it, then fail the crawl as upstream does.
		if startingTooLong {
			d.plan(transition{To: store.StateFailed, From: store.ActiveStates, Finished: true})
		} else {
			d.after(created.Add(cfg.StartingTimeout).Sub(o.Now))
		}
		return d
	}

	if gatedByOrgLimit(st) {
		if !o.OrgSlotFree {
			if st.State == store.StateStarting {
				d.plan(transition{To: store.StateWaitingOrgLimit, From: []string{store.StateStarting}})
			}
			return d
		}
		if st.State == store.StateWaitingOrgLimit {
			d.plan(transition{To: store.StateStarting, From: []string{store.StateWaitingOrgLimit}})
		}
	}

	if st.Scale == 0 {
		// The first render scales up at once.
		st.Scale = wanted
	}
	restarting := cj.Spec.RestartTime != st.RestartTime
	if restarting && len(o.Crawlers) == 0 {
		// Every old pod is gone: record the restart as done and recreate.
		st.RestartTime = cj.Spec.RestartTime
		restarting = false
	}

	active := crawlerActive(o.Crawlers)
	d.trackActivity(o, cfg, active)
	reachable := o.Redis != nil && o.Redis.Reachable

	d.resolveScale(o, wanted)

	switch reason := d.crashLoop(o, cfg); {
	case reason != "":
		// The crawler pods stay until the reason and their last log lines
		// are in the crawl's errors (teardown).
		st.FailReason = reason
		d.plan(transition{To: store.StateFailed, From: store.ActiveStates, Finished: true, Stats: redisStats(o.Redis)})
	case !active:
		st.WaitingReason = schedulingMessage(o.Crawlers)
		if store.IsRunning(st.State) || (st.State == store.StateStarting && startingTooLong) {
			d.plan(transition{To: store.StateWaitingCapacity, From: waitingCapacityFrom})
		} else if st.State == store.StateStarting {
			d.after(created.Add(cfg.StartingTimeout).Sub(o.Now))
		}
	case !reachable:
		st.WaitingReason = "waiting for redis"
		since := o.Now
		if o.Redis != nil {
			since = o.Redis.Since
		}
		if (store.IsRunning(st.State) && o.Now.Sub(since) >= cfg.RedisUnreachableGrace) ||
			(st.State == store.StateStarting && startingTooLong) {
			d.plan(transition{To: store.StateWaitingCapacity, From: waitingCapacityFrom})
		} else if store.IsRunning(st.State) {
			d.after(since.Add(cfg.RedisUnreachableGrace).Sub(o.Now))
		} else if st.State == store.StateStarting {
			d.after(created.Add(cfg.StartingTimeout).Sub(o.Now))
		}
	default:
		st.WaitingReason = ""
		if st.RunningSince == nil {
			t := metav1.NewTime(o.Now.Truncate(time.Second))
			st.RunningSince = &t
		}
		d.running(o, cfg)
	}

	d.Poll = st.InitRedis
	d.Plan = childPlan{RedisPVC: true, RedisPod: st.InitRedis}
	for i := range int(st.Scale) {
		d.Plan.CrawlerPVCs = append(d.Plan.CrawlerPVCs, i)
		if !restarting {
			d.Plan.CrawlerPods = append(d.Plan.CrawlerPods, i)
		}
	}
	return d
}

// plan asks for a state change from the state this pass has reached, so
// a later rule of the same pass starts from there: a crawl let in by its
// org's limit becomes starting, and then, in the same pass and in that
// order, waiting_capacity or running. (Replacing the first change with
// the second made the store refuse it, since the document still said
// waiting_org_limit, and the crawl stayed "waiting" while it crawled.)
func (d *decision) plan(t transition) {
	d.Transitions = append(d.Transitions, t)
	d.Status.State = t.To
}

// running handles a crawl with an active crawler and a reachable Redis:
// stats, stopping, and the state that follows from the instances' statuses.
func (d *decision) running(o observed, cfg Config) {
	st := &d.Status
	r := o.Redis
	cj := o.Job
	st.PagesDone, st.PagesFound, st.Size = r.PagesDone, r.PagesFound, r.Size
	st.SizeHuman = humanSize(r.Size)
	st.FilesAdded, st.FilesAddedSize = r.FilesAdded, r.FilesAddedSize

	stopping := st.Stopping || cj.Spec.Stopping
	if cj.Spec.MaxCrawlSize > 0 && r.Size > cj.Spec.MaxCrawlSize {
		stopping = true
	}
	if cj.Spec.CrawlTimeout > 0 && st.RunningSince != nil {
		deadline := st.RunningSince.Add(time.Duration(cj.Spec.CrawlTimeout) * time.Second)
		if !o.Now.Before(deadline) {
			stopping = true
		} else {
			d.after(deadline.Sub(o.Now))
		}
	}
	// Sticky: a size that drops after a session upload must not resume a
	// crawl that was told to stop.
	st.Stopping = stopping
	d.Control.Stopping = stopping

	stats := redisStats(r)
	var done, failed, succeededDone int
	anyRunning := false
	phases := map[string]bool{}
	for i := range int(st.Scale) {
		name := k8s.CrawlerName(cj.Spec.ID, i)
		switch s := r.Statuses[name]; s {
		case "done":
			done++
			if p := o.Crawlers[i]; p == nil || p.Status.Phase == corev1.PodSucceeded {
				succeededDone++
			}
		case "failed":
			failed++
		case "running":
			anyRunning = true
		default:
			phases[s] = true
		}
	}

	if st.Scale > 0 && done+failed >= int(st.Scale) {
		switch {
		case r.PendingFiles > 0 || succeededDone < done:
			// Wait for every WACZ to be recorded and every done crawler to
			// exit; the poller and pod events bring us back.
		case done > 0 && r.PagesFound == 1 && r.FilesAdded == 0:
			d.plan(transition{To: store.StateFailed, From: store.ActiveStates, Finished: true, Stats: stats})
		case done > 0:
			state := store.StatePartialComplete
			if r.PagesDone > 0 && r.PagesDone >= r.PagesFound {
				state = store.StateComplete
			}
			d.plan(transition{To: state, From: store.ActiveStates, Finished: true, Stats: stats})
		case stopping && r.PagesDone == 0:
			d.plan(transition{To: store.StateCanceled, From: store.ActiveStates, Finished: true, Stats: stats})
		default:
			d.plan(transition{To: store.StateFailed, From: store.ActiveStates, Finished: true, Stats: stats})
		}
		return
	}

	next := store.StateRunning
	if !anyRunning && store.IsRunning(st.State) {
		for _, p := range []string{store.StateGenerateWACZ, store.StateUploadingWACZ, store.StatePendingWait} {
			if phases[p] {
				next = p
				break
			}
		}
	}
	if next != st.State {
		from := store.RunningStates
		if next == store.StateRunning {
			from = slices.Concat(store.RunningStates, []string{store.StateStarting, store.StateWaitingCapacity})
		}
		d.plan(transition{To: next, From: from})
	}
}

// redisStats are the crawl's stats as its Redis last told, nil when it
// was not reachable.
func redisStats(r *redisState) *store.CrawlStats {
	if r == nil || !r.Reachable {
		return nil
	}
	return &store.CrawlStats{Found: r.PagesFound, Done: r.PagesDone, Size: r.Size}
}

// trackActivity keeps InitRedis, the CrawlerActive condition and
// LastActiveTime. They change only on an edge, so a steady crawl causes no
// status writes.
func (d *decision) trackActivity(o observed, cfg Config, active bool) {
	st := &d.Status
	wasActive := meta.IsStatusConditionTrue(st.Conditions, CondCrawlerActive)
	if active {
		st.InitRedis = true
		setCondition(st, CondCrawlerActive, metav1.ConditionTrue, "CrawlerRunning", "a crawler pod is running", o.Now)
		return
	}
	setCondition(st, CondCrawlerActive, metav1.ConditionFalse, "NoCrawlerRunning", "no crawler pod is running", o.Now)
	if wasActive {
		t := metav1.NewTime(o.Now.Truncate(time.Second))
		st.LastActiveTime = &t
	}
	if st.InitRedis && st.LastActiveTime != nil {
		idle := st.LastActiveTime.Add(cfg.RedisIdle)
		if !o.Now.Before(idle) {
			st.InitRedis = false
		} else {
			d.after(idle.Sub(o.Now))
		}
	}
}

// resolveScale moves status.scale toward the wanted scale: up at once,
// down only after each instance above it has stopped cleanly (Succeeded)
// or never ran, highest index first, so no unuploaded data is dropped.
func (d *decision) resolveScale(o observed, wanted int32) {
	st := &d.Status
	r := o.Redis
	id := o.Job.Spec.ID
	reachable := r != nil && r.Reachable
	if wanted > st.Scale && reachable && r.PagesFound > 0 && int64(wanted) > r.PagesFound {
		// No more instances than pages, but never scale down for it.
		wanted = max(st.Scale, int32(r.PagesFound))
	}
	if wanted >= st.Scale {
		// An instance left with fields from an earlier scale-down would read
		// "done" and exit at once: scale up to it only once it is clean.
		for i := st.Scale; i < wanted && reachable; i++ {
			name := k8s.CrawlerName(id, int(i))
			if _, dirty := r.Statuses[name]; (dirty || r.StopOne[name]) && o.Crawlers[int(i)] == nil {
				wanted = i
			}
		}
		st.Scale = wanted
	} else if reachable {
		newScale := st.Scale
		for i := st.Scale - 1; i >= wanted; i-- {
			name := k8s.CrawlerName(id, int(i))
			pod := o.Crawlers[int(i)]
			status, ran := r.Statuses[name]
			gone := (pod != nil && pod.Status.Phase == corev1.PodSucceeded) || !ran ||
				(pod == nil && status == "done")
			if gone && newScale == i+1 {
				newScale = i
			}
		}
		st.Scale = newScale
	}
	if !reachable {
		return
	}
	d.Control.StopOne = map[string]bool{}
	for i := range int(st.Scale) {
		name := k8s.CrawlerName(id, i)
		if want := int32(i) >= wanted; want || r.StopOne[name] {
			d.Control.StopOne[name] = want
		}
	}
	// Instances above the scale whose pods are gone keep no Redis fields.
	dirty := map[string]bool{}
	for name := range r.Statuses {
		dirty[name] = true
	}
	for name := range r.StopOne {
		dirty[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(dirty)) {
		i, ok := k8s.CrawlerIndex(id, name)
		if ok && int32(i) >= st.Scale && o.Crawlers[i] == nil {
			d.Control.Cleanup = append(d.Control.Cleanup, name)
		}
	}
}

// teardown renders the children of a finished or deleted crawl: crawler
// pods go first; Redis and the PVCs stay until they are gone (and Redis
// until the post-crawl tasks have read it); then everything goes.
func (d *decision) teardown(o observed) {
	d.Teardown = true
	crawlersLeft := len(o.Crawlers) > 0
	tasksDone := meta.IsStatusConditionTrue(d.Status.Conditions, CondFinishTasks) || o.FinishTasksDone
	keepRedis := o.RedisPod != nil && (crawlersLeft || !tasksDone)
	d.Plan = childPlan{RedisPod: keepRedis, RedisPVC: keepRedis}
	if crawlersLeft {
		d.Plan.RedisPVC = true
		for name := range o.PVCs {
			if i, ok := k8s.CrawlerIndex(o.Job.Spec.ID, name); ok {
				d.Plan.CrawlerPVCs = append(d.Plan.CrawlerPVCs, i)
			}
		}
		sort.Ints(d.Plan.CrawlerPVCs)
	}
	if failureUnreported(d.Status, o) {
		// Their logs go with them: keep the crawler pods there are until
		// their last lines are in the crawl's errors.
		d.Plan.CrawlerPods = slices.Sorted(maps.Keys(o.Crawlers))
	}
}

// failureUnreported tells whether the operator failed the crawl and the
// report of why is not stored yet.
func failureUnreported(st trawlerv1.CrawlJobStatus, o observed) bool {
	return st.FailReason != "" && !o.FailureReported && !meta.IsStatusConditionTrue(st.Conditions, CondFailureReported)
}

func (d *decision) after(delay time.Duration) {
	delay = max(delay, time.Second)
	if d.RequeueAfter == 0 || delay < d.RequeueAfter {
		d.RequeueAfter = delay
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

// clampScale bounds the requested scale to 1..max.
func clampScale(scale int32, maxScale int) int32 {
	return min(max(scale, 1), int32(maxScale))
}
