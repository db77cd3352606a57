package operator

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// runningSince is crawler pod i running since start.
func runningSince(i int, start time.Time) *corev1.Pod {
	p := crawlerPodIn(i, corev1.PodRunning)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}}}}
	return p
}

// exited is crawler pod i that ran from start to end.
func exited(i int, start, end time.Time) *corev1.Pod {
	p := crawlerPodIn(i, corev1.PodSucceeded)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			StartedAt: metav1.NewTime(start), FinishedAt: metav1.NewTime(end)}}}}
	return p
}

func TestPodExecSeconds(t *testing.T) {
	since := t0.Add(time.Minute)
	now := since.Add(time.Minute)
	cases := []struct {
		name     string
		pods     map[int]*corev1.Pod
		want     int64
		wantExit bool
	}{
		{"None", nil, 0, false},
		{"RunningBeforeSince", map[int]*corev1.Pod{0: runningSince(0, t0)}, 60, false},
		{"StartedAfterSince", map[int]*corev1.Pod{0: runningSince(0, since.Add(45*time.Second))}, 15, false},
		// The sum over pods: two pods running a minute are two minutes.
		{"TwoPods", map[int]*corev1.Pod{0: runningSince(0, t0), 1: runningSince(1, t0)}, 120, false},
		{"ExitedSince", map[int]*corev1.Pod{0: exited(0, t0, since.Add(20*time.Second))}, 20, true},
		{"ExitedBefore", map[int]*corev1.Pod{0: exited(0, t0, since.Add(-time.Second))}, 0, false},
		{"NoContainerStatus", map[int]*corev1.Pod{0: crawlerPodIn(0, corev1.PodPending)}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, exit := podExecSeconds(c.pods, since, now)
			if got != c.want || exit != c.wantExit {
				t.Fatalf("got %d, %v; want %d, %v", got, exit, c.want, c.wantExit)
			}
		})
	}
}

