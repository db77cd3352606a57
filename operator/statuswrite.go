package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Writing a crawl's status: a state change at once, progress at most once
// per stats interval (the write budget) and within the progress queue's
// global budget, each time to the CrawlJob status and, for what changed,
// to the crawl document (in batches, progressstore.go).

// writeBudget remembers per CrawlJob when its status was last written and
// which stats the crawl document holds, so that progress alone is written
// at most once per interval. The poller asks it when to wake a sync for
// progress; syncs of one job never run concurrently, the poller's reads
// may.
type writeBudget struct {
	interval time.Duration

	mu   sync.Mutex
	jobs map[string]budgetEntry
}

type budgetEntry struct {
	written time.Time
	stats   store.CrawlStats
	stored  bool // stats is what the crawl document holds
}

func newWriteBudget(interval time.Duration) *writeBudget {
	return &writeBudget{interval: interval, jobs: map[string]budgetEntry{}}
}

// wait returns how long progress of key must wait before it may be
// written (0: now).
func (b *writeBudget) wait(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.jobs[key]
	if !ok {
		return 0
	}
	return max(e.written.Add(b.interval).Sub(now), 0)
}

func (b *writeBudget) wrote(key string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.jobs[key]
	e.written = now
	b.jobs[key] = e
}

// storedStats returns the stats the crawl document holds, as far as this
// process knows.
func (b *writeBudget) storedStats(key string) (store.CrawlStats, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.jobs[key]
	return e.stats, e.stored
}

func (b *writeBudget) storeStats(key string, s store.CrawlStats) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.jobs[key]
	e.stats, e.stored = s, true
	b.jobs[key] = e
}

func (b *writeBudget) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.jobs, key)
}

