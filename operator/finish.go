package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// finishers tracks the post-crawl task runs, one per finished crawl.
type finishers struct {
	mu      sync.Mutex
	running map[string]bool
	doneSet map[string]bool
	wg      sync.WaitGroup
}

func newFinishers() *finishers {
	return &finishers{running: map[string]bool{}, doneSet: map[string]bool{}}
}

// start runs fn for key unless it runs already or has completed.
func (f *finishers) start(key string, fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[key] || f.doneSet[key] {
		return
	}
	f.running[key] = true
	f.wg.Go(func() {
		fn()
		f.mu.Lock()
		delete(f.running, key)
		f.mu.Unlock()
	})
}

func (f *finishers) markDone(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.doneSet[key] = true
}

func (f *finishers) done(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.doneSet[key]
}

func (f *finishers) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.doneSet, key)
}

func (f *finishers) wait() { f.wg.Wait() }

// finish runs the post-crawl tasks of a finished crawl in the background
// and, once they are done, records that in the status so a restarted
// operator does not redo them.
func (c *Controller) finish(ctx context.Context, key string, cj *trawlerv1.CrawlJob, d *decision, o observed) {
	if meta.IsStatusConditionTrue(d.Status.Conditions, CondFinishTasks) {
		return
	}
	if c.finishers.done(key) {
		setCondition(&d.Status, CondFinishTasks, metav1.ConditionTrue, "Done", "post-crawl tasks done", c.clock.Now())
		return
	}
	job := cj.DeepCopy()
	hasRedis := o.RedisPod != nil
	c.finishers.start(key, func() {
		c.finishTasks(ctx, key, job, hasRedis)
		if ctx.Err() == nil {
			c.finishers.markDone(key)
			c.queue.Add(key)
		}
	})
}

// finishTasks records what is left in the crawl's Redis on a connection
// of its own (the poller's is gone), then runs the store's post-crawl
// tasks and stores the crawlFinished notification, retrying with backoff
// until both succeeded (both are idempotent).
func (c *Controller) finishTasks(ctx context.Context, key string, cj *trawlerv1.CrawlJob, hasRedis bool) {
	// A poller stopped by a sync may still finish its round; ingesting
	// twice is harmless, but waiting keeps the drain simple to reason about.
	<-c.pollers.stop(key)
	if hasRedis {
		if client, err := newRedisClient(c.cfg, cj.Spec.ID); err == nil {
			in := newIngester(cj, c.store, c.cfg.StoreTimeout, c.log)
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			for attempt := 1; ; attempt++ {
				err = in.drain(dctx, client)
				if err == nil || dctx.Err() != nil {
					break
				}
				c.clock.Sleep(backoff(200*time.Millisecond, attempt, 5*time.Second))
			}
			cancel()
			client.Close()
			if err != nil {
				c.log.Warn("could not record the last files and errors", "crawl", cj.Spec.ID, "err", err)
			}
		}
	}
	for attempt := 1; ctx.Err() == nil; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
		crawl, err := c.store.RunPostCrawlTasks(sctx, cj.Spec.ID)
		if err == nil && c.events != nil {
			err = c.events.CrawlFinished(sctx, crawl)
		}
		cancel()
		switch {
		case err == nil, errors.Is(err, store.ErrNotFound):
			return
		case errors.Is(err, store.ErrInvalid):
			// The document says the crawl has not ended, the job says it
			// has; tearing down must not wait for that forever.
			c.log.Error("post-crawl tasks refused", "crawl", cj.Spec.ID, "err", err)
			return
		}
		delay := backoff(time.Second, attempt, 30*time.Second)
		c.log.Warn("post-crawl tasks failed, will retry", "crawl", cj.Spec.ID, "in", delay, "err", err)
		select {
		case <-ctx.Done():
		case <-c.clock.After(delay):
		}
	}
}

// release ends a finished crawl's life: the job is deleted ttl after it
// finished, and its finalizer removed once its children are gone.
func (c *Controller) release(ctx context.Context, cj *trawlerv1.CrawlJob, st trawlerv1.CrawlJobStatus, o observed) (time.Duration, error) {
	ttl := c.cfg.DefaultTTL
	if t := cj.Spec.TTLSecondsAfterFinished; t != nil && *t >= 0 {
		ttl = time.Duration(*t) * time.Second
	}
	now := c.clock.Now()
	due := st.Finished.Add(ttl)
	if now.Before(due) {
		return due.Sub(now), nil
	}
	if cj.DeletionTimestamp == nil {
		err := c.trawler.TrawlerV1().CrawlJobs(cj.Namespace).Delete(ctx, cj.Name, deleteOptions(cj.UID, nil))
		if err != nil && !isGone(err) {
			return 0, fmt.Errorf("deleting finished crawl job: %w", err)
		}
		return 0, nil
	}
	if len(o.Crawlers) > 0 || o.RedisPod != nil {
		return 0, nil // pod events bring us back
	}
	for _, p := range o.PVCs {
		if p.DeletionTimestamp == nil {
			return 0, nil
		}
	}
	next := cj.DeepCopy()
	next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == k8s.Finalizer })
	if _, err := c.trawler.TrawlerV1().CrawlJobs(cj.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil && !isGone(err) {
		return 0, fmt.Errorf("removing finalizer: %w", err)
	}
	c.log.Info("crawl job released", "crawl", cj.Spec.ID, "state", st.State)
	return 0, nil
}

// LogReader reads container logs; the sandbox provides one since its
// kubelet serves no pods/log endpoint.
type LogReader interface {
	// PodLogs returns the last tail lines of a container's log.
	PodLogs(ctx context.Context, namespace, pod, container string, tail int64) (string, error)
}

type apiLogReader struct{ kube kubernetes.Interface }

func (r apiLogReader) PodLogs(ctx context.Context, ns, pod, container string, tail int64) (string, error) {
	b, err := r.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &tail}).DoRaw(ctx)
	return string(b), err
}

// logFailedCrawl logs each crawler pod's status and, if enabled, the tail
// of its default container's log, so a failure can be understood after
// the pods are gone.
func (c *Controller) logFailedCrawl(cj *trawlerv1.CrawlJob, crawlers map[int]*corev1.Pod) {
	if c.cfg.LogFailedCrawlLines <= 0 {
		return
	}
	pods := make([]*corev1.Pod, 0, len(crawlers))
	for _, i := range slices.Sorted(maps.Keys(crawlers)) {
		p := crawlers[i]
		pods = append(pods, p)
		c.log.Info("failed crawl pod status", "crawl", cj.Spec.ID, "pod", p.Name, "phase", p.Status.Phase,
			"reason", p.Status.Reason, "containers", p.Status.ContainerStatuses)
	}
	lines := int64(c.cfg.LogFailedCrawlLines)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, p := range pods {
			logs, err := c.logs.PodLogs(ctx, p.Namespace, p.Name, p.Spec.Containers[0].Name, lines)
			if err != nil {
				logs = "Logs Not Found: " + err.Error()
			}
			c.log.Info("failed crawl pod logs", "crawl", cj.Spec.ID, "pod", p.Name, "logs", logs)
		}
	}()
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

func joinProblems(p []string) string { return strings.Join(p, "; ") }
