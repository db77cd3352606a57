package crawlersim_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenNow is the fixed wall clock of the golden runs.
var goldenNow = time.Date(2023, 9, 11, 17, 30, 0, 123e6, time.UTC)

// goldenStore is held by one golden crawl at a time: with a fixed clock
// and a fixed store path they all upload to the same key, and a crawl
// reading its WACZ back while another overwrites it reads the other's,
// or fails the read's precondition.
var goldenStore sync.Mutex

// goldenCrawl has three seeds, popped in this order (same score, then
// by JSON): a prefix seed below the host root, whose first out-of-prefix
// link is queued one hop out (extraHops 1); a page-scoped seed, whose
// links may only be extra hops; a one-page site with "&" in its query.
func goldenCrawl(t *testing.T, args string) (*crawl, *instance) {
	goldenStore.Lock()
	t.Cleanup(goldenStore.Unlock)
	cfg := map[string]any{
		"seeds": []any{
			map[string]any{"url": "https://example.com/docs/?sim-pages=4&sim-links=3"},
			map[string]any{"url": "https://example.net/?sim-pages=4", "scopeType": "page"},
			"https://example.org/search?q=a&b=c&sim-pages=1",
		},
		"scopeType": "prefix", "extraHops": 1, "limit": 0,
	}
	c := newCrawl(t, cfg, "--workers 1 "+args)
	c.env["STORE_PATH"] = testStoreDir
	return c, c.instance(0)
}

func fixedClock(o *crawlersim.Options) { o.Now = func() time.Time { return goldenNow } }

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// checkKeys asserts a JSON object has exactly the given keys.
func checkKeys(t *testing.T, raw string, keys ...string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	var got []string
	for k := range obj {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(keys)
	if !slices.Equal(got, keys) {
		t.Errorf("%s: keys %v, want %v", raw, got, keys)
	}
	return obj
}

// TestGoldenQueue freezes the crawler on its second page (the second seed)
// and compares the queue left behind: members built like JSON.stringify, scores depth +
// extraHops × 1000000. The pending entry is rewritten by cjson inside
// Redis (key order is Lua's), so it is checked by shape.
func TestGoldenQueue(t *testing.T) {
	t.Parallel()
	c, in := goldenCrawl(t, "--sim.hangAtPage 2")
	in.start(0, fixedClock)
	ctx := context.Background()
	c.waitFor("second page started", func() bool { return in.logged("Starting page") == 2 })
	close(in.killed)
	if code := in.wait(); code != exitKilled {
		t.Fatalf("exit %d, want %d", code, exitKilled)
	}
	var b strings.Builder
	for _, z := range c.rdb.ZRangeWithScores(ctx, c.key("q"), 0, -1).Val() {
		b.WriteString(strconv.FormatFloat(z.Score, 'f', -1, 64) + " " + z.Member.(string) + "\n")
	}
	checkGolden(t, "queue.golden", b.String())

	pending := c.rdb.HGetAll(ctx, c.key("p")).Val()
	for url, raw := range pending {
		obj := checkKeys(t, raw, "added", "url", "seedId", "depth", "started")
		if obj["url"] != url || obj["started"] != "2023-09-11T17:30:00.123Z" {
			t.Errorf("pending %s = %s", url, raw)
		}
		if lock := c.rdb.Get(ctx, c.key("p:"+url)).Val(); lock != in.host {
			t.Errorf("lock of %s = %q, want %s", url, lock, in.host)
		}
	}
	if found := c.found(); found != 7 {
		t.Errorf("found %d, want 3 seeds, 3 children and 1 extra hop", found)
	}
}

// TestGoldenFinish runs a crawl with one failing page to the end and
// compares the error line in :e and the crawls-done message.
func TestGoldenFinish(t *testing.T) {
	t.Parallel()
	c, in := goldenCrawl(t, `--sim.failUrlRx "docs/sim/2$"`)
	if code := in.run(0, fixedClock); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	ctx := context.Background()
	errs := c.rdb.LRange(ctx, c.key("e"), 0, -1).Val()
	checkGolden(t, "errors.golden", strings.Join(errs, "\n")+"\n")
	done := c.rdb.LRange(ctx, "crawls-done", 0, -1).Val()
	checkGolden(t, "crawls-done.golden", strings.Join(done, "\n")+"\n")

	failed := c.rdb.LRange(ctx, c.key("f"), 0, -1).Val()
	if len(failed) != 1 {
		t.Fatalf("failed pages %v, want one", failed)
	}
	if obj := checkKeys(t, failed[0], "added", "url", "seedId", "depth", "started", "failed"); obj["failed"] != "1" {
		t.Errorf("failed entry %s: want \"failed\":\"1\"", failed[0])
	}
	// Seed 0: itself, 3 children, one extra hop from each page but the
	// failed one (7). Seed 1: itself and its 3 links as extra hops (4).
	// Seed 2: itself.
	if d, err := c.rdb.Get(ctx, c.key("d")).Result(); err != nil || d != "12" || c.found() != 12 {
		t.Errorf(":d = %q (%v), found %d, want 12 and 12 (failed pages count as done)", d, err, c.found())
	}
	if err := c.rdb.Get(ctx, c.key("stopping")).Err(); err != redis.Nil {
		t.Errorf("the crawler wrote :stopping (%v)", err)
	}
}

// TestGoldenIndex runs the golden crawl to the end and compares the
// uploaded WACZ's CDXJ index: keyed as Python's surt keys URLs, sorted,
// a line per page and per subresource of each origin, with offsets,
// lengths and digests that a fixed clock makes the same on every run.
// Every page then replays from the WACZ with its stylesheet and image.
func TestGoldenIndex(t *testing.T) {
	t.Parallel()
	c, in := goldenCrawl(t, "")
	if code := in.run(0, fixedClock); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	msgs := c.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d crawls-done messages, want 1", len(msgs))
	}
	w, err := wacztest.Inspect(uploaded(t, msgs[0].Filename))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "index.golden", strings.Join(w.Index, "\n")+"\n")
	checkReplays(t, w)
}
