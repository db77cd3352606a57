package operator

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// startedKey is the finishers key of a crawl's crawlStarted notification.
func startedKey(key string) string { return "started/" + key }

// notifyStarted stores the crawlStarted notification of a running crawl
// in the background, so that the sync never waits for it, retrying with
// backoff until it is stored; then the StartedNotified condition records
// that (crawlStatus sets it), so it is stored exactly once even across
// operator restarts (the notifier ignores a repeat).
func (c *Controller) notifyStarted(ctx context.Context, key string, cj *trawlerv1.CrawlJob, st trawlerv1.CrawlJobStatus) {
	if c.events == nil || st.State != store.StateRunning || meta.IsStatusConditionTrue(st.Conditions, CondStartedNotified) {
		return
	}
	id := cj.Spec.ID
	c.retryInBackground(ctx, key, startedKey(key), "crawlStarted notification", id, func(ctx context.Context) error {
		crawl, err := c.store.GetCrawlByID(ctx, id)
		if err != nil {
			return err
		}
		return c.events.CrawlStarted(ctx, crawl)
	})
}

// retryInBackground runs fn as the finishers' task fkey, each try bounded
// by the store timeout, retrying with backoff until it succeeds; then it
// marks fkey done and syncs the job key again, whose status records it.
func (c *Controller) retryInBackground(ctx context.Context, key, fkey, what, crawlID string, fn func(context.Context) error) {
	c.finishers.start(fkey, func() {
		for attempt := 1; ctx.Err() == nil; attempt++ {
			sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
			err := fn(sctx)
			cancel()
			if err == nil {
				c.finishers.markDone(fkey)
				c.queue.Add(key)
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
