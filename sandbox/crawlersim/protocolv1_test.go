package crawlersim_test

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/sandbox/crawlersim"
)

// v1Args are the flags only crawler 1.x knows, as the 1.x CRAWL_ARGS
// carry them: they make the simulator speak 1.x.
const v1Args = "--writePagesToRedis --logBehaviorsToRedis"

// asV1 runs the instance as the operator runs a 1.x crawler: the config in
// the ConfigMap's folder, --workers on the command line.
func asV1(c *crawl) func(*crawlersim.Options) {
	return func(o *crawlersim.Options) {
		o.Args = []string{"crawl", "--config", "/tmp/config/crawl-config.json", "--workers", "2", "--redisStoreUrl", c.url}
		o.Mounts = map[string]string{"/tmp/config/": path.Dir(c.cfg), "/crawls": o.WorkDir}
	}
}

// TestV1PageRecords: a 1.x crawler reads its config from the folder,
// pushes one record per page (failed ones included) to <id>:pages, each
// naming the WACZ it uploads, which <id>:nextWacz announced.
func TestV1PageRecords(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig("https://example.com/?sim-pages=6&sim-status-rx=/sim/3$"), v1Args)
	in := c.instance(0)
	if code := in.run(0, asV1(c)); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, in.out.String())
	}
	type record struct {
		ID, URL, Title, TS, Mime, Filename, FavIconURL string
		LoadState, Status, Depth                       int
		Seed                                           bool
	}
	var records []record
	for _, raw := range c.rdb.LRange(context.Background(), c.key("pages"), 0, -1).Val() {
		var r record
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Fatalf("page record %q: %v", raw, err)
		}
		records = append(records, r)
	}
	if len(records) != 6 || int64(len(records)) != c.done() {
		t.Fatalf("%d page records for %d pages done", len(records), c.done())
	}
	msgs := c.messages()
	if len(msgs) != 1 {
		t.Fatalf("crawls-done %v", msgs)
	}
	wacz := c.rdb.HGet(context.Background(), c.key("nextWacz"), in.host).Val()
	if wacz == "" || path.Base(msgs[0].Filename) != wacz {
		t.Errorf("nextWacz %q, uploaded %s", wacz, msgs[0].Filename)
	}
	seeds, errors, ids := 0, 0, map[string]bool{}
	for _, r := range records {
		ids[r.ID] = true
		if r.Filename != wacz || r.TS == "" || r.Mime != "text/html" || r.FavIconURL != "https://example.com/favicon.ico" {
			t.Errorf("record %+v", r)
		}
		switch {
		case strings.HasSuffix(r.URL, "/sim/3"):
			errors++
			if r.LoadState != 0 || r.Status != 404 || r.Title != "404 Not Found" {
				t.Errorf("error page record %+v", r)
			}
		case r.LoadState != 4 || r.Status != 200 || r.Title == "":
			t.Errorf("page record %+v", r)
		}
		if r.Seed != (r.Depth == 0) {
			t.Errorf("seed %v at depth %d", r.Seed, r.Depth)
		}
		if r.Seed {
			seeds++
		}
	}
	if seeds != 1 || errors != 1 || len(ids) != 6 {
		t.Errorf("%d seeds, %d error pages, %d ids", seeds, errors, len(ids))
	}
}

// TestV011WritesNoPages: without 1.x's flags the simulator is a 0.11
// crawler: no page records, no nextWacz.
func TestV011WritesNoPages(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig("https://example.com/?sim-pages=3"), "")
	in := c.instance(0)
	if code := in.run(0, nil); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, in.out.String())
	}
	for _, k := range []string{"pages", "nextWacz"} {
		if n := c.rdb.Exists(context.Background(), c.key(k)).Val(); n != 0 {
			t.Errorf("0.11 crawler wrote %s", c.key(k))
		}
	}
}

// TestV1Canceled: once <id>:canceled is "1", a 1.x crawler stops at its
// next page and exits 0 without packaging or uploading, keeping the
// status it had; a crawler starting on a canceled crawl exits at once.
func TestV1Canceled(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig("https://example.com/?sim-pages=500&sim-page-ms=2000"), v1Args)
	in := c.instance(0)
	in.start(0, asV1(c))
	c.waitFor("a page done", func() bool { return c.done() >= 1 })
	c.rdb.Set(context.Background(), c.key("canceled"), "1", 0)
	if code := in.wait(); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, in.out.String())
	}
	if msgs := c.messages(); len(msgs) != 0 {
		t.Errorf("canceled crawler uploaded %v", msgs)
	}
	if s := c.status(in.host); s != "running" {
		t.Errorf("status %q after cancel, want the running it had", s)
	}
	if in.logged("Crawl canceled, exiting without uploading") != 1 {
		t.Errorf("no cancel line; log:\n%s", in.out.String())
	}
	again := c.instance(1)
	if code := again.run(0, asV1(c)); code != 0 || c.status(again.host) != "" {
		t.Errorf("crawler started on a canceled crawl: exit %d, status %q", code, c.status(again.host))
	}
}
