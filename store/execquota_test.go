package store

import (
	"testing"
	"time"
)

func TestExecMinutesQuotaReached(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	month := map[string]int64{"2026-12": 120, "2026-11": 9999}
	cases := []struct {
		name string
		org  Org
		want bool
	}{
		{"NoQuota", Org{ExecCounters: ExecCounters{MonthlyExecSeconds: month}}, false},
		{"MonthlyLeft", Org{Quotas: OrgQuotas{MaxExecMinutesPerMonth: 3}, ExecCounters: ExecCounters{MonthlyExecSeconds: month}}, false},
		{"MonthlyUsed", Org{Quotas: OrgQuotas{MaxExecMinutesPerMonth: 2}, ExecCounters: ExecCounters{MonthlyExecSeconds: month}}, true},
		// Whole minutes: 179 s is 2 minutes, under a 3-minute quota.
		{"MonthlyPartialMinute", Org{Quotas: OrgQuotas{MaxExecMinutesPerMonth: 3},
			ExecCounters: ExecCounters{MonthlyExecSeconds: map[string]int64{"2026-12": 179}}}, false},
		{"LastMonthDoesNotCount", Org{Quotas: OrgQuotas{MaxExecMinutesPerMonth: 1},
			ExecCounters: ExecCounters{MonthlyExecSeconds: map[string]int64{"2026-11": 9999}}}, false},
		{"GiftedLeft", Org{Quotas: OrgQuotas{MaxExecMinutesPerMonth: 2, GiftedExecMinutes: 1},
			ExecCounters: ExecCounters{MonthlyExecSeconds: month, GiftedExecSecondsAvailable: 1}}, false},
		{"GiftedUsed", Org{Quotas: OrgQuotas{MaxExecMinutesPerMonth: 2, GiftedExecMinutes: 1},
			ExecCounters: ExecCounters{MonthlyExecSeconds: month}}, true},
		{"ExtraLeft", Org{Quotas: OrgQuotas{ExtraExecMinutes: 2}, ExecCounters: ExecCounters{ExtraExecSecondsAvailable: 5}}, false},
		// Once any exec quota is set, 0 monthly minutes means none.
		{"ExtraOnlyUsed", Org{Quotas: OrgQuotas{ExtraExecMinutes: 2}}, true},
		// Seconds left over from minutes since taken away do not count.
		{"AvailableWithoutMinutes", Org{Quotas: OrgQuotas{MaxExecMinutesPerMonth: 2},
			ExecCounters: ExecCounters{MonthlyExecSeconds: month, ExtraExecSecondsAvailable: 60}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.org.ExecMinutesQuotaReached(now); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestSplitExecCharge(t *testing.T) {
	now := time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)
	org := func(q OrgQuotas, monthly, gifted, extra int64) *Org {
		return &Org{Quotas: q, ExecCounters: ExecCounters{MonthlyExecSeconds: map[string]int64{"2026-12": monthly},
			GiftedExecSecondsAvailable: gifted, ExtraExecSecondsAvailable: extra}}
	}
	all := OrgQuotas{MaxExecMinutesPerMonth: 1, GiftedExecMinutes: 1, ExtraExecMinutes: 2}
	cases := []struct {
		name string
		org  *Org
		d    int64
		want ExecCharge
	}{
		{"NoQuotaTotalOnly", org(OrgQuotas{}, 0, 0, 0), 30, ExecCharge{Total: 30}},
		{"WithinMonthly", org(all, 10, 60, 120), 30, ExecCharge{Total: 30, Monthly: 30}},
		{"MonthlyThenGifted", org(all, 50, 60, 120), 30, ExecCharge{Total: 30, Monthly: 10, Gifted: 20}},
		{"GiftedThenExtra", org(all, 60, 15, 120), 30, ExecCharge{Total: 30, Gifted: 15, Extra: 15}},
		{"AllUsedUp", org(all, 60, 0, 10), 30, ExecCharge{Total: 30, Extra: 10}},
		{"NothingLeft", org(all, 60, 0, 0), 30, ExecCharge{Total: 30}},
		// A quota lowered below the month's use charges 0 to the month,
		// not a negative amount (upstream's BUG@HEAD).
		{"LoweredQuota", org(all, 600, 60, 0), 30, ExecCharge{Total: 30, Gifted: 30}},
		{"NoMonthlyQuota", org(OrgQuotas{ExtraExecMinutes: 1}, 0, 0, 60), 30, ExecCharge{Total: 30, Extra: 30}},
		{"Zero", org(all, 0, 60, 120), 0, ExecCharge{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.want.Month = "2026-12"
			if got := SplitExecCharge(c.org, now, c.d); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestAvailableAfter(t *testing.T) {
	cases := []struct{ avail, old, new, want int64 }{
		{0, 0, 2, 120},
		{30, 2, 3, 90},
		{30, 2, 1, 0},
		{100, 2, 1, 40},
		{50, 1, 1, 50},
	}
	for _, c := range cases {
		if got := availableAfter(c.avail, c.old, c.new); got != c.want {
			t.Errorf("availableAfter(%d, %d, %d) = %d, want %d", c.avail, c.old, c.new, got, c.want)
		}
	}
}
