package operator

import (
	"slices"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/store"
)

func TestWriteBudgetHandOver(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	stats := func(done int64) store.CrawlStats { return store.CrawlStats{Found: 100, Done: done, Size: done * 1000} }
	type handover struct {
		done   int64
		readAt time.Time
		want   bool
	}
	cases := []struct {
		name  string
		known int64 // what the status last written holds
		final bool  // finalize before the last handover
		steps []handover
	}{
		{name: "the first reading that differs from the status goes", known: 3,
			steps: []handover{{done: 3, readAt: at(1), want: false}, {done: 5, readAt: at(2), want: true}}},
		{name: "a newer reading goes", steps: []handover{{done: 5, readAt: at(2), want: true}, {done: 7, readAt: at(3), want: true}}},
		{name: "the same stats again do not", steps: []handover{{done: 5, readAt: at(2), want: true}, {done: 5, readAt: at(3), want: false}}},
		{name: "an older reading after a newer one does not",
			steps: []handover{{done: 7, readAt: at(3), want: true}, {done: 5, readAt: at(2), want: false}}},
		{name: "a pass that read no Redis does not overwrite a reading",
			steps: []handover{{done: 7, readAt: at(3), want: true}, {done: 3, readAt: time.Time{}, want: false}}},
		{name: "nothing goes once the final state is being recorded", final: true,
			steps: []handover{{done: 5, readAt: at(2), want: true}, {done: 9, readAt: at(4), want: false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newWriteBudget(2 * time.Second)
			var added, want []int64
			for i, s := range tc.steps {
				if tc.final && i == len(tc.steps)-1 {
					b.finalize("ns/job")
				}
				got := b.handOver("ns/job", stats(s.done), stats(tc.known), s.readAt, s.readAt, func() { added = append(added, s.done) })
				if got != s.want {
					t.Errorf("step %d (done %d read at %v): handed over %v, want %v", i, s.done, s.readAt, got, s.want)
				}
				if s.want {
					want = append(want, s.done)
				}
			}
			if !slices.Equal(added, want) {
				t.Errorf("added %v, want %v", added, want)
			}
		})
	}
}

func TestWriteBudgetLagging(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	stats := store.CrawlStats{Found: 10, Done: 1}
	b := newWriteBudget(2 * time.Second)
	if b.lagging("ns/job", t0, 10*time.Second) {
		t.Error("a job first seen lags at once; want its clock started")
	}
	if b.lagging("ns/job", t0.Add(9*time.Second), 10*time.Second) {
		t.Error("lags 9 s after first seen; want 10 s")
	}
	if !b.lagging("ns/job", t0.Add(10*time.Second), 10*time.Second) {
		t.Error("does not lag 10 s after first seen")
	}
	b.handOver("ns/job", stats, store.CrawlStats{}, t0.Add(11*time.Second), t0.Add(11*time.Second), func() {})
	if b.lagging("ns/job", t0.Add(20*time.Second), 10*time.Second) {
		t.Error("lags 9 s after a handover")
	}
	b.finalize("ns/job")
	if b.lagging("ns/job", t0.Add(30*time.Second), 10*time.Second) {
		t.Error("a crawl being finalized lags; want no catch-up")
	}
}
