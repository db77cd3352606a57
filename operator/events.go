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
	skey := startedKey(key)
	id := cj.Spec.ID
	c.finishers.start(skey, func() {
		for attempt := 1; ctx.Err() == nil; attempt++ {
			sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
			crawl, err := c.store.GetCrawlByID(sctx, id)
			if err == nil {
				err = c.events.CrawlStarted(sctx, crawl)
			}
			cancel()
			if err == nil {
				c.finishers.markDone(skey)
				c.queue.Add(key)
				return
			}
			delay := backoff(time.Second, attempt, 30*time.Second)
			c.log.Warn("crawlStarted notification failed, will retry", "crawl", id, "in", delay, "err", err)
			select {
			case <-ctx.Done():
			case <-c.clock.After(delay):
			}
		}
	})
}
