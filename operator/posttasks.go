package operator

import (
	"context"
	"errors"
	"sync"
	"time"

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

// startPostCrawlTasks runs the post-crawl tasks of a finished crawl in
// the background, once; when they are done the job is synced again, and
// crawlStatus records that in the status, so a restarted operator does
// not redo them.
func (c *Controller) startPostCrawlTasks(ctx context.Context, key string, cj *trawlerv1.CrawlJob, hasRedis bool) {
	job := cj.DeepCopy()
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
