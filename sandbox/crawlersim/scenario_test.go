package crawlersim_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

// The scenario tests replay the rows of the spec's "lifecycle by scenario"
// table (crawler-protocol.md §3.6) against a real redis-server and check
// the exact Redis state and exit codes the operator would observe.

var (
	finishStatuses      = []string{"running", "pending-wait", "generate-wacz", "uploading-wacz", "done"}
	interruptedStatuses = []string{"running", "pending-wait", "interrupted"}
)

func seedConfig(url string) map[string]any {
	return map[string]any{"seeds": []any{map[string]any{"url": url}}, "scopeType": "prefix", "limit": 0, "extraHops": 0}
}

// expectStatuses waits until the instance's status writes equal want.
func (m *monitor) expectStatuses(c *crawl, host string, want []string) {
	c.t.Helper()
	deadline := len(want)
	c.waitFor(host+" statuses "+strings.Join(want, ","), func() bool { return len(m.statuses(c, host)) >= deadline })
	if got := m.statuses(c, host); !slices.Equal(got, want) {
		c.t.Errorf("%s statuses = %v, want %v", host, got, want)
	}
}

// checkMessage verifies one crawls-done message against the instance's
// WACZ on disk and the filename rule.
func checkMessage(t *testing.T, m doneMessage, in *instance, completed bool) {
	t.Helper()
	if m.ID != testCrawlID || m.User == nil || *m.User != testUser || m.Completed != completed {
		t.Errorf("message %+v: want id %s, user %s, completed %v", m, testCrawlID, testUser, completed)
	}
	prefix := testStore + in.c.env["STORE_PATH"]
	suffix := "-" + in.host[len(in.host)-14:] + ".wacz"
	ts := strings.TrimSuffix(strings.TrimPrefix(m.Filename, prefix), suffix)
	if !strings.HasPrefix(m.Filename, prefix) || !strings.HasSuffix(m.Filename, suffix) || len(ts) != 17 {
		t.Errorf("filename %q, want %s<17-digit ts>%s", m.Filename, prefix, suffix)
	}
	if _, err := strconv.ParseUint(ts, 10, 64); err != nil {
		t.Errorf("filename timestamp %q is not digits", ts)
	}
	if data, err := os.ReadFile(filepath.Join(in.dir, "collections", "thecrawl", "thecrawl.wacz")); err == nil {
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != m.Hash || int64(len(data)) != m.Size {
			t.Errorf("message hash/size %s/%d, WACZ on disk %x/%d", m.Hash, m.Size, sum, len(data))
		}
	}
	// The message comes only after the upload: the object is there.
	data := uploaded(t, m.Filename)
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != m.Hash || int64(len(data)) != m.Size {
		t.Errorf("message hash/size %s/%d, uploaded object %x/%d", m.Hash, m.Size, sum, len(data))
	}
}

