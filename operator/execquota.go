package operator

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// Execution-time accounting (upstream-2026 §6.4): the pure rules. Once
// per accounting interval a running crawl counts the seconds its crawler
// pods ran since the last count and charges them to its org (the store
// does, ChargeCrawlsExec); the org's answer decides an automatic pause
// (autopause.go). A crawl with no crawler pod time to count (waiting,
// paused, idle between ticks) writes nothing.

// execTick is an accounting tick decide asks for: Seconds of crawler-pod
// time counted since Since (the last count) up to the pass's now. A tick
// without Since learns the crawl's clock from the store (the operator
// does not know it yet: the crawl just started, or this operator just
// became the leader) and counts from it at once. A tick is not a sync of
// its own: the informers' resync and the crawl's progress bring a
// running crawl's passes, so a count may come up to one resync late, and
// still counts every second since the last.
type execTick struct {
	Since   *time.Time
	Seconds int64
	// Wait: the count comes first (a crawler exited, the crawl is being
	// deleted or is paused: its pods go with the pass), so what the pass
	// leads to does not outrun it and the status follows the seconds: the
	// pass waits briefly, else leaves its status and wrap-up to the pass
	// the count's end brings (countExec); the periodic ticks are answered
	// in the background.
	Wait bool
	// Look: an idle crawl of an org that had no quota at the last look
	// (Config.ExecIdleAccountingInterval). Its org is read again and
	// nothing is written, unless the org has a quota now: then the tick
	// counts as any other.
	Look bool
	// Until is when the count ends: the pass's now, or the last second
	// of the month of Since when a month ended since then, so that
	// month's seconds are charged to it (the next pass counts the rest).
	// Zero without Since.
	Until time.Time
}

// execAnswer is what a tick left: the crawl's clock afterwards and the
// automatic pause the org's quotas call for ("" none).
type execAnswer struct {
	LastUpdate  time.Time
	PauseReason string
	// QuotaFreeAt is when the tick read the org and found no quota a
	// count could reach (no storage or execution-time quota, not
	// read-only), so an idle crawl of it is not counted while it stays
	// idle (Config.ExecIdleAccountingInterval); zero when the org had a
	// quota or the tick read no org.
	QuotaFreeAt time.Time
}

// execCounted reports whether crawler time is charged in state: not
// while the crawl waits to start or is paused.
func execCounted(state string) bool {
	return !slices.Contains(store.StartingStates, state) && !slices.Contains(store.PausedStates, state)
}

// podExecSeconds sums the seconds each crawler pod's container ran in
// (since, now], and reports whether one exited after since. A pod that
// exited before since counts nothing.
func podExecSeconds(pods map[int]*corev1.Pod, since, now time.Time) (seconds int64, newExit bool) {
	for _, p := range pods {
		cs := crawlerContainer(p)
		if cs == nil {
			continue
		}
		var start, end time.Time
		switch {
		case cs.State.Running != nil:
			start, end = cs.State.Running.StartedAt.Time, now
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			start, end = t.StartedAt.Time, earlier(t.FinishedAt.Time, now)
			if t.FinishedAt.After(since) {
				newExit = true
			}
		default:
			continue
		}
		if start.Before(since) {
			start = since
		}
		if end.After(start) {
			seconds += int64(end.Sub(start) / time.Second)
		}
	}
	return seconds, newExit
}

