package operator

import (
	"context"
	"maps"
	"slices"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
)

// Two classes of work share the CrawlJobs. State work (informer events
// but the periodic resync, which has a queue of its own, handlers.go;
// the poller's decisions, time-based rules, state changes, child creates
// and deletes) goes through the main queue and its workers with the main
// client. Progress alone (pages, size, the pod view) goes through a queue
// of its own, with its own few workers, its own client and one global
// budget of writes per second, so that a thousand busy crawls' page
// counts never make a crawl that should start, stop or finish wait in
// line, nor share its client's token bucket.
//
// Fairness comes from the queue: a key is in it at most once, so every
// crawl with progress to show gets its turn before any gets a second, and
// when the budget is short each crawl's writes simply grow further apart
// (the status always carries the latest reading, nothing piles up).

// syncClass says which queue a sync runs from.
type syncClass int

const (
	stateSync syncClass = iota
	progressSync
	resyncSync
)

// queue names the class's queue: the workqueue's name in its metrics, and
// the queue label of the sync and step metrics.
func (s syncClass) queue() string {
	switch s {
	case progressSync:
		return "crawljob-progress"
	case resyncSync:
		return "crawljob-resync"
	}
	return "crawljobs"
}

// progressLane is the progress queue with its budget and its client.
type progressLane struct {
	queue workqueue.TypedRateLimitingInterface[string]
	// budget is the global token bucket of progress syncs: one token per
	// sync, taken before the job's lock so that a state sync of the same
	// job never waits for it.
	budget flowcontrol.RateLimiter
	// client writes progress statuses (its own rate limiter).
	client versioned.Interface
}

func newProgressLane(cfg Config, client versioned.Interface, clk clock.WithTicker, t *Telemetry) *progressLane {
	burst := max(int(cfg.ProgressQPS), 1)
	return &progressLane{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: progressSync.queue(), Clock: clk, MetricsProvider: t.queueProvider()}),
		budget: flowcontrol.NewTokenBucketRateLimiter(float32(cfg.ProgressQPS), burst),
		client: client,
	}
}

// keyLocks serializes the syncs of one job across the queues (state,
// progress, resync; each queue alone never runs a key twice at once).
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

// lock takes key's lock and returns its release.
func (l *keyLocks) lock(key string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*keyLock{}
	}
	k := l.m[key]
	if k == nil {
		k = &keyLock{}
		l.m[key] = k
	}
	k.users++
	l.mu.Unlock()
	k.Lock()
	return func() {
		k.Unlock()
		l.mu.Lock()
		if k.users--; k.users == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}

// progressWorker processes progress keys until the queue shuts down,
// each after a token of the global budget.
func (c *Controller) progressWorker(sync syncFunc) func(context.Context) {
	budgeted := func(ctx context.Context, key string) error {
		steps := c.telemetry.stepClock(progressSync.queue())
		if err := c.progress.budget.Wait(ctx); err != nil {
			return nil // shutting down
		}
		steps.step("budget")
		return sync(ctx, key)
	}
	return func(ctx context.Context) {
		for c.processNextItem(ctx, c.progress.queue, budgeted) {
		}
	}
}

// unobserved reports whether cj is the status we wrote last and the
// cache does not show yet (getJob).
func (c *Controller) unobserved(cj *trawlerv1.CrawlJob) bool {
	cached, err := c.jobs.CrawlJobs(cj.Namespace).Get(cj.Name)
	return err == nil && cached.ResourceVersion != cj.ResourceVersion
}

// progressEcho reports whether a CrawlJob update changed its status's
// progress and nothing else: the echo of a progress write, which changes
// no decision (decide reads no progress from the status), so it must not
// put the job in the main queue, where a thousand busy crawls' echoes
// would stand between crawls and their state changes.
func progressEcho(old, cur any) bool {
	o, ok := old.(*trawlerv1.CrawlJob)
	if !ok {
		return false
	}
	n, ok := cur.(*trawlerv1.CrawlJob)
	if !ok || o.ResourceVersion == n.ResourceVersion {
		return false
	}
	return o.Generation == n.Generation && apiequality.Semantic.DeepEqual(o.Spec, n.Spec) &&
		apiequality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp) &&
		slices.Equal(o.Finalizers, n.Finalizers) && maps.Equal(o.Labels, n.Labels) &&
		maps.Equal(o.Annotations, n.Annotations) && needsStatusUpdate(o.Status, n.Status) == progressUpdate
}
