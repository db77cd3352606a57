package operator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// TestWaitingCapacityShowsTheSchedulersReason asks for more CPU than any
// node has: the crawl waits for capacity and says why.
func TestWaitingCapacityShowsTheSchedulersReason(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	huge := resource.MustParse("100")
	cfg.CrawlerCPU = &huge
	cfg.StartingTimeout = 2 * time.Second
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{})
	h.waitState(id, 20*time.Second, store.StateWaitingCapacity)
	h.waitFor("scheduler's reason in the status", 10*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && strings.Contains(j.Status.WaitingReason, "Insufficient cpu")
	})
	if _, ok := h.pods(id)[k8s.RedisName(id)]; ok {
		t.Error("redis pod created although no crawler ever ran")
	}
}

// TestOrgConcurrencyLimit lets one crawl of an org run at a time; the
// next waits in waiting_org_limit and starts when the first ends.
func TestOrgConcurrencyLimit(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	ctx := context.Background()
	org, err := h.store.GetOrg(ctx, h.org)
	if err != nil {
		t.Fatal(err)
	}
	org.Quotas.MaxConcurrentCrawls = 1
	if err := h.store.SetOrgQuotas(ctx, h.org, org.Quotas); err != nil {
		t.Fatal(err)
	}
	h.startOperator(h.config())
	first := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=40&sim-page-ms=500"})
	h.waitState(first, 30*time.Second, store.StateRunning)
	second := h.startCrawl(crawlOpts{})
	h.waitState(second, 10*time.Second, store.StateWaitingOrgLimit)
	if n := len(h.pods(second)); n != 0 {
		t.Errorf("waiting crawl has %d pods", n)
	}
	h.waitState(first, 60*time.Second, store.StateComplete)
	if final := h.waitState(second, 60*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Errorf("second crawl ended %s", final)
	}
}

// TestFailedCrawlLogsWithThrowingCrawler makes every crawler run throw
// (through its namespace's CRAWL_ARGS): the crawler reports failed after
// three failures, the crawl fails, and the operator logs the pods' status
// and log tails.
func TestFailedCrawlLogsWithThrowingCrawler(t *testing.T) {
	h := newHarness(t)
	h.crawlArgs(" --sim.throwAtPage 1 --sim.failWindow 600s")
	cfg := h.config()
	cfg.LogFailedCrawlLines = 5
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{})
	if final := h.waitState(id, 90*time.Second, store.FinishedStates...); final != store.StateFailed {
		t.Fatalf("final state %s", final)
	}
	h.waitFor("failed pod logs", 10*time.Second, func() bool {
		l := h.logs.String()
		return strings.Contains(l, "failed crawl pod status") && strings.Contains(l, "failed crawl pod logs")
	})
	c := h.crawl(id)
	p := c.Pods["0"]
	if p.Restarts < 2 || p.ExitCode == nil || *p.ExitCode != 9 {
		t.Errorf("pod status in the crawl document %+v", p)
	}
}

// TestInvalidSpecIsReportedNotRetried gives a job an out-of-range scale
// and no crawl config: a Warning Event and a condition name the problem,
// the operator keeps going, and the crawl fails once its config stays
// missing.
func TestInvalidSpecIsReportedNotRetried(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	cfg.StartingTimeout = 3 * time.Second
	h.startOperator(cfg)
	ctx := context.Background()
	id := "manual-invalid-" + strings.ToLower(h.ns)
	if err := h.store.AddCrawl(ctx, &store.Crawl{ID: id, OID: h.org, State: store.StateStarting}); err != nil {
		t.Fatal(err)
	}
	cj := &trawlerv1.CrawlJob{
		ObjectMeta: metav1.ObjectMeta{Name: k8s.CrawlJobName(id), Namespace: h.ns,
			Labels: map[string]string{k8s.LabelCrawl: id, k8s.LabelRole: k8s.RoleJob}},
		Spec: trawlerv1.CrawlJobSpec{ID: id, OID: h.org.String(), Scale: 9, ConfigMap: k8s.CrawlConfigMapName(id)},
	}
	if _, err := h.trawler.TrawlerV1().CrawlJobs(h.ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("condition naming the problems", 10*time.Second, func() bool {
		j, err := h.job(id)
		if err != nil {
			return false
		}
		c := meta.FindStatusCondition(j.Status.Conditions, operator.CondSpecValid)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "spec.scale 9") &&
			strings.Contains(c.Message, "ConfigMap")
	})
	h.waitFor("warning event", 10*time.Second, func() bool {
		evs, err := h.kube.CoreV1().Events(h.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == operator.ReasonInvalidSpec && e.Type == corev1.EventTypeWarning {
				return true
			}
		}
		return false
	})
	h.waitState(id, 20*time.Second, store.StateFailed)
	if strings.Contains(h.logs.String(), "sync failed") {
		t.Errorf("a user error was retried as a failure:\n%s", h.logs.String())
	}
}

// TestCrawlLetInAfterAMinuteIsRecordedRunning is the review's scenario: an
// org limited to one crawl at a time, a long crawl A, a second crawl B
// queued for more than a minute (past the starting timeout), then A
// stopped. B must be recorded running, with live stats, while it crawls:
// not stay "waiting" until it ends.
func TestCrawlLetInAfterAMinuteIsRecordedRunning(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	ctx := context.Background()
	if err := h.store.SetOrgQuotas(ctx, h.org, store.OrgQuotas{MaxConcurrentCrawls: 1}); err != nil {
		t.Fatal(err)
	}
	cfg := h.config()
	cfg.StartingTimeout = 60 * time.Second // upstream's, which B's wait must exceed
	h.startOperator(cfg)
	a := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=3000&sim-page-ms=1500"})
	h.waitState(a, 30*time.Second, store.StateRunning)
	b := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=60&sim-page-ms=500"})
	h.waitState(b, 10*time.Second, store.StateWaitingOrgLimit)
	job, err := h.job(b)
	if err != nil {
		t.Fatal(err)
	}
	queuedFor := 75 * time.Second
	h.waitFor("B queued for 75 s", queuedFor+30*time.Second, func() bool {
		if s := h.crawl(b).State; s != store.StateWaitingOrgLimit {
			t.Fatalf("B is %s while A runs", s)
		}
		return time.Since(job.CreationTimestamp.Time) >= queuedFor
	})
	if err := h.launch.StopCrawl(ctx, a); err != nil {
		t.Fatal(err)
	}

	var seen []string
	var liveStats bool
	h.waitFor("B to end", 90*time.Second, func() bool {
		c := h.crawl(b)
		if len(seen) == 0 || seen[len(seen)-1] != c.State {
			seen = append(seen, c.State)
		}
		if c.State == store.StateRunning && c.Stats != nil && c.Stats.Done > 0 {
			liveStats = true
		}
		return store.IsFinished(c.State)
	})
	t.Logf("B went %v", seen)
	if !slices.Contains(seen, store.StateRunning) || !liveStats {
		t.Errorf("B was never recorded running with live stats: states %v", seen)
	}
	if final := seen[len(seen)-1]; final != store.StateComplete {
		t.Errorf("B ended %s", final)
	}
}