func TestAccountExec(t *testing.T) {
	lut := t0.Add(time.Minute)
	quiet := &redisState{Reachable: true, Since: lut.Add(-time.Minute)}
	// A count five seconds before a month ends.
	monthEnd := time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC).Add(time.Second)
	monthLut := monthEnd.Add(-5 * time.Second)
	cfg := testConfig()
	cfg.ExecIdleAccountingInterval = 10 * time.Minute
	cases := []struct {
		name    string
		state   string
		job     *trawlerv1.CrawlJob
		crawler map[int]*corev1.Pod
		now     time.Time
		want    *execTick
		// unknown: the operator does not know the clock (lut otherwise).
		unknown bool
		// quotaFreeAt: when the org was last read without a quota (zero:
		// it had one); redis is what the poller shows.
		quotaFreeAt time.Time
		redis       *redisState
	}{
		// The first pass with a running crawl learns the clock.
		{"First", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)}, lut, &execTick{}, true, time.Time{}, nil},
		{"FirstWithoutPods", store.StateRunning, newJob(1), nil, lut, nil, true, time.Time{}, nil},
		// A new leader learns it before what the pass leads to.
		{"FirstAfterExit", store.StateComplete, newJob(1), map[int]*corev1.Pod{0: exited(0, t0, lut)}, lut,
			&execTick{Wait: true}, true, time.Time{}, nil},
		{"FirstWhenDeleted", store.StateCanceled, newJob(1, func(cj *trawlerv1.CrawlJob) { cj.DeletionTimestamp = mtime(lut) }),
			map[int]*corev1.Pod{0: runningSince(0, t0)}, lut, &execTick{Wait: true}, true, time.Time{}, nil},
		{"NotDue", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)}, lut.Add(59 * time.Second), nil, false, time.Time{}, nil},
		{"Due", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)}, lut.Add(time.Minute),
			&execTick{Since: &lut, Seconds: 60}, false, time.Time{}, nil},
		{"DueTwoPods", store.StateRunning, newJob(2),
			map[int]*corev1.Pod{0: runningSince(0, t0), 1: runningSince(1, t0)}, lut.Add(time.Minute), &execTick{Since: &lut, Seconds: 120}, false, time.Time{}, nil},
		// A crawler's exit is counted at once.
		{"Exit", store.StateComplete, newJob(1), map[int]*corev1.Pod{0: exited(0, t0, lut.Add(10*time.Second))},
			lut.Add(15 * time.Second), &execTick{Since: &lut, Seconds: 10, Wait: true}, false, time.Time{}, nil},
		// A deleted (canceled) crawl is counted at once, before teardown.
		{"Deleted", store.StateCanceled, newJob(1, func(cj *trawlerv1.CrawlJob) { cj.DeletionTimestamp = mtime(lut) }),
			map[int]*corev1.Pod{0: runningSince(0, t0)}, lut.Add(5 * time.Second), &execTick{Since: &lut, Seconds: 5, Wait: true}, false, time.Time{}, nil},
		// Idle: due, but nothing ran since the last count, so nothing is
		// written.
		{"NothingRan", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: exited(0, t0, lut.Add(-time.Second))},
			lut.Add(2 * time.Minute), nil, false, time.Time{}, nil},
		// Waiting and paused crawls are charged nothing.
		{"Waiting", store.StateWaitingCapacity, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)}, lut.Add(time.Hour), nil, false, time.Time{}, nil},
		{"Starting", store.StateStarting, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)}, lut, nil, false, time.Time{}, nil},
		{"Paused", store.StatePausedTimeQuota, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)}, lut.Add(time.Hour), nil, false, time.Time{}, nil},
		// An idle crawl of an org without quotas is not counted while it
		// stays idle: its org is looked at every idle interval.
		{"IdleQuotaFreeNotDue", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)},
			lut.Add(9 * time.Minute), nil, false, lut, quiet},
		{"IdleQuotaFreeLook", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)},
			lut.Add(10 * time.Minute), &execTick{Since: &lut, Seconds: 600, Look: true}, false, lut, quiet},
		{"IdleQuotaFreeLookedLately", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)},
			lut.Add(15 * time.Minute), nil, false, lut.Add(10 * time.Minute), quiet},
		{"IdleQuotaFreeLookDue", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)},
			lut.Add(20 * time.Minute), &execTick{Since: &lut, Seconds: 1200, Look: true}, false, lut.Add(10 * time.Minute), quiet},
		// A crawler's exit is counted at once, idle or not.
		{"IdleQuotaFreeExit", store.StateComplete, newJob(1), map[int]*corev1.Pod{0: exited(0, t0, lut.Add(10*time.Second))},
			lut.Add(15 * time.Second), &execTick{Since: &lut, Seconds: 10, Wait: true}, false, lut, quiet},
		// Not idle (its Redis changed after the count, or cannot be read),
		// or its org has a quota: every interval.
		{"BusyQuotaFree", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)},
			lut.Add(time.Minute), &execTick{Since: &lut, Seconds: 60}, false, lut, &redisState{Reachable: true, Since: lut.Add(time.Second)}},
		{"UnreachableQuotaFree", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)},
			lut.Add(time.Minute), &execTick{Since: &lut, Seconds: 60}, false, lut, &redisState{Since: lut.Add(-time.Hour)}},
		{"IdleWithQuota", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)},
			lut.Add(time.Minute), &execTick{Since: &lut, Seconds: 60}, false, time.Time{}, quiet},
		// A new month is counted at once, so the seconds before it stay in
		// the month they ran in.
		{"NewMonth", store.StateRunning, newJob(1), map[int]*corev1.Pod{0: runningSince(0, t0)},
			monthEnd.Add(5 * time.Second), &execTick{Since: &monthLut, Seconds: 4, Until: monthEnd.Add(-time.Second)}, false, lut, quiet},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := plan{Reaches: c.state}
			o := observed{Now: c.now, Crawlers: c.crawler, ExecClock: &lut, ExecQuotaFreeAt: c.quotaFreeAt, Redis: c.redis}
			if c.now.After(monthEnd) {
				o.ExecClock = &monthLut
			}
			if c.unknown {
				o.ExecClock = nil
			}
			p.accountExec(c.job, o, cfg)
			switch {
			case c.want == nil && p.Exec != nil:
				t.Fatalf("tick %+v, want none", *p.Exec)
			case c.want != nil && p.Exec == nil:
				t.Fatalf("no tick, want %+v", *c.want)
			case c.want != nil && (p.Exec.Seconds != c.want.Seconds || (p.Exec.Since == nil) != (c.want.Since == nil) ||
				p.Exec.Since != nil && !p.Exec.Since.Equal(*c.want.Since) || p.Exec.Wait != c.want.Wait || p.Exec.Look != c.want.Look ||
				!c.want.Until.IsZero() && !p.Exec.Until.Equal(c.want.Until)):
				t.Fatalf("tick %+v, want %+v", *p.Exec, *c.want)
			}
		})
	}
}

