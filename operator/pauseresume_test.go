package operator_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// pauseSite is slow enough that a pause lands mid-crawl and short enough
// that the resumed crawl completes. At 15 ms a page (1500 at the tests'
// time scale) a loaded machine let the crawl do all 40 pages before the
// pause reached it, and the resumed crawl ran and completed between two
// polls of the test.
const pauseSite = "https://example.com/?sim-pages=40&sim-page-ms=10000"

// pause records a pause (or, with resume, a resume) as the API does: the
// crawl document, then the CrawlJob.
func (h *harness) pause(id string, resume bool) {
	h.t.Helper()
	if err := h.askPause(id, resume); err != nil {
		h.t.Fatal(err)
	}
}

// askPause is pause for any goroutine: it returns the error.
func (h *harness) askPause(id string, resume bool) error {
	ctx := context.Background()
	var at *time.Time
	var spec time.Time
	if !resume {
		now := time.Now().UTC().Truncate(time.Second)
		at, spec = &now, now
	}
	if _, err := h.store.SetCrawlPause(ctx, h.org, id, at); err != nil {
		return err
	}
	return h.launch.PauseCrawl(ctx, id, spec)
}

// crawlerPods counts the crawl's crawler pods not being deleted.
func (h *harness) crawlerPods(id string) int {
	n := 0
	for _, p := range h.pods(id) {
		if p.Labels[k8s.LabelRole] == k8s.RoleCrawler && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// pvcUIDs are the crawl's PVCs by name.
func (h *harness) pvcUIDs(id string) map[string]types.UID {
	out := map[string]types.UID{}
	for name, p := range h.pvcs(id) {
		out[name] = p.UID
	}
	return out
}

// TestPauseAndResume is §8.1 items 1, 2 and 4 at the operator: the pause
// sets <id>:paused, the crawlers upload and exit, the crawl is paused
// with its files (counted in the org's bytesStored), its crawler pods and
// then its Redis pod go while every PVC stays, and the gone crawlers'
// interrupted statuses are forgotten; the resume brings the pods back on
// the same PVCs without the key, and the crawl completes with the files
// of both parts.
func TestPauseAndResume(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	// Redis goes RedisIdle after the pause: long enough for the test to
	// read the forgotten statuses on a loaded machine.
	cfg.RedisIdle = 6 * time.Second
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{scale: 2, seed: pauseSite})
	h.waitPagesDone(id, 3)
	rdb := h.crawlRedis(id)

	h.pause(id, false)
	if j, err := h.job(id); err != nil || j.Spec.PausedAt == "" {
		t.Fatalf("spec.pausedAt not set: %v %v", j, err)
	}
	h.waitFor("<id>:paused set", 20*time.Second, func() bool {
		v, err := rdb.Get(context.Background(), id+":paused").Result()
		return err == nil && v == "1"
	})
	h.waitState(id, 60*time.Second, store.StatePaused)
	atPause := h.crawl(id)
	if len(atPause.Files) == 0 || !atPause.ShouldPause || atPause.PausedAt == nil {
		t.Fatalf("paused crawl: files %d shouldPause %v pausedAt %v", len(atPause.Files), atPause.ShouldPause, atPause.PausedAt)
	}
	h.waitFor("the org's bytesStored counting the pause's files", 30*time.Second, func() bool {
		org, err := h.store.GetOrg(context.Background(), h.org)
		return err == nil && org.BytesStored == h.crawl(id).FileSize
	})
	h.waitFor("crawler pods deleted", 30*time.Second, func() bool { return h.crawlerPods(id) == 0 })
	h.waitFor("the gone crawlers' interrupted statuses forgotten", 30*time.Second, func() bool {
		st, err := rdb.HGetAll(context.Background(), id+":status").Result()
		return err == nil && !slices.Contains(slices.Collect(maps.Values(st)), "interrupted")
	})
	h.waitFor("redis pod deleted", 60*time.Second, func() bool {
		_, ok := h.pods(id)[k8s.RedisName(id)]
		return !ok
	})
	pvcs := h.pvcUIDs(id)
	if len(pvcs) != 3 {
		t.Fatalf("PVCs while paused: %v, want 2 crawler and 1 redis", pvcs)
	}
	if j, _ := h.job(id); j.Status.StopReason != "paused" {
		t.Errorf("stopReason %q", j.Status.StopReason)
	}

	h.pause(id, true)
	h.waitState(id, 60*time.Second, store.StateRunning)
	h.waitFor("crawler pods back", 30*time.Second, func() bool { return h.crawlerPods(id) == 2 })
	for name, uid := range h.pvcUIDs(id) {
		if pvcs[name] != uid {
			t.Errorf("PVC %s is new after the resume", name)
		}
	}
	if err := rdb.Get(context.Background(), id+":paused").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("<id>:paused after the resume: %v", err)
	}
	if final := h.waitState(id, 120*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
	if c := h.crawl(id); len(c.Files) <= len(atPause.Files) || c.Stats == nil || c.Stats.Done < atPause.Stats.Done {
		t.Errorf("files %d (%d at the pause), stats %+v", len(c.Files), len(atPause.Files), c.Stats)
	}
}

// TestPausedCrawlStopAndCancel is §8.1 item 5: a paused crawl that is
// stopped ends partial_complete (upstream's stopped_by_user) with its
// pause files; one that is canceled ends canceled.
func TestPausedCrawlStopAndCancel(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	stopped := h.startCrawl(crawlOpts{seed: pauseSite})
	canceled := h.startCrawl(crawlOpts{seed: pauseSite})
	h.waitPagesDone(stopped, 2)
	h.waitPagesDone(canceled, 2)
	h.pause(stopped, false)
	h.pause(canceled, false)
	h.waitState(stopped, 60*time.Second, store.StatePaused)
	h.waitState(canceled, 60*time.Second, store.StatePaused)
	files := len(h.crawl(stopped).Files)

	if err := h.launch.StopCrawl(context.Background(), stopped); err != nil {
		t.Fatal(err)
	}
	if final := h.waitState(stopped, 30*time.Second, store.FinishedStates...); final != store.StatePartialComplete {
		t.Errorf("stopped paused crawl ended %s", final)
	}
	h.waitFor("post-crawl tasks", 60*time.Second, func() bool { return h.crawl(stopped).PostCrawlDone })
	if c := h.crawl(stopped); len(c.Files) != files || files == 0 {
		t.Errorf("files %d, %d at the pause", len(c.Files), files)
	}

	if err := h.launch.CancelCrawl(context.Background(), canceled); err != nil {
		t.Fatal(err)
	}
	h.waitState(canceled, 30*time.Second, store.StateCanceled)
	h.waitFor("canceled job removed", 60*time.Second, func() bool { return h.gone(canceled) })
	h.waitFor("PVCs removed", 60*time.Second, func() bool { return len(h.pvcs(canceled)) == 0 })
}

// TestPauseExpires is §8.1 item 6, with a limit of seconds: a paused
// crawl not resumed ends stopped_pause_expired, successful, its workflow
// counting it.
func TestPauseExpires(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	cfg.PausedCrawlLimit = 5 * time.Second
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{seed: pauseSite, workflow: true})
	h.waitPagesDone(id, 2)
	h.pause(id, false)
	h.waitState(id, 60*time.Second, store.StatePaused)
	if final := h.waitState(id, 60*time.Second, store.FinishedStates...); final != store.StateStoppedPauseExpired {
		t.Fatalf("final state %s", final)
	}
	h.waitFor("post-crawl tasks", 60*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	c := h.crawl(id)
	wf, err := h.store.GetCrawlConfig(context.Background(), h.org, c.CID)
	if err != nil {
		t.Fatal(err)
	}
	if wf.CrawlSuccessfulCount != 1 || len(c.Files) == 0 {
		t.Errorf("workflow successful count %d, files %d", wf.CrawlSuccessfulCount, len(c.Files))
	}
}

// TestResumeWhilePausing is the race of §8.1's bad input: a resume that
// arrives while the crawlers are still pausing. The crawl does not stall
// on crawlers that already paused and exited: they are replaced, and it
// runs on to complete.
func TestResumeWhilePausing(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{scale: 2, seed: pauseSite})
	h.waitPagesDone(id, 3)
	rdb := h.crawlRedis(id)
	h.pause(id, false)
	h.waitFor("a crawler paused", 30*time.Second, func() bool {
		st, err := rdb.HGetAll(context.Background(), id+":status").Result()
		if err != nil {
			return false
		}
		for _, s := range st {
			if s == "interrupted" {
				return true
			}
		}
		return false
	})
	h.pause(id, true)
	if final := h.waitState(id, 180*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
	if c := h.crawl(id); c.ShouldPause || c.PausedAt != nil {
		t.Errorf("shouldPause %v pausedAt %v after the resume", c.ShouldPause, c.PausedAt)
	}
}
