package operator

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// TestCatchUpStatsKeepsNewerReading: a crawl document whose stats lag
// docStatsMaxLag intervals gets the poller's reading at its next wake,
// without a status write; a pass that read Redis before that catch-up
// and writes its status after it does not take the document back; a
// crawl whose final state is being recorded gets no catch-up.
func TestCatchUpStatsKeepsNewerReading(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	f := runningFixture(t, cj)
	key := "crawlers/" + k8s.CrawlJobName(testID)
	reading := func(done int64) *redisState {
		r := reachable("running")
		r.PagesFound, r.PagesDone, r.Since = 100, done, f.clock.Now()
		return r
	}
	storedDone := func() int64 {
		if err := f.c.progressStore.flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s := f.store.get(testID).Stats; s != nil {
			return s.Done
		}
		return -1
	}
	reseed := func() {
		updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), cj.Name, metav1.GetOptions{})
		f.seed(updated)
	}

	f.withRedis(reading(1))
	if err := f.syncProgress(); err != nil {
		t.Fatal(err)
	}
	reseed()
	if got := storedDone(); got != 1 {
		t.Fatalf("first progress: document done %d, want 1", got)
	}

	f.clock.Step(time.Second)
	older := reading(15) // a pass reads this, then waits for its turn
	maxLag := docStatsMaxLag * f.c.cfg.StatsInterval
	f.clock.Step(maxLag - 2*time.Second)
	f.withRedis(reading(19))
	f.c.wake(key, "")
	if got := storedDone(); got != 1 {
		t.Fatalf("catch-up %v after the last handover: document done %d, want 1 (no catch-up yet)", maxLag-time.Second, got)
	}
	f.clock.Step(time.Second)
	f.withRedis(reading(20))
	f.c.wake(key, "")
	if got := storedDone(); got != 20 {
		t.Fatalf("after %v: document done %d, want the poller's 20", maxLag, got)
	}
	if st := f.status(); st.PagesDone != 1 {
		t.Errorf("the catch-up wrote the CrawlJob status (pages done %d); want the document alone", st.PagesDone)
	}

	f.clock.Step(f.c.cfg.StatsInterval)
	f.withRedis(older)
	if err := f.syncProgress(); err != nil {
		t.Fatal(err)
	}
	reseed()
	if st, got := f.status(), storedDone(); st.PagesDone != 15 || got != 20 {
		t.Errorf("a pass with an older reading: status %d, document %d; want status 15, document still 20", st.PagesDone, got)
	}

	f.c.budget.finalize(key)
	f.clock.Step(2 * maxLag)
	f.withRedis(reading(30))
	f.c.wake(key, "")
	if got := storedDone(); got != 20 {
		t.Errorf("catch-up while the final state is recorded: document done %d, want 20", got)
	}
}