// uploaded reads the object a crawls-done filename names from the test
// S3 server.
func uploaded(t *testing.T, filename string) []byte {
	t.Helper()
	key, ok := strings.CutPrefix(filename, testStore)
	if !ok {
		t.Fatalf("filename %s is not in %s", filename, testStore)
	}
	b, err := s3.New(testStorage(testS3), s3.Options{Transport: &http.Transport{DialContext: testDNS.Dial}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("uploaded WACZ: %v", err)
	}
	defer o.Close()
	data, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestNaturalFinish(t *testing.T) {
	for _, scale := range []int{1, 3} {
		t.Run("scale"+strconv.Itoa(scale), func(t *testing.T) {
			t.Parallel()
			// 5000 bytes a page hold even the first page of an instance,
			// which also captures the site's stylesheet and image.
			c := newCrawl(t, seedConfig("https://example.com/?sim-pages=30&sim-bytes=5000"), "")
			mon := c.monitor()
			var ins []*instance
			for i := range scale {
				in := c.instance(i)
				in.start(0, nil)
				ins = append(ins, in)
			}
			for _, in := range ins {
				if code := in.wait(); code != 0 {
					t.Fatalf("%s exit %d, want 0; log:\n%s", in.host, code, in.out.String())
				}
			}
			for _, in := range ins {
				mon.expectStatuses(c, in.host, finishStatuses)
			}
			// Instances finish together: nobody leaves crawling while a page
			// is still being worked on anywhere.
			lastPage := mon.index(true, func(cmd []string) bool { return cmd[0] == "incr" && cmd[1] == c.key("d") })
			firstWait := mon.index(false, func(cmd []string) bool { return len(cmd) == 4 && cmd[1] == c.key("status") && cmd[3] == "pending-wait" })
			if firstWait < lastPage {
				t.Errorf("an instance went to pending-wait (command %d) before the last page finished (command %d)", firstWait, lastPage)
			}
			if d, f := c.done(), c.found(); d != 30 || f != 30 {
				t.Errorf("done %d found %d, want 30 and 30", d, f)
			}
			ctx := context.Background()
			if n := c.rdb.ZCard(ctx, c.key("q")).Val() + c.rdb.HLen(ctx, c.key("p")).Val(); n != 0 {
				t.Errorf("queue+pending = %d after the crawl", n)
			}
			msgs := c.messages()
			if len(msgs) != scale {
				t.Fatalf("%d crawls-done messages, want %d", len(msgs), scale)
			}
			var pages int
			for _, in := range ins {
				i := slices.IndexFunc(msgs, func(m doneMessage) bool { return strings.HasSuffix(m.Filename, in.host[len(in.host)-14:]+".wacz") })
				if i < 0 {
					t.Fatalf("no message for %s in %+v", in.host, msgs)
				}
				checkMessage(t, msgs[i], in, true)
				n := len(in.pages())
				pages += n
				if size := c.rdb.HGet(ctx, c.key("size"), in.host).Val(); size != strconv.Itoa(n*5000) {
					t.Errorf("%s size %s, want %d", in.host, size, n*5000)
				}
			}
			if pages != 30 {
				t.Errorf("%d pages recorded over all volumes, want 30", pages)
			}
		})
	}
}

// longSite is a crawl slow enough to act on mid-way: 200 pages of 20 ms
// (scaled), two workers per instance.
const longSite = "https://example.com/?sim-pages=200&sim-page-ms=2000&sim-bytes=1000"

func TestGlobalStop(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig(longSite), "")
	mon := c.monitor()
	ins := []*instance{c.instance(0), c.instance(1)}
	for _, in := range ins {
		in.start(0, nil)
	}
	c.waitFor("10 pages done", func() bool { return c.done() >= 10 })
	if err := c.rdb.Set(context.Background(), c.key("stopping"), "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		if code := in.wait(); code != 0 {
			t.Fatalf("%s exit %d, want 0", in.host, code)
		}
		mon.expectStatuses(c, in.host, finishStatuses)
	}
	if d, f := c.done(), c.found(); d >= f || d < 10 {
		t.Errorf("done %d found %d: want a partial crawl", d, f)
	}
	msgs := c.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	for _, m := range msgs {
		in := ins[0]
		if strings.HasSuffix(m.Filename, "-1.wacz") {
			in = ins[1]
		}
		checkMessage(t, m, in, false)
	}
}

func TestStopOne(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig(longSite), "")
	mon := c.monitor()
	ins := []*instance{c.instance(0), c.instance(1), c.instance(2)}
	for _, in := range ins {
		in.start(0, nil)
	}
	c.waitFor("10 pages done", func() bool { return c.done() >= 10 })
	if err := c.rdb.HSet(context.Background(), c.key("stopone"), ins[2].host, "1").Err(); err != nil {
		t.Fatal(err)
	}
	if code := ins[2].wait(); code != 0 {
		t.Fatalf("instance 2 exit %d, want 0", code)
	}
	mon.expectStatuses(c, ins[2].host, finishStatuses)
	doneAtStop := c.done()
	if ins[0].exited() || ins[1].exited() {
		t.Fatal("instances 0 and 1 stopped with instance 2")
	}
	if msgs := c.messages(); len(msgs) != 1 {
		t.Fatalf("%d messages after the scale-down, want 1", len(msgs))
	} else {
		checkMessage(t, msgs[0], ins[2], false)
	}
	for _, in := range ins[:2] {
		if code := in.wait(); code != 0 {
			t.Fatalf("%s exit %d, want 0", in.host, code)
		}
		mon.expectStatuses(c, in.host, finishStatuses)
	}
	if d, f := c.done(), c.found(); d != 200 || f != 200 || doneAtStop >= 200 {
		t.Errorf("done %d (at stop %d), found %d: want the others to finish all 200", d, doneAtStop, f)
	}
	if n := len(c.messages()); n != 3 {
		t.Errorf("%d messages, want 3", n)
	}
	// The scaled-down instance crawled nothing after it stopped.
	if n := len(ins[2].pages()); int64(n) > doneAtStop {
		t.Errorf("instance 2 recorded %d pages, more than the %d done when it stopped", n, doneAtStop)
	}
}

