package operator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// Admission: whether a CrawlJob may get children at all. Its spec must be
// valid (problems go to the SpecValid condition and a Warning Event) and,
// until it has run, its org must have a free concurrency slot
// (maxConcurrentCrawls). decide applies both; observe asks the org's
// quota only while the gate applies.

// validateSpec lists what is wrong with a CrawlJob's spec.
func validateSpec(cj *trawlerv1.CrawlJob, cfg Config, configMapOK bool) []string {
	var p []string
	if s := cj.Spec.Scale; s < 1 || int(s) > cfg.MaxCrawlScale {
		p = append(p, fmt.Sprintf("spec.scale %d is outside 1..%d", s, cfg.MaxCrawlScale))
	}
	if !configMapOK {
		p = append(p, fmt.Sprintf("crawl config ConfigMap %q with key %q is missing", cj.Spec.ConfigMap, k8s.ConfigMapKey))
	}
	if cj.Spec.CrawlTimeout < 0 {
		p = append(p, fmt.Sprintf("spec.crawlTimeout %d is negative", cj.Spec.CrawlTimeout))
	}
	if cj.Spec.MaxCrawlSize < 0 {
		p = append(p, fmt.Sprintf("spec.maxCrawlSize %d is negative", cj.Spec.MaxCrawlSize))
	}
	if t := cj.Spec.TTLSecondsAfterFinished; t != nil && *t < 0 {
		p = append(p, fmt.Sprintf("spec.ttlSecondsAfterFinished %d is negative", *t))
	}
	return p
}

// gatedByOrgLimit reports whether the org's concurrency limit applies to a
// crawl in state that started running at runningSince: it does until the crawl is let in and has run. A crawl that has
// run is never sent back to wait (that would delete its pods and PVCs
// mid-crawl), whatever its state says or the quota becomes.
func gatedByOrgLimit(state string, runningSince *metav1.Time) bool {
	return runningSince == nil && (state == store.StateStarting || state == store.StateWaitingOrgLimit)
}

// orgSlotFree is the org concurrency gate: crawls already past starting
// hold their slots; the starting ones get the rest, oldest first (by
// creation time, then name).
func orgSlotFree(cj *trawlerv1.CrawlJob, siblings []*trawlerv1.CrawlJob, maxConcurrent int) bool {
	if maxConcurrent <= 0 {
		return true
	}
	holding := 0
	var waiting []*trawlerv1.CrawlJob
	for _, s := range siblings {
		switch {
		case s.UID == cj.UID:
			waiting = append(waiting, s)
		case s.Status.Finished != nil || store.IsFinished(s.Status.State) || s.DeletionTimestamp != nil:
		case s.Status.State == "" || s.Status.State == store.StateStarting || s.Status.State == store.StateWaitingOrgLimit:
			waiting = append(waiting, s)
		default:
			holding++
		}
	}
	sort.Slice(waiting, func(a, b int) bool {
		ta, tb := waiting[a].CreationTimestamp, waiting[b].CreationTimestamp
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return waiting[a].Name < waiting[b].Name
	})
	for pos, s := range waiting {
		if s.UID == cj.UID {
			return holding+pos < maxConcurrent
		}
	}
	return holding < maxConcurrent
}

func joinProblems(p []string) string { return strings.Join(p, "; ") }

// orgLimitAllows applies the org's maxConcurrentCrawls quota.
func (c *Controller) orgLimitAllows(ctx context.Context, cj *trawlerv1.CrawlJob) (bool, error) {
	oid, err := uuid.Parse(cj.Spec.OID)
	if err != nil {
		return true, nil // no org to limit by
	}
	maxConcurrent, err := c.orgQuota(ctx, oid)
	if err != nil {
		return false, err
	}
	if maxConcurrent <= 0 {
		return true, nil
	}
	siblings, err := c.jobsByOrg.list(cj.Namespace, cj.Spec.OID)
	if err != nil {
		return false, fmt.Errorf("listing org crawls: %w", err)
	}
	return orgSlotFree(cj, siblings, maxConcurrent), nil
}

// orgQuotaTTL is how long an org's concurrency quota is cached: a burst
// of new crawls then costs one database read per org, not one per sync.
const orgQuotaTTL = 5 * time.Second

type cachedQuota struct {
	org *store.Org // nil: no such org
	at  time.Time
}

// orgQuota returns an org's maxConcurrentCrawls (0 = unlimited).
func (c *Controller) orgQuota(ctx context.Context, oid uuid.UUID) (int, error) {
	org, err := c.cachedOrg(ctx, oid)
	if err != nil || org == nil {
		return 0, err
	}
	return org.Quotas.MaxConcurrentCrawls, nil
}

// cachedOrg returns an org as read at most orgQuotaTTL ago, nil when it
// does not exist.
func (c *Controller) cachedOrg(ctx context.Context, oid uuid.UUID) (*store.Org, error) {
	now := c.clock.Now()
	if q, ok := c.quotas.Load(oid); ok && now.Sub(q.(cachedQuota).at) < orgQuotaTTL {
		return q.(cachedQuota).org, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
	defer cancel()
	org, err := c.store.GetOrg(ctx, oid)
	switch {
	case errors.Is(err, store.ErrNotFound):
		org = nil
	case err != nil:
		return nil, fmt.Errorf("reading org quota: %w", err)
	}
	c.quotas.Store(oid, cachedQuota{org: org, at: now})
	return org, nil
}

// quotaSkip is the state a crawl's first sync ends it in when its org is
// over a quota (upstream-2026 §6.6), "" when it may start.
func (c *Controller) quotaSkip(ctx context.Context, cj *trawlerv1.CrawlJob, now time.Time) (string, error) {
	oid, err := uuid.Parse(cj.Spec.OID)
	if err != nil {
		return "", nil
	}
	org, err := c.cachedOrg(ctx, oid)
	if err != nil || org == nil {
		return "", err
	}
	return skipState(org, now), nil
}

// reportProblems emits a Warning Event when the spec's problems change,
// not on every sync.
func (c *Controller) reportProblems(cj *trawlerv1.CrawlJob, problems []string) {
	if len(problems) == 0 {
		return
	}
	prev := meta.FindStatusCondition(cj.Status.Conditions, CondSpecValid)
	msg := joinProblems(problems)
	if prev != nil && prev.Status == metav1.ConditionFalse && prev.Message == msg {
		return
	}
	c.recorder.Event(cj, corev1.EventTypeWarning, ReasonInvalidSpec, msg)
}
