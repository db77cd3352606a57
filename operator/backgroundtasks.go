package operator

import (
	"context"
	"sync"
	"time"
)

// backgroundTasks runs the work a sync starts and must not wait for, each
// at most once per task key: a finished crawl's post-crawl tasks (keyed
// by the job key), its crawlStarted notification (startedKey) and the
// report of why the operator failed it (failureKey). A task marked done
// stays done until the job is gone, so the syncs that follow can record
// it in the status (a condition) and not start it again.
type backgroundTasks struct {
	mu      sync.Mutex
	running map[string]bool
	doneSet map[string]bool
	wg      sync.WaitGroup
}

func newBackgroundTasks() *backgroundTasks {
	return &backgroundTasks{running: map[string]bool{}, doneSet: map[string]bool{}}
}

// start runs fn as task key unless it runs already or has completed.
func (b *backgroundTasks) start(key string, fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running[key] || b.doneSet[key] {
		return
	}
	b.running[key] = true
	b.wg.Go(func() {
		fn()
		b.mu.Lock()
		delete(b.running, key)
		b.mu.Unlock()
	})
}

// markDone records that task key completed.
func (b *backgroundTasks) markDone(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.doneSet[key] = true
}

// done reports whether task key completed.
func (b *backgroundTasks) done(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.doneSet[key]
}

// forget drops what is known of task key, once its job is gone.
func (b *backgroundTasks) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.doneSet, key)
}

// wait blocks until every started task has returned.
func (b *backgroundTasks) wait() { b.wg.Wait() }

// retryInBackground runs fn as background task task, each try bounded
// by the store timeout, retrying with backoff until it succeeds; then it
// marks the task done and syncs the job key again, whose status records
// it.
func (c *Controller) retryInBackground(ctx context.Context, key, task, what, crawlID string, fn func(context.Context) error) {
	c.background.start(task, func() {
		for attempt := 1; ctx.Err() == nil; attempt++ {
			sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
			err := fn(sctx)
			cancel()
			if err == nil {
				c.background.markDone(task)
				c.enqueue(key, "task-done")
				return
			}
			delay := backoff(time.Second, attempt, 30*time.Second)
			c.log.Warn(what+" failed, will retry", "crawl", crawlID, "in", delay, "err", err)
			select {
			case <-ctx.Done():
			case <-c.clock.After(delay):
			}
		}
	})
}