func TestSigterm(t *testing.T) {
	for _, tc := range []struct {
		name            string
		restartsOnError bool
		statuses        []string
		messages        int
	}{
		// Browsertrix's case: no WACZ now, the next run resumes and packages.
		{"restartsOnError", true, interruptedStatuses, 0},
		// Without the flag a signal is a final exit: package what exists.
		{"finalExit", false, []string{"running", "pending-wait", "generate-wacz", "uploading-wacz", "interrupted"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCrawl(t, seedConfig(longSite), "")
			if !tc.restartsOnError {
				c.env["CRAWL_ARGS"] = strings.TrimSuffix(c.env["CRAWL_ARGS"], " --restartsOnError")
			}
			mon := c.monitor()
			in := c.instance(0)
			in.start(0, nil)
			c.waitFor("10 pages done", func() bool { return c.done() >= 10 })
			in.cancel()
			if code := in.wait(); code != 11 {
				t.Fatalf("exit %d, want 11", code)
			}
			mon.expectStatuses(c, in.host, tc.statuses)
			if n := len(c.messages()); n != tc.messages {
				t.Fatalf("%d messages after SIGTERM, want %d", n, tc.messages)
			}
			if tc.messages > 0 {
				checkMessage(t, c.messages()[0], in, false)
				return
			}
			// The restarted container resumes from the shared queue.
			first := in.pages()
			if code := in.run(1, nil); code != 0 {
				t.Fatalf("second run exit %d, want 0", code)
			}
			mon.expectStatuses(c, in.host, append(slices.Clone(tc.statuses), finishStatuses...))
			all := in.pages()
			if !slices.Equal(all[:len(first)], first) {
				t.Fatal("pages.jsonl of the first session changed")
			}
			seen := map[string]bool{}
			for _, u := range all {
				if seen[u] {
					t.Errorf("%s crawled twice", u)
				}
				seen[u] = true
			}
			if d, f := c.done(), c.found(); d != 200 || f != 200 || len(all) != 200 {
				t.Errorf("done %d found %d recorded %d, want 200", d, f, len(all))
			}
			msgs := c.messages()
			if len(msgs) != 1 {
				t.Fatalf("%d messages, want 1", len(msgs))
			}
			checkMessage(t, msgs[0], in, true)
			if msgs[0].Size < 200*1000 {
				t.Errorf("WACZ size %d does not cover both sessions' 200000 bytes", msgs[0].Size)
			}
		})
	}
}

func TestSessionSizeLimit(t *testing.T) {
	t.Parallel()
	// Each session stops once its archive reaches 10 pages of 4000 bytes
	// (enough for its first page, which also captures the site's
	// stylesheet and image again: the collection was wiped).
	c := newCrawl(t, seedConfig("https://example.com/?sim-pages=40&sim-bytes=4000"), "--workers 1 --sizeLimit 40000")
	mon := c.monitor()
	in := c.instance(0)
	var want []string
	for run := 0; ; run++ {
		if run > 6 {
			t.Fatal("crawl did not finish in 6 sessions")
		}
		code := in.run(run, nil)
		msgs := c.messages()
		if len(msgs) != run+1 {
			t.Fatalf("run %d: %d messages, want %d", run, len(msgs), run+1)
		}
		last := msgs[len(msgs)-1]
		// Each session's WACZ replays on its own.
		w, err := wacztest.Inspect(uploaded(t, last.Filename))
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		checkReplays(t, w)
		if code == 0 {
			want = append(want, finishStatuses...)
			checkMessage(t, last, in, true)
			break
		}
		if code != 11 {
			t.Fatalf("run %d exit %d, want 11 or 0", run, code)
		}
		// Uploaded, then the local collection is wiped.
		want = append(want, "running", "pending-wait", "generate-wacz", "uploading-wacz", "interrupted")
		checkMessage(t, last, in, false)
		if last.Size < 40000 {
			t.Errorf("run %d: WACZ of %d bytes, want the session's 40000+", run, last.Size)
		}
		if _, err := os.Stat(filepath.Join(in.dir, "collections", "thecrawl")); !os.IsNotExist(err) {
			t.Errorf("run %d: collection not wiped (%v)", run, err)
		}
	}
	mon.expectStatuses(c, in.host, want)
	if d, f := c.done(), c.found(); d != 40 || f != 40 {
		t.Errorf("done %d found %d, want 40", d, f)
	}
	if len(c.messages()) != 4 {
		t.Errorf("%d messages, want 4 sessions of 10 pages", len(c.messages()))
	}
}

func TestRepeatedExceptions(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig(longSite), "--sim.throwAtPage 2 --sim.failWindow 600")
	mon := c.monitor()
	in := c.instance(0)
	want := []string{}
	for run, status := range []string{"failing", "failing", "failed", "failed"} {
		if code := in.run(run, nil); code != 9 {
			t.Fatalf("run %d exit %d, want 9", run, code)
		}
		want = append(want, "running", status)
		mon.expectStatuses(c, in.host, want)
	}
	ctx := context.Background()
	key := c.key("status:failcount:" + in.host)
	if n := c.int(key); n != 4 {
		t.Errorf("failcount %d, want 4", n)
	}
	if ttl := c.rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 6*1e9 {
		t.Errorf("failcount TTL %v, want the scaled 600 s window (6 s)", ttl)
	}
	var failed int
	for _, line := range c.rdb.LRange(ctx, c.key("e"), 0, -1).Val() {
		if strings.Contains(line, `"message":"Crawl failed"`) {
			failed++
		}
	}
	if failed != 4 {
		t.Errorf("%d Crawl failed lines in :e, want 4", failed)
	}
	if n := len(c.messages()); n != 0 {
		t.Errorf("%d messages, want none", n)
	}
}
