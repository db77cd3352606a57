package operator

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// startedKey is the background task key of a crawl's crawlStarted notification.
func startedKey(key string) string { return "started/" + key }

// notifyStarted stores the crawlStarted notification of a running crawl,
// or of one that ran and ended within this pass, in the background, so
// that the sync never waits for it, retrying with backoff until it is
// stored; then the StartedNotified condition records that (crawlStatus
// sets it), so it is stored exactly once even across operator restarts
// (the notifier ignores a repeat).
func (c *Controller) notifyStarted(ctx context.Context, key string, cj *trawlerv1.CrawlJob, st trawlerv1.CrawlJobStatus, p plan, o observed) {
	if c.notifier == nil || meta.IsStatusConditionTrue(st.Conditions, CondStartedNotified) ||
		(st.State != store.StateRunning && !enteredRunning(p, o)) {
		return
	}
	id := cj.Spec.ID
	c.retryInBackground(ctx, key, startedKey(key), "crawlStarted notification", id, func(ctx context.Context) error {
		crawl, err := c.store.GetCrawlByID(ctx, id)
		if err != nil {
			return err
		}
		return c.notifier.CrawlStarted(ctx, crawl)
	})
}

// enteredRunning reports whether the store moved the crawl to running in
// this pass.
func enteredRunning(p plan, o observed) bool {
	for i, res := range o.Answers {
		if res.Changed && p.Transitions[i].To == store.StateRunning {
			return true
		}
	}
	return false
}
