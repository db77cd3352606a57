package crawls

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/e2e/e2etest"
)

// TestPauseAndResume is spec §8.1 items 1–4 through the API, on the
// "test" channel (1.x protocol): a running crawl is paused, shows it on
// the crawl and its workflow, can be downloaded with its pause WACZ and
// blocks a new run; resumed, it crawls on and completes with the files of
// both parts.
func TestPauseAndResume(t *testing.T) {
	stack := sharedStack(t)
	c := newClient(t, stack)
	wf := c.Object("POST", c.Org("/crawlconfigs/"), map[string]any{"name": "paused", "runNow": true, "crawlerChannel": "test",
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/?sim-pages=60&sim-page-ms=2000"}}}}, 200)
	id, cid := wf["run_now_job"].(string), wf["id"].(string)
	get := func() map[string]any { return c.Object("GET", c.Org("/crawls/"+id), nil, 200) }
	eventually(t, "pages done", get, func(cr map[string]any) bool {
		st, _ := cr["stats"].(map[string]any)
		return cr["state"] == "running" && st != nil && st["done"].(float64) >= 2
	})

	if out := c.Object("POST", c.Org("/crawls/"+id+"/pause"), nil, 200); out["success"] != true {
		t.Fatalf("pause: %v", out)
	}
	if cr := get(); cr["shouldPause"] != true || cr["pausedAt"] == nil {
		t.Fatalf("after pause: shouldPause %v pausedAt %v", cr["shouldPause"], cr["pausedAt"])
	}
	var paused map[string]any
	e2etest.WaitFor(t, 3*time.Minute, "the paused state", func() (bool, error) {
		paused = get()
		return paused["state"] == "paused", fmt.Errorf("state %v", paused["state"])
	})
	if paused["fileCount"].(float64) < 1 {
		t.Fatalf("paused with no file: %v", paused)
	}
	w := c.Object("GET", c.Org("/crawlconfigs/"+cid), nil, 200)
	at, _ := time.Parse("2006-01-02T15:04:05", paused["pausedAt"].(string))
	if w["isCrawlRunning"] != true || w["lastCrawlState"] != "paused" ||
		w["lastCrawlPausedExpiry"] != at.Add(10080*time.Minute).Format("2006-01-02T15:04:05") {
		t.Errorf("workflow while paused: %v %v %v", w["isCrawlRunning"], w["lastCrawlState"], w["lastCrawlPausedExpiry"])
	}
	code, body := c.Send("POST", c.Org("/crawlconfigs/"+cid+"/run"), nil, "application/json")
	if code != 400 || !strings.Contains(string(body), "crawl_already_running") {
		t.Errorf("run while paused: %d %s", code, body)
	}
	code, body = c.Send("GET", c.Org("/crawls/"+id+"/download"), nil, "")
	if code != 200 {
		t.Fatalf("download while paused: %d", code)
	}
	if zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body))); err != nil || len(zr.File) == 0 {
		t.Errorf("download while paused: %v", err)
	}

	c.Object("POST", c.Org("/crawls/"+id+"/resume"), nil, 200)
	if cr := get(); cr["shouldPause"] != false || cr["pausedAt"] != nil {
		t.Fatalf("after resume: shouldPause %v pausedAt %v", cr["shouldPause"], cr["pausedAt"])
	}
	final := c.waitCrawl(id)
	if final["state"] != "complete" || final["fileCount"].(float64) <= paused["fileCount"].(float64) {
		t.Fatalf("after resume: state %v, %v files (%v at the pause)", final["state"], final["fileCount"], paused["fileCount"])
	}
}

// TestCancelPausedCrawl is spec §8.1 item 5's cancel: a crawl canceled
// while paused ends canceled with no files, its pause WACZ gone from
// storage, and no pages.
func TestCancelPausedCrawl(t *testing.T) {
	stack := sharedStack(t)
	c := newClient(t, stack)
	wf := c.Object("POST", c.Org("/crawlconfigs/"), map[string]any{"name": "canceled while paused", "runNow": true, "crawlerChannel": "test",
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/?sim-pages=60&sim-page-ms=2000"}}}}, 200)
	id := wf["run_now_job"].(string)
	get := func() map[string]any { return c.Object("GET", c.Org("/crawls/"+id), nil, 200) }
	eventually(t, "pages done", get, func(cr map[string]any) bool {
		st, _ := cr["stats"].(map[string]any)
		return cr["state"] == "running" && st != nil && st["done"].(float64) >= 2
	})
	c.Object("POST", c.Org("/crawls/"+id+"/pause"), nil, 200)
	e2etest.WaitFor(t, 3*time.Minute, "the paused state", func() (bool, error) {
		cr := get()
		return cr["state"] == "paused" && cr["fileCount"].(float64) >= 1, fmt.Errorf("state %v, %v files", cr["state"], cr["fileCount"])
	})
	var links []string
	for _, r := range c.Object("GET", c.Org("/crawls/"+id+"/replay.json"), nil, 200)["resources"].([]any) {
		links = append(links, r.(map[string]any)["path"].(string))
	}
	e2etest.Download(t, stack.APIURL, links[0])

	c.Object("POST", c.Org("/crawls/"+id+"/cancel"), nil, 200)
	final := c.waitCrawl(id)
	if final["state"] != "canceled" {
		t.Fatalf("canceled while paused: state %v", final["state"])
	}
	eventually(t, "no files", get, func(cr map[string]any) bool { return cr["fileCount"].(float64) == 0 })
	for _, link := range links {
		if strings.HasPrefix(link, "/") {
			link = stack.APIURL + link
		}
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("pause WACZ after the cancel: GET %s answered %d, want 404", link, resp.StatusCode)
		}
	}
	// The pages go with the post-crawl tasks, after the files.
	eventually(t, "no pages", func() map[string]any { return c.Object("GET", c.Org("/crawls/"+id+"/pages"), nil, 200) },
		func(pages map[string]any) bool { return pages["total"].(float64) == 0 })
}
