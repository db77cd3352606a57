package crawlersim_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox"
)

// fatalLines counts level-fatal lines in <id>:e.
func (c *crawl) fatalLines() int {
	n := 0
	for _, line := range c.rdb.LRange(context.Background(), c.key("e"), 0, -1).Val() {
		if strings.Contains(line, `"logLevel":"fatal"`) {
			n++
		}
	}
	return n
}

func TestFatalExit17(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     string
		setup    func(c *crawl)
		statuses []string // status writes of the run
		fatals   int      // fatal lines in :e (0 when Redis was never reached)
	}{
		{name: "sim.fatalAtStart", args: "--sim.fatalAtStart"},
		{name: "invalid collection", args: "--collection bad!name"},
		{name: "no valid seeds", setup: func(c *crawl) { c.cfg = writeConfig(c.t, seedConfig("ftp://example.com/")) }},
		{name: "redis URL scheme", setup: func(c *crawl) { c.url = "http://127.0.0.1:1/0" }},
		{name: "fatal during a page", args: "--sim.fatalAtPage 3", statuses: []string{"running"}, fatals: 1},
		{
			name:     "malformed webhook URL",
			setup:    func(c *crawl) { c.env["WEBHOOK_URL"] += "/extra" },
			statuses: []string{"running", "pending-wait", "generate-wacz", "uploading-wacz"},
			fatals:   1,
		},
		{
			// Stopped before crawling anything: no WARCs and nothing done.
			name:     "stopped with nothing done",
			setup:    func(c *crawl) { c.rdb.Set(context.Background(), c.key("stopping"), "1", 0) },
			statuses: []string{"generate-wacz", "failed"},
			fatals:   1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCrawl(t, seedConfig("https://example.com/?sim-pages=10"), tc.args)
			if tc.setup != nil {
				tc.setup(c)
			}
			mon := c.monitor()
			in := c.instance(0)
			if code := in.run(0, nil); code != 17 {
				t.Fatalf("exit %d, want 17; log:\n%s", code, in.out.String())
			}
			if in.logged("Final crawl status: done") > 0 {
				t.Error("a fatal exit wrote a final status")
			}
			if tc.statuses != nil {
				mon.expectStatuses(c, in.host, tc.statuses)
			} else if got := mon.statuses(c, in.host); len(got) > 0 {
				t.Errorf("statuses %v, want none", got)
			}
			if n := c.fatalLines(); n != tc.fatals {
				t.Errorf("%d fatal lines in :e, want %d", n, tc.fatals)
			}
			if n := len(c.messages()); n != 0 {
				t.Errorf("%d messages, want none", n)
			}
		})
	}
}