func TestQuotaPauseReason(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	used := map[string]int64{"2026-12": 60}
	cases := []struct {
		name    string
		org     store.Org
		pending int64
		want    string
	}{
		{"NoQuotas", store.Org{BytesStored: 1 << 40, ExecCounters: store.ExecCounters{MonthlyExecSeconds: used}}, 0, ""},
		{"ExecReached", store.Org{Quotas: store.OrgQuotas{MaxExecMinutesPerMonth: 1},
			ExecCounters: store.ExecCounters{MonthlyExecSeconds: used}}, 0, store.StatePausedTimeQuota},
		{"StorageReached", store.Org{Quotas: store.OrgQuotas{StorageQuota: 100}, BytesStored: 100}, 0, store.StatePausedStorageQuota},
		{"StorageWithPending", store.Org{Quotas: store.OrgQuotas{StorageQuota: 100}, BytesStored: 60}, 40, store.StatePausedStorageQuota},
		{"StorageLeft", store.Org{Quotas: store.OrgQuotas{StorageQuota: 100}, BytesStored: 60}, 39, ""},
		// Storage is checked first, as upstream.
		{"Both", store.Org{Quotas: store.OrgQuotas{StorageQuota: 1, MaxExecMinutesPerMonth: 1}, BytesStored: 1,
			ExecCounters: store.ExecCounters{MonthlyExecSeconds: used}}, 0, store.StatePausedStorageQuota},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := quotaPauseReason(&c.org, c.pending, now); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestSkipState(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	used := store.ExecCounters{MonthlyExecSeconds: map[string]int64{"2026-12": 60}}
	cases := []struct {
		name string
		org  store.Org
		want string
	}{
		{"NoQuotas", store.Org{BytesStored: 5, ExecCounters: used}, ""},
		{"Storage", store.Org{Quotas: store.OrgQuotas{StorageQuota: 5}, BytesStored: 5}, store.StateSkippedStorageQuota},
		{"Exec", store.Org{Quotas: store.OrgQuotas{MaxExecMinutesPerMonth: 1}, ExecCounters: used}, store.StateSkippedTimeQuota},
		{"BothStorageFirst", store.Org{Quotas: store.OrgQuotas{StorageQuota: 5, MaxExecMinutesPerMonth: 1}, BytesStored: 9,
			ExecCounters: used}, store.StateSkippedStorageQuota},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := skipState(&c.org, now); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestDecideSkipsOverQuota: a crawl whose org is over a quota at its
// first sync ends at once in the skipped state, with no children; a
// crawl past its first sync is not skipped (it is paused instead).
func TestDecideSkipsOverQuota(t *testing.T) {
	o := observed{Now: t0, ConfigMapOK: true, OrgSlotFree: true, QuotaSkip: store.StateSkippedTimeQuota}
	p := decide(newJob(1), o, testConfig())
	if len(p.Transitions) != 1 || p.Transitions[0].To != store.StateSkippedTimeQuota || !p.Transitions[0].Finished ||
		len(p.Children.CrawlerPods) != 0 || p.Children.RedisPod || !p.Teardown {
		t.Fatalf("plan %+v", p)
	}
	started := newJob(1, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.State = store.StateStarting }))
	if p := decide(started, o, testConfig()); len(p.Transitions) != 0 && p.Transitions[0].To == store.StateSkippedTimeQuota {
		t.Fatalf("skipped after its first sync: %+v", p.Transitions)
	}
}

// TestChargeExecLearnsTheClock: a tick without a clock (a crawl just
// started, or a new leader) reads it from the store: a crawl never
// counted starts it at now and nothing is written; one an earlier leader
// counted is counted from its stored clock at once, so a handoff loses no
// seconds. A batch is two store calls at most, whatever its size: the
// clocks it learns, then the counts.
func TestChargeExecLearnsTheClock(t *testing.T) {
	m := newMemStore()
	m.addCrawl("new")
	m.addCrawl("counted")
	m.addCrawl("known")
	stored := t0.Add(time.Minute)
	m.crawls["counted"].LastExecUpdate, m.crawls["counted"].CrawlExecSeconds = &stored, 60
	m.crawls["known"].LastExecUpdate = &stored
	c := &Controller{store: m, cfg: testConfig()}
	pods := map[int]*corev1.Pod{0: runningSince(0, t0)}
	now := stored.Add(90 * time.Second)
	calls := []*execCall{
		{crawlID: "new", pods: pods, now: now},
		{crawlID: "counted", pods: pods, now: now},
		{crawlID: "known", tick: execTick{Since: &stored, Seconds: 90}, pods: pods, now: now},
	}
	c.chargeExecBatch(context.Background(), calls)
	for _, call := range calls {
		if call.err != nil || call.answer == nil || !call.answer.LastUpdate.Equal(now) {
			t.Fatalf("%s: answer %+v, %v; want the clock at now", call.crawlID, call.answer, call.err)
		}
	}
	if c := m.crawls["new"]; c.LastExecUpdate != nil || c.CrawlExecSeconds != 0 {
		t.Fatalf("new crawl: stored clock %v and %d s, want nothing written", c.LastExecUpdate, c.CrawlExecSeconds)
	}
	if c := m.crawls["counted"]; c.CrawlExecSeconds != 150 {
		t.Fatalf("counted crawl: %d s stored, want 60 + the 90 since its stored clock", c.CrawlExecSeconds)
	}
	if c := m.crawls["known"]; c.CrawlExecSeconds != 90 {
		t.Fatalf("known crawl: %d s stored, want 90", c.CrawlExecSeconds)
	}
	if n := m.callCount("ChargeCrawlsExec"); n != 2 {
		t.Fatalf("%d store calls for a batch of 3, want 2", n)
	}
}

// TestAccountExecKeepsMonths: a crawl idle for weeks, its org without
// quotas, is counted month by month: the first pass of a new month counts
// up to the last second of the month of its last count, so those seconds
// are charged to it, and the pass after counts on from there at once.
func TestAccountExecKeepsMonths(t *testing.T) {
	cfg := testConfig()
	cfg.ExecIdleAccountingInterval = 10 * time.Minute
	started := time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC)
	novLast, now := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC), time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC)
	pods := map[int]*corev1.Pod{0: runningSince(0, started)}
	quietSinceStart := &redisState{Reachable: true, Since: started}
	p := plan{Reaches: store.StateRunning}
	p.accountExec(newJob(1), observed{Now: now, Crawlers: pods, ExecClock: &started, ExecQuotaFreeAt: started.Add(time.Hour),
		Redis: quietSinceStart}, cfg)
	if want := int64(novLast.Sub(started) / time.Second); p.Exec == nil || p.Exec.Seconds != want || !p.Exec.Until.Equal(novLast) || p.Exec.Look {
		t.Fatalf("first pass of a new month: tick %+v, want a count of the %d s up to the month's last second", p.Exec, want)
	}
	p = plan{Reaches: store.StateRunning}
	p.accountExec(newJob(1), observed{Now: now, Crawlers: pods, ExecClock: &novLast, ExecQuotaFreeAt: novLast,
		Redis: quietSinceStart}, cfg)
	if want := int64(now.Sub(novLast) / time.Second); p.Exec == nil || p.Exec.Seconds != want || !p.Exec.Until.Equal(now) || p.Exec.Look {
		t.Fatalf("the pass after: tick %+v, want a count of the %d s since", p.Exec, want)
	}
}

