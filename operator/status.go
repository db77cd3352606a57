package operator

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// crawlStatus is the one function that assembles a CrawlJob's status,
// once per sync and after its I/O (in the manner of KubeRay's
// calculateStatus), from the status last written (cj), what decide
// concluded (p) and what the pass observed (o): the pods with their
// usage, the store's answers to the plan's transitions, and the
// background tasks just done. The crawl document is the source of truth
// for the state: a transition the store refused leaves the state the
// document holds, and the transitions planned after it are not attempted
// (o.Answers is shorter than p.Transitions then, as after a store
// error).
func crawlStatus(cj *trawlerv1.CrawlJob, p plan, o observed) trawlerv1.CrawlJobStatus {
	st := *cj.Status.DeepCopy()
	if st.State == "" {
		st.State = store.StateStarting
	}
	st.ObservedGeneration = cj.Generation
	setSpecCondition(&st, p.Problems, o.Now)

	// decide's facts.
	st.Scale, st.RestartsAtProgress, st.CrawlerRestarts = p.Scale, p.RestartsAtProgress, p.CrawlerRestarts
	st.WaitingReason, st.RunningSince, st.Stopping = p.WaitingReason, p.RunningSince.DeepCopy(), p.Stopping
	st.StopReason = p.StopReason
	if p.RestartRecorded {
		st.RestartTime = cj.Spec.RestartTime
	}
	if p.CrawlerImage != "" {
		st.CrawlerImage = p.CrawlerImage
	}
	if a := p.Activity; a != nil {
		st.InitRedis, st.LastActiveTime = a.InitRedis, a.LastActiveTime.DeepCopy()
		setCrawlerActiveCondition(&st, a.Active, o.Now)
	}
	if p.FailReason != "" {
		st.FailReason = p.FailReason
	}
	if pr := p.Progress; pr != nil {
		st.PagesFound, st.PagesDone, st.Size, st.SizeHuman = pr.PagesFound, pr.PagesDone, pr.Size, humanSize(pr.Size)
		st.FilesAdded, st.FilesAddedSize = pr.FilesAdded, pr.FilesAddedSize
	}

	// The store's answers.
	if e := o.Exec; e != nil && e.PauseReason != "" && st.StopReason == "" {
		st.StopReason = e.PauseReason
	}
	for i, res := range o.Answers {
		applyTransitionResult(&st, p.Transitions[i], res, o.Now)
		if !res.Changed {
			break
		}
	}
	if cj.DeletionTimestamp != nil && len(o.Answers) > 0 && st.Finished == nil {
		// The store answered the cancel of a deleted job with a state that
		// is neither cancelable nor final: the job goes anyway.
		f := metav1.NewTime(o.Now.Truncate(time.Second))
		st.Finished = &f
	}
	if st.State != store.StateFailed {
		// The store refused the failure (the crawl ended otherwise first).
		st.FailReason = ""
	}

	// The background tasks just done.
	if o.StartedNotified {
		setCondition(&st, CondStartedNotified, metav1.ConditionTrue, "Stored", "crawlStarted notification stored", o.Now)
	}
	if o.FailureReported && st.FailReason != "" {
		setCondition(&st, CondFailureReported, metav1.ConditionTrue, "Stored", "failure reason and crawler logs stored in the crawl's errors", o.Now)
	}

	// The pods.
	st.Pods = podStatuses(cj, o)
	if st.Finished != nil {
		// Keep the last view of pods torn down: their exit is the story of
		// the crawl.
		for k, v := range cj.Status.Pods {
			if _, ok := st.Pods[k]; !ok {
				if st.Pods == nil {
					st.Pods = map[string]trawlerv1.PodStatus{}
				}
				st.Pods[k] = v
			}
		}
		if o.FinishTasksDone {
			setCondition(&st, CondFinishTasks, metav1.ConditionTrue, "Done", "post-crawl tasks done", o.Now)
		}
	}
	return st
}

// applyTransitionResult folds the store's answer to a state transition
// into the status: the new state when it changed, else the document's
// actual state (the document is the source of truth).
func applyTransitionResult(st *trawlerv1.CrawlJobStatus, t transition, res transitionResult, now time.Time) {
	if res.Changed {
		st.State = t.To
		if t.Finished && res.Finished != nil {
			f := metav1.NewTime(*res.Finished)
			st.Finished = &f
		}
		if t.Stats != nil {
			st.PagesFound, st.PagesDone, st.Size = t.Stats.Found, t.Stats.Done, t.Stats.Size
			st.SizeHuman = humanSize(t.Stats.Size)
		}
		return
	}
	if res.State != "" {
		st.State = res.State
	}
	if res.Finished != nil {
		f := metav1.NewTime(res.Finished.Truncate(time.Second))
		st.Finished = &f
	} else if store.IsFinished(st.State) && st.Finished == nil {
		f := metav1.NewTime(now.Truncate(time.Second))
		st.Finished = &f
	}
}

// transitionResult is the store's answer to a compare-and-set transition:
// whether it changed the crawl, and the crawl's state and finished time
// afterwards (the time written, when it changed).
type transitionResult struct {
	Changed  bool
	State    string
	Finished *time.Time
}