// writeStatus writes the status a sync computed as needsStatusUpdate and
// the budget allow, as a merge patch of what changed; progress it holds
// back waits in the progress queue. A state change goes at once, with the
// main client, whichever queue the pass came from. Progress alone is the progress queue's: a pass of the
// main queue hands it over, and the progress pass writes it with the
// progress client once the crawl's interval has passed. The CrawlJob
// status goes first (the crawl document already has the state, from the
// compare-and-set); then the crawl document is given the stats and the
// pod view that changed, written with other crawls' in a batch, so both
// move together.
func (c *Controller) writeStatus(ctx context.Context, key string, cj *trawlerv1.CrawlJob, st trawlerv1.CrawlJobStatus, class syncClass) error {
	now := c.clock.Now()
	client, precondition := c.trawler, cj.ResourceVersion
	switch needsStatusUpdate(cj.Status, st) {
	case noUpdate:
		return nil
	case progressUpdate:
		wait := c.budget.wait(key, now)
		if st.State == store.StateStarting {
			// A starting crawl's progress alone (its pods' phases, why it
			// waits) waits for the state change it leads to: running, in
			// three status writes from create (starting, a crawler runs,
			// running), or waiting_capacity, which shows why.
			wait = max(wait, cj.CreationTimestamp.Add(c.cfg.StartingTimeout).Sub(now))
		}
		if class != progressSync {
			c.enqueueProgress(key, wait, class.queue())
			return nil
		}
		if wait > 0 {
			c.enqueueProgress(key, wait, "budget")
			return nil
		}
		if c.unobserved(cj) {
			// Another write before the cache shows our last would leave it
			// two behind, and a state change decided on it would be
			// refused for a conflict again and again while progress,
			// which goes unconditionally, kept writing.
			c.enqueueProgress(key, c.cfg.RedisPollInterval, "unobserved")
			return nil
		}
		client, precondition = c.progress.client, ""
	}
	patch, err := statusPatch(cj.Status, st, precondition)
	if err != nil {
		return err
	}
	updated, err := client.TrawlerV1().CrawlJobs(cj.Namespace).Patch(ctx, cj.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	c.telemetry.statusWritten(err)
	if err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	c.written.wrote(key, cj.ResourceVersion, updated)
	c.budget.wrote(key, now)
	c.recordProgress(key, cj, st)
	return nil
}

// recordProgress hands the crawl document's batch writer what it lacks of
// the status just written: the stats when they differ from what it holds
// (not for a finished crawl, whose stats came with its final state), and
// the per-pod view when it changed enough since the status last written.
func (c *Controller) recordProgress(key string, cj *trawlerv1.CrawlJob, st trawlerv1.CrawlJobStatus) {
	var stats *store.CrawlStats
	if st.Finished == nil {
		stats = c.unstoredStats(key, cj, st)
	}
	var pods map[string]store.PodStatus
	if len(st.Pods) > 0 && podsChangedMuch(cj.Status.Pods, st.Pods) {
		now := c.clock.Now().UTC()
		pods = make(map[string]store.PodStatus, len(st.Pods))
		for k, p := range st.Pods {
			pods[k] = toStorePod(p, now)
		}
	}
	if stats == nil && pods == nil {
		return
	}
	c.progressStore.add(store.CrawlProgress{CrawlID: cj.Spec.ID, Stats: stats, Pods: pods})
	if stats != nil {
		c.budget.storeStats(key, *stats)
	}
}

// unstoredStats returns the status's stats when they differ from what the
// crawl document holds, else nil. A restarted operator takes the stats of
// the status last written as stored: at worst the document lags until the
// next progress write (and the final stats come with the final state).
func (c *Controller) unstoredStats(key string, cj *trawlerv1.CrawlJob, st trawlerv1.CrawlJobStatus) *store.CrawlStats {
	stats := store.CrawlStats{Found: st.PagesFound, Done: st.PagesDone, Size: st.Size}
	stored, known := c.budget.storedStats(key)
	if !known {
		stored = store.CrawlStats{Found: cj.Status.PagesFound, Done: cj.Status.PagesDone, Size: cj.Status.Size}
	}
	if stats == stored {
		return nil
	}
	return &stats
}

// podsChangedMuch reports changes worth a database write: pods coming or
// going, a restart, an exit, a terminal phase, a new usage (the status
// shows only usage that moved enough). Pending -> Running alone is left
// to the CrawlJob status, which keeps a crawl start cheap.
func podsChangedMuch(old, cur map[string]trawlerv1.PodStatus) bool {
	if len(old) != len(cur) {
		return true
	}
	terminal := func(phase string) bool {
		return phase == string(corev1.PodSucceeded) || phase == string(corev1.PodFailed)
	}
	for k, p := range cur {
		o, ok := old[k]
		if !ok || o.Restarts != p.Restarts || o.Reason != p.Reason || !apiequality.Semantic.DeepEqual(o.ExitCode, p.ExitCode) ||
			terminal(o.Phase) != terminal(p.Phase) || !apiequality.Semantic.DeepEqual(o.Requests, p.Requests) ||
			!apiequality.Semantic.DeepEqual(o.Usage, p.Usage) {
			return true
		}
	}
	return false
}

// toStorePod converts the status view of a pod for the crawl document.
func toStorePod(p trawlerv1.PodStatus, now time.Time) store.PodStatus {
	milli := func(m map[string]string, k string) int64 {
		q, err := resource.ParseQuantity(m[k])
		if err != nil {
			return 0
		}
		return q.MilliValue()
	}
	bytes := func(m map[string]string, k string) int64 {
		q, err := resource.ParseQuantity(m[k])
		if err != nil {
			return 0
		}
		return q.Value()
	}
	return store.PodStatus{
		Phase: p.Phase, Restarts: p.Restarts, ExitCode: p.ExitCode, Reason: p.Reason,
		CPUAllocMilli: milli(p.Requests, "cpu"), MemoryAlloc: bytes(p.Requests, "memory"),
		StorageAlloc: bytes(p.Requests, "storage"), CPUUsedMilli: milli(p.Usage, "cpu"),
		MemoryUsed: bytes(p.Usage, "memory"), LastUpdated: now,
	}
}