func TestSignals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		site     string // default longSite
		args     string
		act      func(c *crawl, in *instance)
		code     int
		statuses []string
	}{
		{
			name: "before redis exits 1",
			args: "--sim.redisUnreachable",
			act: func(c *crawl, in *instance) {
				c.waitFor("redis wait", func() bool { return in.logged("Waiting for redis at "+c.url) > 0 })
				in.cancel()
			},
			code: 1,
		},
		{
			// Pages of 2 s (scaled) keep the workers busy across both
			// signals, so the status is still running. (With 200 ms pages
			// a worker sometimes ended its page between the signals on a
			// loaded machine, and the status moved on to pending-wait.)
			name: "second signal exits 13",
			site: "https://example.com/?sim-pages=100&sim-page-ms=200000",
			act: func(c *crawl, in *instance) {
				c.waitFor("2 pages", func() bool { return c.done() >= 2 })
				in.cancel()
				c.waitFor("graceful finish", func() bool { return in.logged("SIGNAL: gracefully finishing current pages...") > 0 })
				time.Sleep(5 * time.Millisecond) // the protocol's 200 ms gap, scaled
				in.sigs <- struct{}{}
			},
			code:     13,
			statuses: []string{"running"},
		},
		{
			name: "ignored signal, then kill",
			args: "--sim.ignoreSigterm",
			act: func(c *crawl, in *instance) {
				c.waitFor("5 pages", func() bool { return c.done() >= 5 })
				in.cancel()
				c.waitFor("crawling on", func() bool { return c.done() >= 15 })
				close(in.killed)
			},
			code:     exitKilled,
			statuses: []string{"running"},
		},
		{
			name: "hung process, then kill",
			args: "--sim.hangAtPage 3",
			act: func(c *crawl, in *instance) {
				c.waitFor("page 3", func() bool { return in.logged("Starting page") >= 3 })
				in.cancel()
				in.sigs <- struct{}{}
				close(in.killed)
			},
			code:     exitKilled,
			statuses: []string{"running"},
		},
		{
			// After a limit interrupted the session, the first signal
			// already counts as the second.
			name: "signal after a limit exits 13",
			args: "--sizeLimit 5000 --sim.waczTime 100",
			act: func(c *crawl, in *instance) {
				c.waitFor("packaging", func() bool { return c.status(in.host) == "generate-wacz" })
				in.cancel()
			},
			code:     13,
			statuses: []string{"running", "pending-wait", "generate-wacz"},
		},
		{
			name: "waitOnDone exits 0 on signal",
			site: "https://example.com/?sim-pages=20",
			args: "--waitOnDone",
			act: func(c *crawl, in *instance) {
				c.waitFor("waiting", func() bool { return in.logged("All done, waiting for signal...") > 0 })
				in.cancel()
			},
			code:     0,
			statuses: finishStatuses,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			site := tc.site
			if site == "" {
				site = longSite
			}
			c := newCrawl(t, seedConfig(site), tc.args)
			mon := c.monitor()
			in := c.instance(0)
			in.start(0, nil)
			tc.act(c, in)
			if code := in.wait(); code != tc.code {
				t.Fatalf("exit %d, want %d; log:\n%s", code, tc.code, in.out.String())
			}
			if tc.statuses != nil {
				mon.expectStatuses(c, in.host, tc.statuses)
			}
		})
	}
}

func TestCrashAndResume(t *testing.T) {
	t.Parallel()
	// Lock lease = maxPageTime = 0 + 0 + 70 s of fixed budget, 0.7 s scaled.
	cfg := seedConfig("https://example.com/?sim-pages=30")
	cfg["pageLoadTimeout"], cfg["behaviorTimeout"] = 0, 0
	c := newCrawl(t, cfg, "--workers 1 --sim.exitAtPage 4 --sim.exitCode 3 --sim.faultRuns 1")
	mon := c.monitor()
	in := c.instance(0)
	if code := in.run(0, nil); code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
	ctx := context.Background()
	pending := c.rdb.HKeys(ctx, c.key("p")).Val()
	if len(pending) != 1 {
		t.Fatalf("pending %v, want the page the process died on", pending)
	}
	if lock := c.rdb.Get(ctx, c.key("p:"+pending[0])).Val(); lock != in.host {
		t.Fatalf("lock of %s = %q, want %s", pending[0], lock, in.host)
	}
	if st := c.status(in.host); st != "running" {
		t.Fatalf("status %q after a crash, want running (no status write)", st)
	}
	// The restarted container unlocks its own page; an idle worker queues
	// it again (retry 1) once the queue runs dry.
	if code := in.run(1, nil); code != 0 {
		t.Fatalf("second run exit %d, want 0", code)
	}
	mon.expectStatuses(c, in.host, append([]string{"running"}, finishStatuses...))
	if in.logged("Requeued: "+pending[0]) != 1 {
		t.Errorf("%s was not requeued", pending[0])
	}
	if d, f, n := c.done(), c.found(), len(in.pages()); d != 30 || f != 30 || n != 30 {
		t.Errorf("done %d found %d recorded %d, want 30", d, f, n)
	}
}

