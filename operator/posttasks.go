package operator

import (
	"context"
	"errors"
	"time"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// startPostCrawlTasks runs the post-crawl tasks of a finished crawl in
// the background, once; when they are done the job is synced again, and
// crawlStatus records that in the status, so a restarted operator does
// not redo them.
func (c *Controller) startPostCrawlTasks(ctx context.Context, key string, cj *trawlerv1.CrawlJob, hasRedis bool) {
	job := cj.DeepCopy()
	c.background.start(key, func() {
		c.finishTasks(ctx, key, job, hasRedis)
		if ctx.Err() == nil {
			c.background.markDone(key)
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
		if err == nil && c.notifier != nil {
			err = c.notifier.CrawlFinished(sctx, crawl)
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