// TestAccountExecAtPause: the pass that pauses a crawl counts its running
// crawlers at once (their pods go with the paused state, maybe before
// they exit); the passes after it count nothing.
func TestAccountExecAtPause(t *testing.T) {
	lut := t0.Add(time.Minute)
	o := observed{Now: lut.Add(20 * time.Second), Crawlers: map[int]*corev1.Pod{0: runningSince(0, t0), 1: runningSince(1, t0)}, ExecClock: &lut}
	p := plan{Reaches: store.StateRunning}
	p.move(transition{To: store.StatePaused, From: store.ActiveStates})
	p.accountExec(newJob(2), o, testConfig())
	if p.Exec == nil || p.Exec.Seconds != 40 || !p.Exec.Since.Equal(lut) || !p.Exec.Wait {
		t.Fatalf("tick %+v, want the 40 s of both crawlers since the last count, waited for", p.Exec)
	}
	after := plan{Reaches: store.StatePaused}
	after.accountExec(newJob(2), o, testConfig())
	if after.Exec != nil {
		t.Fatalf("tick %+v on the pass after the pause, want none", *after.Exec)
	}
}

// TestFailedPauseChargeAgain: the pass that pauses a crawl waits for its
// charge, and the crawler pods it counted go with the paused state. When
// the charge fails, the pass fails (its key comes back with backoff), and
// a later pass, with no pod left to count, charges the same seconds again:
// failing while the store is down, and once the store answers the seconds
// are there, once.
func TestFailedPauseChargeAgain(t *testing.T) {
	cj := newJob(2, runningStatus(store.StateRunning, 2))
	f := newFixture(t, cj)
	key := cj.Namespace + "/" + cj.Name
	lut := t0.Add(time.Minute)
	f.store.crawls[cj.Spec.ID].LastExecUpdate = &lut
	pods := map[int]*corev1.Pod{0: runningSince(0, t0), 1: runningSince(1, t0)}
	pausing := plan{Reaches: store.StateRunning}
	pausing.move(transition{To: store.StatePaused, From: store.ActiveStates})
	o := observed{Now: lut.Add(20 * time.Second), Crawlers: pods, ExecClock: &lut}
	pausing.accountExec(cj, o, testConfig())
	ctx := context.Background()

	f.store.setDown(true)
	if _, _, err := f.c.countExec(ctx, key, cj, pausing, o); err == nil {
		t.Fatal("no error from the pause's charge while the store is down")
	}

	paused := plan{Reaches: store.StatePaused}
	after := observed{Now: o.Now.Add(time.Second), ExecClock: &lut}
	if _, _, err := f.c.countExec(ctx, key, cj, paused, after); err == nil {
		t.Fatal("no error while the store is down: the key would not come back")
	}
	f.store.setDown(false)
	if _, _, err := f.c.countExec(ctx, key, cj, paused, after); err != nil {
		t.Fatal(err)
	}
	charged := func() int64 {
		f.store.mu.Lock()
		defer f.store.mu.Unlock()
		return f.store.crawls[cj.Spec.ID].CrawlExecSeconds
	}
	if got := charged(); got != 40 {
		t.Fatalf("%d s charged, want the 40 the pause counted", got)
	}
	if _, _, err := f.c.countExec(ctx, key, cj, paused, after); err != nil || charged() != 40 {
		t.Fatalf("after: %v, %d s charged", err, charged())
	}
}

