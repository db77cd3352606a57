package api

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/trawlerhq/trawler/store"
)

func (e *env) crawlsOf(cid string) []any {
	e.t.Helper()
	return e.mustJSON(asAdmin, "GET", e.orgPath("/crawls?cid="+cid), nil, 200)["items"].([]any)
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// everySecond stands in for the cron clockwork in tests: every schedule
// the product accepts fires each second instead of each minute or more.
func everySecond(spec string) (cron.Schedule, error) {
	if _, err := parseSchedule(spec); err != nil {
		return nil, err
	}
	return cron.Every(time.Second), nil
}

func TestScheduler(t *testing.T) {
	e := newEnv(t)
	sched := e.srv.Scheduler()
	sched.parse = everySecond
	if err := sched.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer sched.Stop()
	body := workflowBody("every minute", false)
	body["schedule"] = "* * * * *"
	cid := e.createWorkflow(asCrawler, body)["id"].(string)

	waitFor(t, "a scheduled crawl", 10*time.Second, func() bool { return len(e.crawlsOf(cid)) >= 1 })
	first := get(e.crawlsOf(cid)[0], "id").(string)

	// While the workflow's crawl is active (starting, running), a tick
	// starts nothing.
	for _, state := range []string{store.StateStarting, store.StateRunning} {
		e.setState(first, state)
		sched.fire(e.org, uuid.MustParse(cid))
		if got := len(e.crawlsOf(cid)); got != 1 {
			t.Fatalf("%d crawls while the first is %s, want 1", got, state)
		}
	}
	e.setState(first, store.StateComplete)
	waitFor(t, "the next scheduled crawl", 10*time.Second, func() bool { return len(e.crawlsOf(cid)) >= 2 })

	seen := map[string]bool{}
	for _, c := range e.crawlsOf(cid) {
		id := get(c, "id").(string)
		if !strings.HasPrefix(id, "sched-") || get(c, "manual") != false || seen[id] {
			t.Fatalf("scheduled crawl: %v", c)
		}
		seen[id] = true
	}
	for _, req := range e.launcher.launched {
		if req.Spec.Manual {
			t.Fatalf("scheduled crawl launched as manual: %+v", req.Spec)
		}
	}

	// Unscheduling takes effect at once (Reload), no further crawls.
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid), map[string]any{"schedule": ""}, 200)
	time.Sleep(200 * time.Millisecond)
	// End every crawl, so only the schedule (then the quota, then Stop)
	// can be what starts nothing below.
	for _, c := range e.crawlsOf(cid) {
		if id := get(c, "id").(string); store.IsActive(get(c, "state").(string)) {
			e.setState(id, store.StateComplete)
		}
	}
	n := len(e.crawlsOf(cid))
	time.Sleep(2500 * time.Millisecond)
	if got := len(e.crawlsOf(cid)); got != n {
		t.Fatalf("%d crawls after unscheduling, want %d", got, n)
	}

	// A full org's tick is recorded as a skipped crawl, finished at once
	// and launched nowhere (upstream-2026 §6.6).
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{"storageQuota": 1}, 200)
	if _, err := e.store.Raw().Collection("organizations").UpdateByID(t.Context(), e.org,
		map[string]any{"$set": map[string]any{"bytesStored": 5}}); err != nil {
		t.Fatal(err)
	}
	launched := e.launcher.count()
	e.mustJSON(asCrawler, "PATCH", e.orgPath("/crawlconfigs/"+cid), map[string]any{"schedule": "*/2 * * * *"}, 200)
	waitFor(t, "a crawl skipped for the storage quota", 10*time.Second, func() bool { return len(e.crawlsOf(cid)) > n })
	for _, c := range e.crawlsOf(cid) {
		if get(c, "state") == store.StateSkippedStorageQuota && get(c, "finished") == nil {
			t.Fatalf("skipped crawl not finished: %v", c)
		}
		if s := get(c, "state").(string); s != store.StateSkippedStorageQuota && s != store.StateComplete {
			t.Fatalf("crawl with a full org: %v", c)
		}
	}
	if got := e.launcher.count(); got != launched {
		t.Fatalf("%d crawls launched with a full org, want %d", got, launched)
	}

	// Stopped (leadership lost): nothing runs.
	sched.Stop()
	n = len(e.crawlsOf(cid))
	e.mustJSON(asAdmin, "POST", e.orgPath("/quotas"), map[string]any{}, 200)
	time.Sleep(2 * time.Second)
	if got := len(e.crawlsOf(cid)); got != n {
		t.Fatalf("%d crawls after Stop, want %d", got, n)
	}
}

// TestSchedulerRescan: a change made through another replica is picked
// up by the periodic rescan.
func TestSchedulerRescan(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.ScheduleRescan = 300 * time.Millisecond
	leader := New(cfg, e.deps())
	leader.Scheduler().parse = everySecond
	if err := leader.Scheduler().Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer leader.Scheduler().Stop()
	body := workflowBody("elsewhere", false)
	body["schedule"] = "* * * * *"
	cid := e.createWorkflow(asCrawler, body)["id"].(string) // through e.srv, not the leader
	waitFor(t, "a crawl started by the leader", 5*time.Second, func() bool { return len(e.crawlsOf(cid)) >= 1 })
}

// TestRelaunchOrphans: a crawl recorded but never launched (a crash
// between the two writes) is launched by the leader's sweep; a fresh one
// is left alone.
func TestRelaunchOrphans(t *testing.T) {
	e := newEnv(t)
	_, fresh := e.startCrawl(asCrawler, "wf")
	// The orphan is another workflow's: a workflow has one crawl at a time.
	cid := e.createWorkflow(asCrawler, workflowBody("orphaned", false))["id"].(string)
	wf, err := e.store.GetCrawlConfig(t.Context(), e.org, uuid.MustParse(cid))
	if err != nil {
		t.Fatal(err)
	}
	orphan := newCrawl(wf, wf.Config, wf.CreatedBy, true, time.Now().UTC().Add(-5*time.Minute).Truncate(time.Second))
	orphan.ID = "manual-orphan"
	if err := e.store.AddCrawl(t.Context(), orphan); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.relaunchOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	calls := e.launcher.callList()
	if !slices.Contains(calls, "launch manual-orphan") || slices.Contains(calls[1:], "launch "+fresh) {
		t.Fatalf("launcher calls: %v", calls)
	}
}