// accountExec plans the pass's accounting tick, if one is due: the first
// one once the crawl runs (it learns the clock), then one per interval,
// one in a new month, one when a crawler exits, one when the crawl is
// canceled and one when it is paused (its crawlers' pods go then, maybe
// before they exit), each only if it has seconds to count (so a paused
// crawl writes nothing). An idle crawl of an org without quotas is not
// counted while it stays idle: a look at its org every idle interval,
// which writes nothing, stands in for the count (idleLook). It runs after
// the pass's state changes, so a crawl that just started or ended is
// counted as such.
func (p *plan) accountExec(cj *trawlerv1.CrawlJob, o observed, cfg Config) {
	pausing := p.entersPause()
	if !execCounted(p.Reaches) && !pausing || len(o.Crawlers) == 0 && o.ExecClock == nil {
		return
	}
	now := o.Now.Truncate(time.Second)
	if o.ExecClock == nil {
		_, exited := podExecSeconds(o.Crawlers, time.Time{}, now)
		p.Exec = &execTick{Wait: exited || cj.DeletionTimestamp != nil}
		return
	}
	since := *o.ExecClock
	until := countUntil(since, now)
	seconds, newExit := podExecSeconds(o.Crawlers, since, until)
	if seconds == 0 {
		return
	}
	atOnce := store.YearMonth(now) != store.YearMonth(since) || newExit || cj.DeletionTimestamp != nil || pausing
	switch {
	case atOnce:
		p.Exec = &execTick{Since: &since, Seconds: seconds, Until: until, Wait: newExit || cj.DeletionTimestamp != nil || pausing}
	case idleLook(o, since, cfg):
		if now.Sub(o.ExecQuotaFreeAt) >= cfg.ExecIdleAccountingInterval {
			p.Exec = &execTick{Since: &since, Seconds: seconds, Until: until, Look: true}
		}
	case now.Sub(since) >= cfg.ExecAccountingInterval:
		p.Exec = &execTick{Since: &since, Seconds: seconds, Until: until}
	}
}

// earlier returns the earlier of two times.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// countUntil is when a count from since at now ends: now, or the last
// second of since's month (UTC) when now is past it. A count is charged
// to the month it ends in; the next one, from there, to its own.
func countUntil(since, now time.Time) time.Time {
	y, m, _ := since.UTC().Date()
	if last := time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Second); since.Before(last) && last.Before(now) {
		return last
	}
	return now
}

// idleLook reports whether a crawl's count waits for it to change: its
// Redis has shown nothing new since the count at since, and its org had
// no quota to enforce at the last look (ExecQuotaFreeAt). No second is
// lost: the count that comes (the crawl busy again, a crawler's exit, a
// cancel, a new month, a quota on the org) covers every one since.
func idleLook(o observed, since time.Time, cfg Config) bool {
	return cfg.ExecIdleAccountingInterval > cfg.ExecAccountingInterval && !o.ExecQuotaFreeAt.IsZero() &&
		quietSince(o.Redis, since)
}

// quietSince reports whether the crawl's Redis, reachable, has shown
// nothing new since t: an idle crawl.
func quietSince(r *redisState, t time.Time) bool {
	return r != nil && r.Reachable && !r.Since.After(t)
}

// quotaFree reports whether no quota of org's can pause a crawl: no
// storage or execution-time quota, and not read-only.
func quotaFree(org *store.Org) bool {
	return !org.ReadOnly && org.Quotas.StorageQuota == 0 && !org.Quotas.HasExecQuota()
}

// quotaPauseReason is the automatic pause an org calls for after a tick,
// checked in upstream's order: read-only, storage (the bytes stored and
// the crawl's bytes not yet uploaded), then execution time. "" is none.
func quotaPauseReason(org *store.Org, pending int64, now time.Time) string {
	switch {
	case org.ReadOnly:
		return store.StatePausedOrgReadOnly
	case org.Quotas.StorageQuota > 0 && org.BytesStored+pending >= org.Quotas.StorageQuota:
		return store.StatePausedStorageQuota
	case org.ExecMinutesQuotaReached(now):
		return store.StatePausedTimeQuota
	}
	return ""
}

// skipState is the state a crawl that has not started yet ends in when
// its org is over a quota, storage first (upstream-2026 §6.6): the
// scheduler records such crawls itself, so this catches a quota reached
// between a start and the crawl's first sync. "" lets it start.
func skipState(org *store.Org, now time.Time) string {
	switch {
	case org.StorageQuotaReached():
		return store.StateSkippedStorageQuota
	case org.ExecMinutesQuotaReached(now):
		return store.StateSkippedTimeQuota
	}
	return ""
}
