package store

import (
	"time"
)

// Execution-time quotas (upstream-2026 §6): the pure rules. The Mongo
// side is in execquota_mongo.go.

// YearMonth is the "YYYY-MM" key of t's month in UTC, the key of the
// org's month maps.
func YearMonth(t time.Time) string { return t.UTC().Format("2006-01") }

// HasExecQuota reports whether any execution-time quota is set.
func (q OrgQuotas) HasExecQuota() bool {
	return q.MaxExecMinutesPerMonth > 0 || q.GiftedExecMinutes > 0 || q.ExtraExecMinutes > 0
}

// ExecMinutesQuotaReached reports whether the org has used up its
// execution time at now (§6.3): it has some exec quota, and neither
// gifted nor extra seconds are left nor the month's minutes.
func (o *Org) ExecMinutesQuotaReached(now time.Time) bool {
	q := o.Quotas
	switch {
	case !q.HasExecQuota():
		return false
	case q.GiftedExecMinutes > 0 && o.GiftedExecSecondsAvailable > 0:
		return false
	case q.ExtraExecMinutes > 0 && o.ExtraExecSecondsAvailable > 0:
		return false
	case q.MaxExecMinutesPerMonth > 0 && o.MonthlyExecSeconds[YearMonth(now)]/60 < q.MaxExecMinutesPerMonth:
		return false
	}
	return true
}

// ExecCharge is how the seconds of one accounting tick are charged to an
// org: all to the month's CrawlExecSeconds, and, while an exec quota is
// set, to the monthly quota first, then the gifted, then the extra
// minutes (Gifted and Extra also leave the available counters).
type ExecCharge struct {
	Month                  string
	Total                  int64
	Monthly, Gifted, Extra int64
}

// SplitExecCharge splits d seconds counted at now (§6.5). The monthly
// part never goes negative when the quota was lowered below what the
// month already used (upstream's BUG@HEAD decreased it).
func SplitExecCharge(o *Org, now time.Time, d int64) ExecCharge {
	c := ExecCharge{Month: YearMonth(now), Total: d}
	if d <= 0 || !o.Quotas.HasExecQuota() {
		return c
	}
	remaining := max(o.Quotas.MaxExecMinutesPerMonth*60-o.MonthlyExecSeconds[c.Month], 0)
	if d <= remaining {
		c.Monthly = d
		return c
	}
	c.Monthly = remaining
	over := d - remaining
	c.Gifted = min(over, max(o.GiftedExecSecondsAvailable, 0))
	over -= c.Gifted
	c.Extra = min(over, max(o.ExtraExecSecondsAvailable, 0))
	return c
}

// availableAfter is an available-seconds counter after its total of
// minutes changed from oldMinutes to newMinutes (§6.2): moved by the
// difference, never below 0.
func availableAfter(avail, oldMinutes, newMinutes int64) int64 {
	return max(avail+(newMinutes-oldMinutes)*60, 0)
}
