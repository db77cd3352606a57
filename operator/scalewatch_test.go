package operator_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	informers "github.com/trawlerhq/trawler/k8s/generated/informers/externalversions"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
)

// scaleWatch follows every CrawlJob of the namespace through an informer:
// the states, the last status of each and when it came, and (while
// recording) how long a busy crawl's pages took from the fleet's write to
// the status.
type scaleWatch struct {
	busy  func(id string) bool
	fleet *crawlersim.Fleet

	mu      sync.Mutex
	status  map[string]trawlerv1.CrawlJobStatus
	byState map[string]int
	// changedAt is when each crawl's status last changed its state or
	// scale (progress alone does not count), so that a change is timed
	// by the status that showed it, never by an older one.
	changedAt map[string]time.Time
	changed   chan struct{} // closed and replaced on every change
	lastEvent time.Time
	pages     map[string]bool // busy crawls whose status showed pages
	recording bool
	progress  []time.Duration
	// untimed counts pages done whose time the fleet no longer remembers
	// (their status came minutes behind).
	untimed int
}

func (h *harness) watchScale(ctx context.Context, busy func(string) bool, fleet *crawlersim.Fleet) *scaleWatch {
	w := &scaleWatch{busy: busy, fleet: fleet, status: map[string]trawlerv1.CrawlJobStatus{}, byState: map[string]int{},
		changedAt: map[string]time.Time{}, changed: make(chan struct{}), pages: map[string]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(h.trawler, 0, informers.WithNamespace(h.ns))
	inf := f.Trawler().V1().CrawlJobs().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.note(obj.(*trawlerv1.CrawlJob)) },
		UpdateFunc: func(_, obj any) { w.note(obj.(*trawlerv1.CrawlJob)) },
		DeleteFunc: func(obj any) {
			if j, ok := obj.(*trawlerv1.CrawlJob); ok {
				w.mu.Lock()
				if st, ok := w.status[j.Spec.ID]; ok {
					w.byState[st.State]--
				}
				delete(w.status, j.Spec.ID)
				w.touch()
				w.mu.Unlock()
			}
		},
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return w
}

func (w *scaleWatch) note(j *trawlerv1.CrawlJob) {
	now := time.Now()
	id := j.Spec.ID
	w.mu.Lock()
	defer w.mu.Unlock()
	old, known := w.status[id]
	if known {
		w.byState[old.State]--
	}
	w.byState[j.Status.State]++
	if !known || old.State != j.Status.State || old.Scale != j.Status.Scale {
		w.changedAt[id] = now
	}
	w.status[id] = j.Status
	w.touch()
	if !w.busy(id) || j.Status.PagesDone <= old.PagesDone {
		return
	}
	w.pages[id] = true
	if !w.recording {
		return
	}
	// Every page done since the last status is a change this status
	// shows, the oldest waited longest: timing only the newest count
	// would hide a crawl whose status is written seldom.
	for n := old.PagesDone + 1; n <= j.Status.PagesDone; n++ {
		if wrote, ok := w.fleet.PagesAt(id, n); ok {
			w.progress = append(w.progress, now.Sub(wrote))
		} else {
			w.untimed++
		}
	}
}

func (w *scaleWatch) touch() {
	w.lastEvent = time.Now()
	close(w.changed)
	w.changed = make(chan struct{})
}

// statusOf returns the last status seen of a crawl.
func (w *scaleWatch) statusOf(id string) (trawlerv1.CrawlJobStatus, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.status[id]
	return st, ok
}

// states counts the CrawlJobs by status state.
func (w *scaleWatch) states() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for state, n := range w.byState {
		if n > 0 {
			out[state] = n
		}
	}
	return out
}

// pagesSeen counts the busy crawls whose status showed pages.
func (w *scaleWatch) pagesSeen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pages)
}

func (w *scaleWatch) recordProgress(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recording = on
}

// progressLatencies returns the busy crawls' pages-done latencies, one per
// page, and how many pages were too late to time.
func (w *scaleWatch) progressLatencies() ([]time.Duration, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.progress), w.untimed
}

// settle waits until no CrawlJob changed for quiet and reports whether
// that happened within timeout.
func (w *scaleWatch) settle(quiet, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		w.mu.Lock()
		last := w.lastEvent
		w.mu.Unlock()
		if time.Since(last) >= quiet {
			return true
		}
	}
	return false
}

// waitStatus waits (at most timeout) for a status of the crawl for which
// cond holds and that changed at or after start (the change made then),
// and returns when it arrived. A status that already held before start
// cannot time the change: that counts as not seen.
func (w *scaleWatch) waitStatus(id string, start time.Time, timeout time.Duration, cond func(trawlerv1.CrawlJobStatus) bool) (time.Time, bool) {
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		st, ok := w.status[id]
		at, changed := w.changedAt[id], w.changed
		w.mu.Unlock()
		if ok && cond(st) {
			return at, !at.Before(start)
		}
		select {
		case <-changed:
		case <-deadline:
			return time.Time{}, false
		}
	}
}

// latencies are timings by kind, and the changes never seen.
type latencies struct {
	mu     sync.Mutex
	byKind map[string][]time.Duration
	miss   map[string]int
}

func newLatencies() *latencies {
	return &latencies{byKind: map[string][]time.Duration{}, miss: map[string]int{}}
}

func (l *latencies) add(kind string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byKind[kind] = append(l.byKind[kind], d)
}

func (l *latencies) missing(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.miss[kind]++
}

func (l *latencies) missed() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.miss)
}

func (l *latencies) get(kind string) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.byKind[kind])
}

func (l *latencies) all(kinds ...string) []time.Duration {
	var out []time.Duration
	for _, k := range kinds {
		out = append(out, l.get(k)...)
	}
	return out
}
