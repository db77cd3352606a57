package operator

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// plan is what decide concluded in one pass: the state transitions to ask
// the store for (the store decides whether they happen), the children to
// have, what to assert in the crawl's Redis, when to look again, and the
// few facts about the crawl that only decide establishes. It is not a
// status: crawlStatus builds that from the job, the plan and what the
// pass observed, the store's answers included.
type plan struct {
	// Transitions are the state changes to attempt, in order.
	Transitions []transition
	// Reaches is the state the crawl is in once the store has made every
	// transition (its current state when there are none); decide's later
	// rules start from it.
	Reaches string
	// Children are the pods and PVCs the crawl should have now.
	Children childPlan
	// Control is what to assert in the crawl's Redis.
	Control redisControl
	// Poll says whether the crawl's Redis should be polled.
	Poll bool
	// Teardown is set once the crawl is finished or the job deleted.
	Teardown bool
	// RequeueAfter > 0 asks to look again then, for time-based rules.
	RequeueAfter time.Duration
	// Problems are spec problems for the SpecValid condition and Event.
	Problems []string

	// The facts below start as the status last written says and change
	// only where decide's rules change them.

	// Scale is the number of crawler instances the crawl has (0 until
	// its first render).
	Scale int32
	// RestartsAtProgress is the crawler containers' restart count when
	// the crawl last got a page done (see crashLoop).
	RestartsAtProgress int32
	// CrawlerRestarts counts the crawler containers' restarts over the
	// crawl's life (see crashLoop).
	CrawlerRestarts int32
	// WaitingReason tells users why the crawl waits, "" when it does not.
	WaitingReason string
	// RunningSince is when the crawl first had an active crawler and a
	// reachable Redis, nil until then.
	RunningSince *metav1.Time
	// Stopping is set once the crawl is told to stop, by its user or a
	// limit; it stays set.
	Stopping bool
	// StopReason says why the crawl stops or pauses (status.stopReason).
	StopReason string

	// CrawlerImage is the image of the crawl's channel as configured now.
	CrawlerImage string

	// The facts below are set only by the pass that establishes them.

	// RestartRecorded is set when the restart spec.restartTime asks for
	// is done: every old crawler pod is gone.
	RestartRecorded bool
	// Activity is whether a crawler runs and what follows for Redis, nil
	// when the pass did not get that far (the crawl is held or ended).
	Activity *crawlerActivity
	// FailReason is why this pass fails the crawl, "" unless it does.
	FailReason string
	// Progress is the crawl's progress as its Redis tells, nil when the
	// pass did not read it (the crawl is not running).
	Progress *progress
	// Exec is the execution-time accounting tick to carry out, nil when
	// none is due (execquota.go).
	Exec *execTick
}

// progress is a crawl's progress as its Redis tells.
type progress struct {
	PagesFound, PagesDone, Size int64
	// FilesAdded and FilesAddedSize are the recorded WACZ files' totals.
	FilesAdded, FilesAddedSize int64
}

// newPlan starts a plan from the status last written: no transition yet,
// the facts as they are.
func newPlan(st trawlerv1.CrawlJobStatus) plan {
	p := plan{Reaches: st.State, Scale: st.Scale, RestartsAtProgress: st.RestartsAtProgress,
		CrawlerRestarts: st.CrawlerRestarts, WaitingReason: st.WaitingReason, RunningSince: st.RunningSince,
		Stopping: st.Stopping, StopReason: st.StopReason}
	if p.Reaches == "" {
		p.Reaches = store.StateStarting
	}
	return p
}

// move asks for a state change from the state this pass has reached, so
// a later rule of the same pass starts from there: a crawl let in by its
// org's limit becomes starting, and then, in the same pass and in that
// order, waiting_capacity or running. (Replacing the first change with
// the second made the store refuse it, since the document still said
// waiting_org_limit, and the crawl stayed "waiting" while it crawled.)
func (p *plan) move(t transition) {
	p.Transitions = append(p.Transitions, t)
	p.Reaches = t.To
}

// entersPause reports whether the pass moves the crawl into a paused
// state.
func (p *plan) entersPause() bool {
	n := len(p.Transitions)
	return n > 0 && store.IsPaused(p.Transitions[n-1].To)
}

// lookAgainIn asks for a sync after delay (at least a second), keeping
// the earliest of the pass's requests.
func (p *plan) lookAgainIn(delay time.Duration) {
	delay = max(delay, time.Second)
	if p.RequeueAfter == 0 || delay < p.RequeueAfter {
		p.RequeueAfter = delay
	}
}