func TestBrowserCrash(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig(longSite), "--sim.browserCrashAtPage 5")
	mon := c.monitor()
	in := c.instance(0)
	if code := in.run(0, nil); code != 11 {
		t.Fatalf("exit %d, want 11", code)
	}
	mon.expectStatuses(c, in.host, interruptedStatuses)
	if n := c.rdb.LLen(context.Background(), c.key("f")).Val(); n != 1 {
		t.Errorf("%d failed pages, want the one the browser crashed on", n)
	}
}

func TestStartupStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prepare  func(c *crawl, in *instance) // leaves state behind for the run
		code     int
		statuses []string // status writes of the run
		messages int
		// pages is the seed's size, 100 when 0: a case whose prepare
		// crawls it all keeps it small, within waitLimit on a loaded
		// machine under -race.
		pages int
	}{
		{
			name:     "done does nothing",
			prepare:  func(c *crawl, in *instance) { c.rdb.HSet(context.Background(), c.key("status"), in.host, "done") },
			statuses: []string{"done"},
		},
		{
			name: "generate-wacz resumes packaging",
			prepare: func(c *crawl, in *instance) {
				interruptedRun(c, in)
				c.rdb.HSet(context.Background(), c.key("status"), in.host, "generate-wacz")
			},
			statuses: []string{"generate-wacz", "uploading-wacz", "done"},
			messages: 1,
		},
		{
			name: "stopped packages what exists",
			prepare: func(c *crawl, in *instance) {
				interruptedRun(c, in)
				c.rdb.Set(context.Background(), c.key("stopping"), "1", 0)
			},
			statuses: []string{"generate-wacz", "uploading-wacz", "done"},
			messages: 1,
		},
		{
			// Scale up after the queue drained: nothing to crawl, no WARCs,
			// finished: no upload.
			name: "scale up after drain",
			prepare: func(c *crawl, _ *instance) {
				if code := c.instance(1).run(0, nil); code != 0 {
					c.t.Fatalf("first instance exit %d", code)
				}
				c.rdb.Del(context.Background(), "crawls-done")
			},
			statuses: []string{"running", "pending-wait", "generate-wacz", "done"},
			pages:    10,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCrawl(t, seedConfig(fmt.Sprintf("https://example.com/?sim-pages=%d&sim-page-ms=1000", cmp.Or(tc.pages, 100))), "")
			in := c.instance(0)
			tc.prepare(c, in)
			mon := c.monitor()
			if code := in.run(1, nil); code != tc.code {
				t.Fatalf("exit %d, want %d", code, tc.code)
			}
			mon.expectStatuses(c, in.host, tc.statuses)
			if n := len(c.messages()); n != tc.messages {
				t.Errorf("%d messages, want %d", n, tc.messages)
			}
		})
	}
}

// interruptedRun crawls a few pages and stops with SIGTERM under
// --restartsOnError, leaving WARCs on the volume and the crawl unfinished.
func interruptedRun(c *crawl, in *instance) {
	c.t.Helper()
	in.start(0, nil)
	c.waitFor("5 pages", func() bool { return c.done() >= 5 })
	in.cancel()
	if code := in.wait(); code != 11 {
		c.t.Fatalf("interrupted run exit %d, want 11", code)
	}
}

// TestRedisOutage: while Redis is unreachable the crawler keeps retrying,
// as its client reconnects forever; once a signal has arrived, a lost
// Redis is fatal.
func TestRedisOutage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signal bool
		code   int
	}{
		{"comes back", false, 0},
		{"gone after a signal", true, 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, err := sandbox.StartRedis(context.Background(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Stop(5 * time.Second) })
			c := newCrawlOn(t, srv, 0, seedConfig(longSite), "")
			in := c.instance(0)
			in.start(0, nil)
			c.waitFor("5 pages", func() bool { return c.done() >= 5 })
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			c.waitFor("retrying", func() bool { return in.logged("Redis unavailable, retrying") > 0 })
			if tc.signal {
				in.cancel()
			} else if err := srv.Restart(context.Background()); err != nil {
				t.Fatal(err)
			}
			if code := in.wait(); code != tc.code {
				t.Fatalf("exit %d, want %d; log:\n%s", code, tc.code, in.out.String())
			}
		})
	}
}
