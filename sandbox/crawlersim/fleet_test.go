package crawlersim_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// TestFleet runs two instances of a crawl in a fleet: both write running
// and the seed, a busy crawl's pages count, an instance told to stop by
// :stopone sends its message, writes done and exits 0 alone, and Finish
// ends the other after the last page, so pages done equal pages found.
func TestFleet(t *testing.T) {
	c := newCrawl(t, map[string]any{}, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fleet := crawlersim.NewFleet(crawlersim.FleetOptions{PageEvery: 20 * time.Millisecond, ControlEvery: 10 * time.Millisecond,
		Locate: func(string) (string, int, bool) { return c.srv.Addr(), c.db, true }})
	ran := make(chan struct{})
	go func() { defer close(ran); fleet.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	run := func(i int) <-chan int {
		exit := make(chan int, 1)
		go func() {
			exit <- fleet.Program()(ctx, &kubelet.Container{Env: c.env, Hostname: c.host(i), Stdout: io.Discard,
				Args: []string{"crawl", "--config", c.cfg, "--redisStoreUrl", c.url}})
		}()
		return exit
	}
	exited := func(what string, exit <-chan int) {
		t.Helper()
		select {
		case code := <-exit:
			if code != 0 {
				t.Fatalf("%s exited %d, want 0", what, code)
			}
		case <-time.After(waitLimit):
			t.Fatalf("%s never exited", what)
		}
	}
	first, second := run(0), run(1)
	c.waitFor("both instances running", func() bool {
		return c.status(c.host(0)) == "running" && c.status(c.host(1)) == "running"
	})
	if c.found() != 1 || c.done() != 0 {
		t.Fatalf("idle crawl: found %d done %d, want 1 and 0", c.found(), c.done())
	}

	fleet.SetBusy(func(string) bool { return true })
	c.waitFor("three pages", func() bool { return c.done() >= 3 })
	fleet.SetBusy(func(string) bool { return false })
	if n := c.done(); c.found() != n+1 {
		t.Errorf("busy crawl: found %d done %d, want found = done + 1 (the seed)", c.found(), n)
	}
	if _, ok := fleet.PagesAt(testCrawlID, 1); !ok {
		t.Error("PagesAt does not know when the first page was written")
	}

	if err := c.rdb.HSet(ctx, c.key("stopone"), c.host(1), "1").Err(); err != nil {
		t.Fatal(err)
	}
	exited("the instance told to stop", second)
	if got := c.status(c.host(1)); got != "done" {
		t.Errorf("stopped instance's status %q, want done", got)
	}
	if msgs := c.messages(); len(msgs) != 1 || msgs[0].Completed || msgs[0].ID != testCrawlID {
		t.Errorf("after the stop, crawls-done %+v, want one message of the crawl, not completed", msgs)
	}
	if got := c.status(c.host(0)); got != "running" {
		t.Errorf("the other instance's status %q, want running", got)
	}

	if err := fleet.SetStatus(ctx, testCrawlID, "pending-wait"); err != nil {
		t.Fatal(err)
	}
	if got := c.status(c.host(0)); got != "pending-wait" {
		t.Errorf("after SetStatus, status %q, want pending-wait", got)
	}
	if err := fleet.Finish(ctx, testCrawlID); err != nil {
		t.Fatal(err)
	}
	exited("the finished instance", first)
	if c.status(c.host(0)) != "done" || c.done() != c.found() {
		t.Errorf("finished crawl: status %q, found %d, done %d; want done and done = found",
			c.status(c.host(0)), c.found(), c.done())
	}
	if msgs := c.messages(); len(msgs) != 2 || !msgs[1].Completed {
		t.Errorf("after Finish, crawls-done %+v, want a second, completed message", msgs)
	}
}
