package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// charge is one accounting tick of crawl id: seconds since since, at at.
func charge(t *testing.T, m *mongotest.DB, id string, since *time.Time, at time.Time, seconds int64) store.ExecTick {
	t.Helper()
	tick := m.ChargeCrawlsExec(context.Background(), []store.CrawlExecCharge{{CrawlID: id, Since: since, Now: at, Seconds: seconds}})[0]
	if tick.Err != nil || tick.OrgErr != nil {
		t.Fatal(tick.Err, tick.OrgErr)
	}
	return tick
}

// TestChargeCrawlExec: ticks charge the crawl and its org, the monthly
// quota first, then the gifted, then the extra minutes (upstream-2026
// §6.5); a tick repeated with a stale last count charges nothing; the
// quota updates of §6.2 move the available seconds.
func TestChargeCrawlExec(t *testing.T) {
	ctx := context.Background()
	m := mongotest.Open(t)
	org := mustOrg(t, m, "exec")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://example.com/")
	mustCrawl(t, m, wf, "c1", now())
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	month := "2026-12"

	// An operator without the crawl's clock learns it: now, for a crawl
	// never counted, and nothing is written.
	if learn := charge(t, m, "c1", nil, t0, 0); learn.Counted || !learn.LastUpdate.Equal(t0) || learn.Org != nil {
		t.Fatalf("learning the clock of a crawl never counted: %+v", learn)
	}
	// Without a quota, seconds go to crawlExecSeconds only. The first
	// count finds no _lut (the operator started the clock itself).
	tick := charge(t, m, "c1", &t0, t0.Add(time.Minute), 60)
	if !tick.Counted || tick.CrawlExecSeconds != 60 || !tick.LastUpdate.Equal(t0.Add(time.Minute)) ||
		tick.Org == nil || tick.Org.CrawlExecSeconds[month] != 60 || len(tick.Org.MonthlyExecSeconds) != 0 {
		t.Fatalf("first tick: %+v org %+v", tick, tick.Org)
	}
	// A stale tick (the status that knew of the first was lost) adopts
	// what is stored and charges nothing.
	stale := charge(t, m, "c1", &t0, t0.Add(90*time.Second), 90)
	if stale.Counted || stale.CrawlExecSeconds != 60 || !stale.LastUpdate.Equal(t0.Add(time.Minute)) || stale.Org != nil {
		t.Fatalf("stale tick: %+v", stale)
	}
	// A new leader learns the stored clock.
	if learn := charge(t, m, "c1", nil, t0.Add(time.Hour), 0); learn.Counted || learn.CrawlExecSeconds != 60 ||
		!learn.LastUpdate.Equal(t0.Add(time.Minute)) || learn.Org != nil {
		t.Fatalf("learning the stored clock: %+v", learn)
	}

	// The quotas of upstream's nightly test, set after the org used 60 s.
	for _, u := range []store.QuotasUpdate{
		{MaxExecMinutesPerMonth: ptr[int64](1), Modified: t0},
		{ExtraExecMinutes: ptr[int64](2), GiftedExecMinutes: ptr[int64](1), Modified: t0},
	} {
		if err := m.UpdateOrgQuotas(ctx, org.ID, u); err != nil {
			t.Fatal(err)
		}
	}
	o, err := m.GetOrg(ctx, org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.ExtraExecSecondsAvailable != 120 || o.GiftedExecSecondsAvailable != 60 || len(o.ExtraExecSeconds) != 0 ||
		len(o.GiftedExecSeconds) != 0 || len(o.QuotaUpdates) != 2 || o.Quotas.MaxExecMinutesPerMonth != 1 {
		t.Fatalf("org after the quota updates: %+v", o)
	}
	if o.ExecMinutesQuotaReached(t0) {
		t.Fatal("quota reached before any charge to it")
	}

	// Seconds used before the quota was set do not count against it: the
	// month fills first, then the gifted minutes, then the extra ones.
	last := t0.Add(time.Minute)
	steps := []struct {
		seconds                          int64
		monthly, gifted, extra           int64
		giftedAvail, extraAvail          int64
		reached                          bool
		crawlExecSeconds, orgExecSeconds int64
	}{
		{50, 50, 0, 0, 60, 120, false, 110, 110},
		{40, 60, 30, 0, 30, 120, false, 150, 150},
		{60, 60, 60, 30, 0, 90, false, 210, 210},
		{120, 60, 60, 120, 0, 0, true, 330, 330},
		// Over everything: only crawlExecSeconds grows.
		{10, 60, 60, 120, 0, 0, true, 340, 340},
	}
	for i, s := range steps {
		at := last.Add(time.Duration(s.seconds) * time.Second)
		tick := charge(t, m, "c1", &last, at, s.seconds)
		o := tick.Org
		if !tick.Counted || tick.CrawlExecSeconds != s.crawlExecSeconds || o == nil {
			t.Fatalf("step %d: %+v", i, tick)
		}
		if o.MonthlyExecSeconds[month] != s.monthly || o.GiftedExecSeconds[month] != s.gifted ||
			o.ExtraExecSeconds[month] != s.extra || o.GiftedExecSecondsAvailable != s.giftedAvail ||
			o.ExtraExecSecondsAvailable != s.extraAvail || o.CrawlExecSeconds[month] != s.orgExecSeconds {
			t.Fatalf("step %d: org counters %+v", i, o.ExecCounters)
		}
		if got := o.ExecMinutesQuotaReached(at); got != s.reached {
			t.Fatalf("step %d: quota reached %v, want %v", i, got, s.reached)
		}
		last = at
	}
	if c, err := m.GetCrawlByID(ctx, "c1"); err != nil || c.CrawlExecSeconds != 340 || !c.LastExecUpdate.Equal(last) {
		t.Fatalf("crawl: %+v, %v", c, err)
	}

	// Raising the extra minutes makes seconds available again.
	if err := m.UpdateOrgQuotas(ctx, org.ID, store.QuotasUpdate{ExtraExecMinutes: ptr[int64](3), Modified: last}); err != nil {
		t.Fatal(err)
	}
	if o, _ := m.GetOrg(ctx, org.ID); o.ExtraExecSecondsAvailable != 60 || o.ExecMinutesQuotaReached(last) {
		t.Fatalf("after raising the extra minutes: %+v", o.ExecCounters)
	}
}

// TestClaimAutoPauseEmail: the owners are told once per automatic pause;
// the owners' addresses come from the org's members.
func TestClaimAutoPauseEmail(t *testing.T) {
	ctx := context.Background()
	m := mongotest.Open(t)
	org := mustOrg(t, m, "mail")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://example.com/")
	mustCrawl(t, m, wf, "c1", now())
	for i, want := range []bool{true, false} {
		if got, err := m.ClaimAutoPauseEmail(ctx, "c1"); err != nil || got != want {
			t.Fatalf("claim %d: %v, %v; want %v", i, got, err, want)
		}
	}
	if _, err := m.ClaimAutoPauseEmail(ctx, "nope"); err == nil {
		t.Fatal("claim of an unknown crawl succeeded")
	}
	if err := m.RequestCrawlPause(ctx, "c1", now()); err != nil {
		t.Fatal(err)
	}
}

// TestChargeOrgExecCoalesces: the charges of an org's crawls that arrive
// while the org's write is in flight go together in one org write, split
// as the same charges one after the other would be.
func TestChargeOrgExecCoalesces(t *testing.T) {
	ctx := context.Background()
	var cmds mongotest.Commands
	m := mongotest.Open(t, cmds.Option())
	org := mustOrg(t, m, "exec-batch")
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	if err := m.UpdateOrgQuotas(ctx, org.ID, store.QuotasUpdate{MaxExecMinutesPerMonth: ptr[int64](5),
		GiftedExecMinutes: ptr[int64](1), ExtraExecMinutes: ptr[int64](2), Modified: t0}); err != nil {
		t.Fatal(err)
	}
	const crawls, each = 20, 30
	for i := range crawls {
		wf := mustWorkflow(t, m, org.ID, fmt.Sprintf("wf%d", i), "https://example.com/")
		mustCrawl(t, m, wf, fmt.Sprintf("c%d", i), now())
	}
	at := t0.Add(each * time.Second)

	cmds.Reset()
	release := m.HoldOrgLock(org.ID)
	ticks := make(chan store.ExecTick, crawls)
	errs := make(chan error, crawls)
	for i := range crawls {
		go func() {
			tick := m.ChargeCrawlsExec(ctx, []store.CrawlExecCharge{{CrawlID: fmt.Sprintf("c%d", i), Since: &t0, Now: at, Seconds: each}})[0]
			ticks <- tick
			errs <- errors.Join(tick.Err, tick.OrgErr)
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for m.OpenOrgCharge(org.ID, at) != crawls*each {
		if time.Now().After(deadline) {
			release()
			t.Fatalf("open batch %d s, want %d", m.OpenOrgCharge(org.ID, at), crawls*each)
		}
		time.Sleep(10 * time.Millisecond)
	}
	release()
	for range crawls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if tick := <-ticks; !tick.Counted || tick.Org == nil || tick.Org.CrawlExecSeconds["2026-12"] != crawls*each {
			t.Fatalf("tick %+v", tick)
		}
	}
	if n := cmds.Count("findAndModify", "organizations"); n != 1 {
		t.Errorf("%d org writes for %d charges in one batch, want 1", n, crawls)
	}
	// 600 s: the month's 300, then the 60 gifted, then 120 of the extra
	// minutes; the 120 over everything are counted but not charged.
	o, err := m.GetOrg(ctx, org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.MonthlyExecSeconds["2026-12"] != 300 || o.GiftedExecSeconds["2026-12"] != 60 || o.ExtraExecSeconds["2026-12"] != 120 ||
		o.GiftedExecSecondsAvailable != 0 || o.ExtraExecSecondsAvailable != 0 || o.CrawlExecSeconds["2026-12"] != 600 {
		t.Fatalf("org counters %+v", o.ExecCounters)
	}
}

// TestChargeCrawlsExecInOneWrite: the charges of many crawls, of two
// orgs, are one read and one write of the crawls and one charge per org;
// a learn, a stale count and an unknown crawl in the same call each get
// their own answer.
func TestChargeCrawlsExecInOneWrite(t *testing.T) {
	ctx := context.Background()
	var cmds mongotest.Commands
	m := mongotest.Open(t, cmds.Option())
	orgs := []*store.Org{mustOrg(t, m, "batch-a"), mustOrg(t, m, "batch-b")}
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	const crawls, each = 30, 20
	for i := range crawls + 2 {
		wf := mustWorkflow(t, m, orgs[i%2].ID, fmt.Sprintf("wf%d", i), "https://example.com/")
		mustCrawl(t, m, wf, fmt.Sprintf("c%d", i), now())
	}
	// c<crawls+1>, of the second org, was counted up to t1 already: a
	// count since t0 is stale.
	t1 := t0.Add(10 * time.Second)
	charge(t, m, fmt.Sprintf("c%d", crawls+1), &t0, t1, 10)
	at := t0.Add(each * time.Second)
	var charges []store.CrawlExecCharge
	for i := range crawls {
		charges = append(charges, store.CrawlExecCharge{CrawlID: fmt.Sprintf("c%d", i), Since: &t0, Now: at, Seconds: each})
	}
	charges = append(charges,
		store.CrawlExecCharge{CrawlID: fmt.Sprintf("c%d", crawls), Now: at},
		store.CrawlExecCharge{CrawlID: fmt.Sprintf("c%d", crawls+1), Since: &t0, Now: at, Seconds: each},
		store.CrawlExecCharge{CrawlID: "unknown", Since: &t0, Now: at, Seconds: each})

	cmds.Reset()
	ticks := m.ChargeCrawlsExec(ctx, charges)
	for i := range crawls {
		tick := ticks[i]
		if tick.Err != nil || !tick.Counted || tick.CrawlExecSeconds != each || !tick.LastUpdate.Equal(at) || tick.Org == nil ||
			tick.Org.ID != orgs[i%2].ID || tick.Org.CrawlExecSeconds["2026-12"] != crawls/2*each+int64(10*(i%2)) {
			t.Fatalf("charge %d: %+v", i, tick)
		}
	}
	if learn := ticks[crawls]; learn.Err != nil || learn.Counted || !learn.LastUpdate.Equal(at) || learn.Org != nil {
		t.Errorf("learn: %+v", learn)
	}
	if stale := ticks[crawls+1]; stale.Err != nil || stale.Counted || !stale.LastUpdate.Equal(t1) || stale.CrawlExecSeconds != 10 {
		t.Errorf("stale: %+v", stale)
	}
	if unknown := ticks[crawls+2]; !errors.Is(unknown.Err, store.ErrNotFound) {
		t.Errorf("unknown crawl: %+v", unknown)
	}
	for _, c := range []struct {
		command, collection string
		want                int
	}{{"find", "crawls", 1}, {"update", "crawls", 1}, {"findAndModify", "organizations", 2}} {
		if n := cmds.Count(c.command, c.collection); n != c.want {
			t.Errorf("%d %s of %s, want %d", n, c.command, c.collection, c.want)
		}
	}
	if c, err := m.GetCrawlByID(ctx, "c0"); err != nil || c.CrawlExecSeconds != each || !c.LastExecUpdate.Equal(at) {
		t.Fatalf("crawl: %+v, %v", c, err)
	}
}

// TestOrgChargeFailureIsOwed: an org charge that fails after its crawl was
// counted leaves the crawl counted and its clock moved, and the seconds
// go with the org's next charge: counting the crawl again would charge
// nothing, so without the debt the org would never be charged them.
func TestOrgChargeFailureIsOwed(t *testing.T) {
	m := mongotest.Open(t)
	org := mustOrg(t, m, "owed")
	for _, id := range []string{"c1", "c2"} {
		mustCrawl(t, m, mustWorkflow(t, m, org.ID, "wf-"+id, "https://example.com/"), id, now())
	}
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := t0.Add(30 * time.Second)

	// The org's write waits for its lock; the call's context ends
	// meanwhile, so the write fails once the lock is free.
	ctx, cancel := context.WithCancel(context.Background())
	release := m.HoldOrgLock(org.ID)
	ticks := make(chan store.ExecTick, 1)
	go func() {
		ticks <- m.ChargeCrawlsExec(ctx, []store.CrawlExecCharge{{CrawlID: "c1", Since: &t0, Now: at, Seconds: 30}})[0]
	}()
	deadline := time.Now().Add(30 * time.Second)
	for m.OpenOrgCharge(org.ID, at) != 30 {
		if time.Now().After(deadline) {
			release()
			t.Fatal("the charge never reached the org")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	release()
	tick := <-ticks
	if tick.Err != nil || !tick.Counted || !tick.LastUpdate.Equal(at) || tick.OrgErr == nil || tick.Org != nil {
		t.Fatalf("tick with a failed org charge: %+v", tick)
	}
	if o, err := m.GetOrg(context.Background(), org.ID); err != nil || o.CrawlExecSeconds["2026-12"] != 0 {
		t.Fatalf("org charged %v before the debt was paid (%v)", o.CrawlExecSeconds, err)
	}
	next := charge(t, m, "c2", &t0, at.Add(10*time.Second), 40)
	if next.Org == nil || next.Org.CrawlExecSeconds["2026-12"] != 70 {
		t.Fatalf("org after the next charge: %+v, want the 30 owed + 40", next.Org)
	}
}
