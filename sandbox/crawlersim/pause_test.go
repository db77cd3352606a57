package crawlersim_test

import (
	"context"
	"testing"
)

// TestPause: <id>:paused makes each instance finish its pages, upload a
// WACZ, write a size of 0 and "interrupted", and exit 0; started again
// without the key, the instances crawl on from the queue to the end.
func TestPause(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig("https://example.com/?sim-pages=40&sim-page-ms=1000&sim-bytes=1000"), "")
	ins := []*instance{c.instance(0), c.instance(1)}
	for _, in := range ins {
		in.start(0, nil)
	}
	c.waitFor("5 pages done", func() bool { return c.done() >= 5 })
	ctx := context.Background()
	if err := c.rdb.Set(ctx, c.key("paused"), "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		if code := in.wait(); code != 0 {
			t.Fatalf("%s exit %d, want 0; log:\n%s", in.host, code, in.out.String())
		}
		if s := c.status(in.host); s != "interrupted" {
			t.Errorf("%s status %q, want interrupted", in.host, s)
		}
		if size := c.rdb.HGet(ctx, c.key("size"), in.host).Val(); size != "0" {
			t.Errorf("%s size %q after the pause upload, want 0", in.host, size)
		}
	}
	atPause, done := len(c.messages()), c.done()
	if atPause == 0 || done >= c.found() {
		t.Fatalf("%d messages, %d of %d done at the pause", atPause, done, c.found())
	}

	c.rdb.Del(ctx, c.key("paused"))
	for _, in := range ins {
		in.start(1, nil)
	}
	for _, in := range ins {
		if code := in.wait(); code != 0 {
			t.Fatalf("%s exit %d after the resume, want 0", in.host, code)
		}
	}
	if d, f := c.done(), c.found(); d != f || d <= done {
		t.Errorf("done %d of %d after the resume (%d at the pause)", d, f, done)
	}
	if len(c.messages()) <= atPause {
		t.Errorf("%d messages after the resume, %d at the pause", len(c.messages()), atPause)
	}
}
