package operator

import (
	"context"
	"time"

	"github.com/trawlerhq/trawler/store"
)

// EventSender is told when crawls start running and when they finish; it
// stores their webhook notifications, which are delivered in the
// background (webhook.Notifier implements it). Both calls may be repeated
// for a crawl: only the first stores anything.
type EventSender interface {
	CrawlStarted(ctx context.Context, c *store.Crawl) error
	CrawlFinished(ctx context.Context, c *store.Crawl) error
}

// notifyStarted reports a crawl that just started running, in the
// background, so that the sync never waits for it; it retries with
// backoff until the notification is stored or the controller stops.
func (c *Controller) notifyStarted(ctx context.Context, crawl *store.Crawl) {
	if c.events == nil {
		return
	}
	c.finishers.start("started/"+crawl.ID, func() {
		for attempt := 1; ctx.Err() == nil; attempt++ {
			sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
			err := c.events.CrawlStarted(sctx, crawl)
			cancel()
			if err == nil {
				return
			}
			delay := backoff(time.Second, attempt, 30*time.Second)
			c.log.Warn("crawlStarted notification failed, will retry", "crawl", crawl.ID, "in", delay, "err", err)
			select {
			case <-ctx.Done():
			case <-c.clock.After(delay):
			}
		}
	})
}
