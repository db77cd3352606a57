package api

import (
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/store"
)

// startOnChannel starts a crawl of a new workflow on channel and returns
// (cid, crawl id).
func (e *env) startOnChannel(name, channel string) (string, string) {
	e.t.Helper()
	body := workflowBody(name, true)
	body["crawlerChannel"] = channel
	out := e.createWorkflow(asCrawler, body)
	return out["id"].(string), out["run_now_job"].(string)
}

// TestPauseAndResumeRoutes is §8.1 items 1, 2 (the workflow's fields), 4
// (the fields after a resume) and 9 at the API.
func TestPauseAndResumeRoutes(t *testing.T) {
	e := newEnv(t)
	cid, id := e.startOnChannel("pausable", "test")
	e.setState(id, store.StateRunning)

	out := e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/pause"), nil, 200)
	if out["success"] != true || !slices.Contains(e.launcher.callList(), "pause "+id) {
		t.Fatalf("pause: %v %v", out, e.launcher.callList())
	}
	c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)
	pausedAt, _ := c["pausedAt"].(string)
	if c["shouldPause"] != true || pausedAt == "" {
		t.Fatalf("crawl after pause: shouldPause %v pausedAt %v", c["shouldPause"], c["pausedAt"])
	}

	e.setState(id, store.StatePaused)
	wf := e.mustJSON(asViewer, "GET", e.orgPath("/crawlconfigs/"+cid), nil, 200)
	at, err := time.Parse("2006-01-02T15:04:05", pausedAt)
	if err != nil {
		t.Fatal(err)
	}
	wantExpiry := at.Add(10080 * time.Minute).Format("2006-01-02T15:04:05")
	if wf["isCrawlRunning"] != true || wf["lastCrawlState"] != "paused" || wf["lastCrawlShouldPause"] != true ||
		wf["lastCrawlPausedAt"] != pausedAt || wf["lastCrawlPausedExpiry"] != wantExpiry {
		t.Fatalf("workflow while paused: running %v state %v shouldPause %v pausedAt %v expiry %v (want %s)",
			wf["isCrawlRunning"], wf["lastCrawlState"], wf["lastCrawlShouldPause"], wf["lastCrawlPausedAt"],
			wf["lastCrawlPausedExpiry"], wantExpiry)
	}
	list := e.mustJSON(asViewer, "GET", e.orgPath("/crawls?state=paused"), nil, 200)
	if list["total"] != 1.0 {
		t.Errorf("crawls?state=paused: %v", list)
	}
	r := e.do(asCrawler, "POST", e.orgPath("/crawlconfigs/"+cid+"/run"), nil)
	e.wantDetail(r, 400, "crawl_already_running")

	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/resume"), nil, 200)
	c = e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200)
	if c["shouldPause"] != false || c["pausedAt"] != nil || !slices.Contains(e.launcher.callList(), "resume "+id) {
		t.Fatalf("crawl after resume: shouldPause %v pausedAt %v calls %v", c["shouldPause"], c["pausedAt"], e.launcher.callList())
	}

	settings := e.mustJSON("", "GET", "/api/settings", nil, 200)
	if settings["pausedExpiryMinutes"] != 10080.0 || settings["rateLimitDurationMinutes"] != 0.0 {
		t.Errorf("settings: %v", settings)
	}
}

// TestPauseBadInput is §8.1 item 7 and the 0.11 refusal.
func TestPauseBadInput(t *testing.T) {
	e := newEnv(t)
	_, id := e.startOnChannel("pausable", "test")
	e.setState(id, store.StateRunning)

	_, upload := e.startOnChannel("an upload", "test")
	if _, err := e.store.Raw().Collection("crawls").UpdateOne(t.Context(), bson.M{"_id": upload},
		bson.M{"$set": bson.M{"type": store.TypeUpload}}); err != nil {
		t.Fatal(err)
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/"+upload+"/pause"), nil), 400, "not_a_crawl")
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/no-such-crawl/pause"), nil), 404, "Crawl not found: no-such-crawl")
	if r := e.do(asViewer, "POST", e.orgPath("/crawls/"+id+"/pause"), nil); r.Code != 403 {
		t.Errorf("pause as a viewer: %d %s", r.Code, r.Body)
	}
	if r := e.do(asOutsider, "POST", e.orgPath("/crawls/"+id+"/pause"), nil); r.Code != 404 && r.Code != 403 {
		t.Errorf("pause as an outsider: %d %s", r.Code, r.Body)
	}
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/"+id+"/resume"), nil), 400, "crawl_not_paused")

	_, old := e.startOnChannel("on 0.11", "default")
	e.setState(old, store.StateRunning)
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/"+old+"/pause"), nil), 400, "pause_not_supported_by_crawler")

	e.setState(id, store.StateComplete)
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/"+id+"/pause"), nil), 404, "crawl_not_found")

	_, gone := e.startOnChannel("gone", "test")
	e.setState(gone, store.StateRunning)
	e.launcher.setGone(gone)
	e.wantDetail(e.do(asCrawler, "POST", e.orgPath("/crawls/"+gone+"/pause"), nil), 404, "crawl_not_found")
}

// TestPauseResumeRace sends pauses and resumes of one crawl at once: the
// document and the CrawlJob end up saying the same, whichever won.
func TestPauseResumeRace(t *testing.T) {
	e := newEnv(t)
	_, id := e.startOnChannel("raced", "test")
	e.setState(id, store.StateRunning)
	for round := range 5 {
		var wg sync.WaitGroup
		for i := range 8 {
			action := "pause"
			if (i+round)%2 == 1 {
				action = "resume"
			}
			wg.Go(func() {
				// A resume before any pause is a 400; every other answer is 200.
				r := e.do(asCrawler, "POST", e.orgPath("/crawls/"+id+"/"+action), nil)
				if r.Code != 200 && r.Code != 400 {
					t.Errorf("%s: %d %s", action, r.Code, r.Body)
				}
			})
		}
		wg.Wait()
		c, err := e.store.GetCrawlByID(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if last := e.launcher.lastPause(id); last != c.ShouldPause {
			t.Fatalf("round %d: CrawlJob paused %v, document shouldPause %v", round, last, c.ShouldPause)
		}
	}
}