// podStatuses describes each child pod, keyed "redis", "0", "1", ...:
// phase, requests (with its PVC's storage), usage, restarts and the last
// exit.
func podStatuses(cj *trawlerv1.CrawlJob, o observed) map[string]trawlerv1.PodStatus {
	out := map[string]trawlerv1.PodStatus{}
	id := cj.Spec.ID
	add := func(key string, p *corev1.Pod, pvc *corev1.PersistentVolumeClaim) {
		s := podStatus(p, pvc)
		u, measured := o.Usage[p.Name]
		s.Usage = mergeUsage(cj.Status.Pods[key].Usage, u, measured, s.Requests)
		out[key] = s
	}
	if o.RedisPod != nil {
		add("redis", o.RedisPod, o.PVCs[k8s.RedisName(id)])
	}
	for i, p := range o.Crawlers {
		add(strconv.Itoa(i), p, o.PVCs[k8s.CrawlerName(id, i)])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func podStatus(p *corev1.Pod, pvc *corev1.PersistentVolumeClaim) trawlerv1.PodStatus {
	s := trawlerv1.PodStatus{Phase: string(p.Status.Phase)}
	req := map[string]string{}
	if len(p.Spec.Containers) > 0 {
		for k, v := range p.Spec.Containers[0].Resources.Requests {
			req[string(k)] = v.String()
		}
	}
	if pvc != nil {
		if v, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			req["storage"] = v.String()
		}
	}
	if len(req) > 0 {
		s.Requests = req
	}
	if len(p.Status.ContainerStatuses) > 0 {
		cs := p.Status.ContainerStatuses[0]
		s.Restarts = cs.RestartCount
		if term := lastTermination(&cs); term != nil {
			code := term.ExitCode
			s.ExitCode = &code
			s.Reason = term.Reason
		}
	}
	return s
}

// humanSize renders bytes in decimal units the way upstream's status did
// ("0 Bytes", "1 Byte", "12.3 MB").
func humanSize(n int64) string {
	switch {
	case n == 1:
		return "1 Byte"
	case n < 1000:
		return fmt.Sprintf("%d Bytes", n)
	}
	f := float64(n)
	for _, unit := range []string{"kB", "MB", "GB", "TB", "PB"} {
		f /= 1000
		if f < 1000 || unit == "PB" {
			return fmt.Sprintf("%.1f %s", f, unit)
		}
	}
	return ""
}

// statusUpdate says what a sync does with the status it computed.
type statusUpdate int

const (
	// noUpdate: nothing changed.
	noUpdate statusUpdate = iota
	// progressUpdate: only progress changed (pages, size, files, the
	// per-pod view, the waiting reason); it is written at most once per
	// stats interval, together with the crawl document's stats.
	progressUpdate
	// stateUpdate: something a user or a later pass acts on changed (the
	// state, a restart, stopping, scale, a condition...); it is written at
	// once, with the progress of the moment, so the last progress before a
	// state change is never lost.
	stateUpdate
)

// needsStatusUpdate compares the status last written with the one just
// computed, as the Job controller's needsStatusUpdate does, and says how
// urgent writing it is.
func needsStatusUpdate(old, cur trawlerv1.CrawlJobStatus) statusUpdate {
	if apiequality.Semantic.DeepEqual(old, cur) {
		return noUpdate
	}
	seen := withoutProgress(old)
	if pauseAsked(old, cur) {
		// The crawlers' answer brings the state change that carries this
		// news; until then it waits like progress, and the pass that sees
		// a hundred crawls paused at once holds no worker for a write.
		seen.ObservedGeneration, seen.StopReason = cur.ObservedGeneration, cur.StopReason
	}
	if apiequality.Semantic.DeepEqual(seen, withoutProgress(cur)) {
		return progressUpdate
	}
	return stateUpdate
}

// pauseAsked reports whether cur is the first status to see a pause asked
// in the spec: a new generation seen with a pause reason, in the same
// state.
func pauseAsked(old, cur trawlerv1.CrawlJobStatus) bool {
	return cur.ObservedGeneration != old.ObservedGeneration && cur.State == old.State &&
		isPauseReason(cur.StopReason) && !isPauseReason(old.StopReason)
}

// changesChildren reports whether cur records what a pass did to the
// crawl's pods that the next pass must see to not do it again: the scale
// applied, a restart carried out, crawler restarts counted.
func changesChildren(old, cur trawlerv1.CrawlJobStatus) bool {
	return old.Scale != cur.Scale || old.RestartTime != cur.RestartTime ||
		old.CrawlerRestarts != cur.CrawlerRestarts || old.RestartsAtProgress != cur.RestartsAtProgress
}

// withoutProgress returns a copy of st without its progress fields.
func withoutProgress(st trawlerv1.CrawlJobStatus) trawlerv1.CrawlJobStatus {
	st.PagesFound, st.PagesDone, st.Size, st.SizeHuman = 0, 0, 0, ""
	st.FilesAdded, st.FilesAddedSize = 0, 0
	st.Pods, st.WaitingReason = nil, ""
	return st
}
