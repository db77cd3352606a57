package operator

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

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
