package operator

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"

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
			c.enqueue(key, "task-done")
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
		c.drainRedis(ctx, cj)
	}
	c.readWACZPages(ctx, cj)
	for attempt := 1; ctx.Err() == nil; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
		err := c.deleteCanceledFiles(sctx, cj.Spec.ID)
		var crawl *store.Crawl
		if err == nil {
			crawl, err = c.store.RunPostCrawlTasks(sctx, cj.Spec.ID)
		}
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

// readWACZPages has the pages of a crawl whose crawler did not send them
// through Redis read from its WACZ files, before the post-crawl tasks
// count them. A failure is logged, not retried: the pages can be read
// again later (pages/reAdd), and the crawl must not wait for them.
func (c *Controller) readWACZPages(ctx context.Context, cj *trawlerv1.CrawlJob) {
	if c.pages == nil {
		return
	}
	if err := c.pages.AddWACZPages(ctx, cj.Spec.ID); err != nil && ctx.Err() == nil {
		c.log.Warn("reading the crawl's pages from its WACZ files failed", "crawl", cj.Spec.ID, "err", err)
	}
}

// deleteCanceledFiles has the files a canceled crawl uploaded deleted
// before the post-crawl tasks recount the org's storage: a crawl
// canceled while paused had uploaded its pause WACZs.
func (c *Controller) deleteCanceledFiles(ctx context.Context, crawlID string) error {
	if c.files == nil {
		return nil
	}
	return c.files.DeleteCanceledCrawlFiles(ctx, crawlID)
}

// drainLimit bounds the final drain of a crawl's Redis. Teardown keeps the
// Redis pod and its PVC until the drain is done, bringing a paused or lost
// pod back, so a drain that fails is retried with backoff meanwhile. An
// hour covers a pod rescheduled to another node, its volume attached
// there and its image pulled, and a long store outage; a Redis still
// unreachable then is taken as lost for good (its node and volume gone):
// the post-crawl tasks go on without what it held, with an Event saying
// so, rather than holding the job and its volumes forever. The hour
// starts again when the operator restarts.
const drainLimit = time.Hour

// drainRedis records everything left in the crawl's Redis, retrying with
// backoff until it succeeds, ctx ends or drainLimit has passed.
func (c *Controller) drainRedis(ctx context.Context, cj *trawlerv1.CrawlJob) {
	in := newIngester(cj, c.store, c.cfg.StoreTimeout, c.log)
	start := c.clock.Now()
	for attempt := 1; ; attempt++ {
		// A fresh client per try: go-redis' dial circuit breaker would
		// otherwise keep answering with the old error for a while after
		// the Redis pod is back.
		client, err := newRedisClient(c.cfg, cj.Spec.ID)
		if err != nil {
			c.log.Error("cannot record the last files and errors", "crawl", cj.Spec.ID, "err", err)
			return
		}
		err = in.drain(ctx, client)
		client.Close()
		if err == nil || ctx.Err() != nil {
			return
		}
		if c.clock.Since(start) >= drainLimit {
			c.log.Error("gave up recording the last files and errors", "crawl", cj.Spec.ID, "after", drainLimit, "err", err)
			c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonRedisLost,
				"could not record the crawl's last files and errors within %v: %v", drainLimit, err)
			return
		}
		delay := backoff(500*time.Millisecond, attempt, 10*time.Second)
		c.log.Warn("recording the last files and errors failed, will retry", "crawl", cj.Spec.ID, "in", delay, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(delay):
		}
	}
}
