package crawls

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
)

// TestProtocolMatrix runs the crawl scenarios whose outcome the crawler
// protocol could change on both protocols, through the API: the shared
// stack's default channel speaks the protocol TRAWLER_TEST_CRAWLER_PROTOCOL
// chooses and its legacy channel the other one. Each scenario must end
// the same way on either (docs/compatibility.md lists the subset):
// a crawl to its page, time and size limits, a stop, a cancel, a
// scale-up, and a restart by an exclusion edit.
func TestProtocolMatrix(t *testing.T) {
	stack := sharedStack(t)
	for _, channel := range []string{k8s.DefaultChannel, legacyChannel} {
		t.Run(channel, func(t *testing.T) {
			t.Run("limit", func(t *testing.T) {
				t.Parallel()
				c := newClient(t, stack)
				id := c.startOn(channel, "limit", "https://limit.example/?sim-pages=20&sim-page-ms=200", map[string]any{"limit": 5}, nil)
				crawl := c.waitCrawl(id)
				stats, _ := crawl["stats"].(map[string]any)
				if crawl["state"] != "complete" || stats["done"] != 5.0 || crawl["fileCount"] == 0.0 {
					t.Errorf("crawl ended %v with stats %v and %v files, want complete, 5 pages, files", crawl["state"], stats, crawl["fileCount"])
				}
			})
			for _, limit := range []struct {
				name, field string
				value       int
			}{{"time limit", "crawlTimeout", 5}, {"size limit", "maxCrawlSize", 300_000}} {
				t.Run(limit.name, func(t *testing.T) {
					t.Parallel()
					c := newClient(t, stack)
					id := c.startOn(channel, limit.name, "https://limits.example/?sim-pages=500&sim-page-ms=1000&sim-bytes=50000",
						nil, map[string]any{limit.field: limit.value})
					if crawl := c.waitCrawl(id); crawl["state"] != "partial_complete" || crawl["fileCount"] == 0.0 {
						t.Errorf("crawl over its %s ended %v with %v files, want partial_complete with files", limit.name, crawl["state"], crawl["fileCount"])
					}
				})
			}
			t.Run("stop", func(t *testing.T) {
				t.Parallel()
				c := newClient(t, stack)
				id := c.startLong(channel, "stop")
				c.Object("POST", c.Org("/crawls/"+id+"/stop"), nil, 200)
				if crawl := c.waitCrawl(id); crawl["state"] != "partial_complete" || crawl["fileCount"] == 0.0 {
					t.Errorf("stopped crawl ended %v with %v files, want partial_complete with files", crawl["state"], crawl["fileCount"])
				}
			})
			t.Run("cancel", func(t *testing.T) {
				t.Parallel()
				c := newClient(t, stack)
				id := c.startLong(channel, "cancel")
				c.Object("POST", c.Org("/crawls/"+id+"/cancel"), nil, 200)
				if crawl := c.waitCrawl(id); crawl["state"] != "canceled" || crawl["fileCount"] != 0.0 {
					t.Errorf("canceled crawl ended %v with %v files, want canceled without files", crawl["state"], crawl["fileCount"])
				}
			})
			t.Run("scale", func(t *testing.T) {
				t.Parallel()
				c := newClient(t, stack)
				id := c.startLong(channel, "scale")
				c.Object("POST", c.Org("/crawls/"+id+"/scale"), map[string]any{"scale": 2}, 200)
				ns := stack.Config.GetString("crawler_namespace")
				e2etest.WaitFor(t, 2*time.Minute, "the second crawler of "+id, func() (bool, error) {
					_, err := stack.Env.Client.CoreV1().Pods(ns).Get(t.Context(), k8s.CrawlerName(id, 1), metav1.GetOptions{})
					return err == nil, err
				})
				c.Object("POST", c.Org("/crawls/"+id+"/stop"), nil, 200)
				if crawl := c.waitCrawl(id); crawl["state"] != "partial_complete" {
					t.Errorf("scaled and stopped crawl ended %v, want partial_complete", crawl["state"])
				}
			})
			t.Run("restart", func(t *testing.T) {
				t.Parallel()
				c := newClient(t, stack)
				id := c.startOn(channel, "restart", "https://restart.example/?sim-pages=60&sim-page-ms=2000", nil, nil)
				c.waitPagesDone(id, 1)
				c.Object("POST", c.Org("/crawls/"+id+"/exclusions?regex=never-matches"), nil, 200)
				crawl := c.waitCrawl(id)
				stats, _ := crawl["stats"].(map[string]any)
				if crawl["state"] != "complete" || stats["done"] != stats["found"] {
					t.Errorf("restarted crawl ended %v with stats %v, want complete with every page done", crawl["state"], stats)
				}
			})
		})
	}
}

// startOn starts a workflow on a crawler channel, with extra config and
// workflow fields, and returns its crawl id.
func (c client) startOn(channel, name, seed string, config, workflow map[string]any) string {
	c.T.Helper()
	cfg := map[string]any{"seeds": []any{map[string]any{"url": seed}}}
	for k, v := range config {
		cfg[k] = v
	}
	body := map[string]any{"name": name + " on " + channel, "runNow": true, "crawlerChannel": channel, "config": cfg}
	for k, v := range workflow {
		body[k] = v
	}
	out := c.Object("POST", c.Org("/crawlconfigs/"), body, 200)
	id, _ := out["run_now_job"].(string)
	if id == "" {
		c.T.Fatalf("no crawl started: %v", out)
	}
	return id
}

// startLong starts a crawl too long to end by itself within the test and
// returns once it has a page done.
func (c client) startLong(channel, name string) string {
	c.T.Helper()
	id := c.startOn(channel, name, fmt.Sprintf("https://%s.example/?sim-pages=500&sim-page-ms=1000", name), nil, nil)
	c.waitPagesDone(id, 1)
	return id
}

// waitPagesDone waits until crawl id runs with n pages done.
func (c client) waitPagesDone(id string, n float64) {
	c.T.Helper()
	e2etest.WaitFor(c.T, 2*time.Minute, fmt.Sprintf("%v pages done in %s", n, id), func() (bool, error) {
		crawl := c.Object("GET", c.Org("/crawls/"+id), nil, 200)
		stats, _ := crawl["stats"].(map[string]any)
		done, _ := stats["done"].(float64)
		return crawl["state"] == "running" && done >= n, fmt.Errorf("still %v, stats %v", crawl["state"], stats)
	})
}