// TestChargeExecLearnsAcrossAMonth: a new leader that learns a clock of
// last month counts up to that month's last second first.
func TestChargeExecLearnsAcrossAMonth(t *testing.T) {
	m := newMemStore()
	m.addCrawl("idle")
	stored := time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC)
	novLast := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	m.crawls["idle"].LastExecUpdate = &stored
	c := &Controller{store: m, cfg: testConfig()}
	call := &execCall{crawlID: "idle", pods: map[int]*corev1.Pod{0: runningSince(0, stored)}, now: time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC)}
	c.chargeExecBatch(context.Background(), []*execCall{call})
	if call.err != nil || call.answer == nil || !call.answer.LastUpdate.Equal(novLast) {
		t.Fatalf("answer %+v, %v; want the clock at the month's last second", call.answer, call.err)
	}
	if got, want := m.crawls["idle"].CrawlExecSeconds, int64(novLast.Sub(stored)/time.Second); got != want {
		t.Fatalf("%d s stored, want the month's %d", got, want)
	}
}

// TestChargeExecLooksAtIdleOrgs: a look (an idle crawl of an org that had
// no quota) reads the org and writes nothing while the org still has
// none; once the org has a quota, the look counts every second since the
// crawl's last count, in the same batch. One read of the orgs per batch.
func TestChargeExecLooksAtIdleOrgs(t *testing.T) {
	m := newMemStore()
	free, quota := uuid.New(), uuid.New()
	m.orgs[free] = &store.Org{ID: free}
	m.orgs[quota] = &store.Org{ID: quota, Quotas: store.OrgQuotas{StorageQuota: 1 << 40}}
	stored := t0.Add(time.Minute)
	for id, oid := range map[string]uuid.UUID{"free": free, "quota": quota} {
		m.addCrawl(id)
		m.crawls[id].OID, m.crawls[id].LastExecUpdate = oid, &stored
	}
	c := &Controller{store: m, cfg: testConfig()}
	pods := map[int]*corev1.Pod{0: runningSince(0, t0)}
	now := stored.Add(10 * time.Minute)
	look := execTick{Since: &stored, Seconds: 600, Look: true}
	calls := []*execCall{
		{crawlID: "free", oid: free, tick: look, pods: pods, now: now},
		{crawlID: "quota", oid: quota, tick: look, pods: pods, now: now},
	}
	c.chargeExecBatch(context.Background(), calls)
	if a := calls[0].answer; calls[0].err != nil || a == nil || !a.LastUpdate.Equal(stored) || !a.QuotaFreeAt.Equal(now) {
		t.Fatalf("look at a quota-free org: answer %+v, %v; want the clock kept, quota-free looked at now", a, calls[0].err)
	}
	if cr := m.crawls["free"]; !cr.LastExecUpdate.Equal(stored) || cr.CrawlExecSeconds != 0 {
		t.Fatalf("idle crawl of a quota-free org: stored clock %v and %d s, want nothing written", cr.LastExecUpdate, cr.CrawlExecSeconds)
	}
	if a := calls[1].answer; calls[1].err != nil || a == nil || !a.LastUpdate.Equal(now) || !a.QuotaFreeAt.IsZero() {
		t.Fatalf("look at an org with a quota: answer %+v, %v; want counted at now", a, calls[1].err)
	}
	if cr := m.crawls["quota"]; cr.CrawlExecSeconds != 600 {
		t.Fatalf("idle crawl of an org with a quota: %d s stored, want the 600 since its last count", cr.CrawlExecSeconds)
	}
	if looks, charges := m.callCount("GetOrgs"), m.callCount("ChargeCrawlsExec"); looks != 1 || charges != 1 {
		t.Fatalf("%d org reads and %d charges, want 1 and 1", looks, charges)
	}
}
