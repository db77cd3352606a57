package crawlersim_test

import (
	"context"
	"encoding/json"
	"testing"
)

// TestSharedQueue runs three instances of two workers on one queue, with
// failing pages and two pages a dead instance left pending (one on its
// last retry), and checks that no URL is crawled twice and that every
// page found is accounted for: :d + dropped = SCARD :s.
func TestSharedQueue(t *testing.T) {
	t.Parallel()
	// Pages ending in 7 fail, so page 7's children 71-80 are never found:
	// 140 site pages are found, 14 of them fail.
	const site = "https://example.com/?sim-pages=150&sim-links=10&sim-page-ms=500&sim-bytes=100"
	c := newCrawl(t, seedConfig(site), `--sim.failUrlRx "/sim/[0-9]*7$"`)
	ctx := context.Background()
	orphan, lastTry := "https://example.com/sim/1000", "https://example.com/sim/1001"
	for url, entry := range map[string]string{
		orphan:  `{"added":"2023-09-11T17:30:00.000Z","url":"` + orphan + `","seedId":0,"depth":1,"started":"2023-09-11T17:30:01.000Z"}`,
		lastTry: `{"added":"2023-09-11T17:30:00.000Z","url":"` + lastTry + `","seedId":0,"depth":1,"retry":1}`,
	} {
		c.rdb.SAdd(ctx, c.key("s"), url)
		c.rdb.HSet(ctx, c.key("p"), url, entry)
	}
	ins := []*instance{c.instance(0), c.instance(1), c.instance(2)}
	for _, in := range ins {
		in.start(0, nil)
	}
	for _, in := range ins {
		if code := in.wait(); code != 0 {
			t.Fatalf("%s exit %d", in.host, code)
		}
	}

	crawled := map[string]string{} // url -> instance that recorded it
	for _, in := range ins {
		for _, u := range in.pages() {
			if prev, ok := crawled[u]; ok {
				t.Errorf("%s crawled by %s and %s", u, prev, in.host)
			}
			crawled[u] = in.host
		}
	}
	for _, raw := range c.rdb.LRange(ctx, c.key("f"), 0, -1).Val() {
		var e struct{ URL, Failed string }
		if err := json.Unmarshal([]byte(raw), &e); err != nil || e.Failed != "1" {
			t.Fatalf("failed entry %q (%v)", raw, err)
		}
		if prev, ok := crawled[e.URL]; ok {
			t.Errorf("%s both failed and crawled by %s", e.URL, prev)
		}
		crawled[e.URL] = "failed"
	}
	dropped := 0
	for _, in := range ins {
		dropped += in.logged("Not requeuing anymore: " + lastTry)
	}
	if dropped != 1 {
		t.Errorf("%s dropped %d times, want once", lastTry, dropped)
	}
	if _, ok := crawled[orphan]; !ok {
		t.Errorf("orphaned pending page %s was never crawled again", orphan)
	}
	d, found := c.done(), c.found()
	if d+int64(dropped) != found || int64(len(crawled)) != d {
		t.Errorf("done %d + dropped %d != found %d (distinct pages crawled or failed: %d)", d, dropped, found, len(crawled))
	}
	if failed := c.rdb.LLen(ctx, c.key("f")).Val(); found != 142 || failed != 14 {
		t.Errorf("found %d, failed %d; want 140 site pages and the 2 orphans, 14 failed", found, failed)
	}
	busy := 0
	for _, in := range ins {
		if len(in.pages()) > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Errorf("only %d instances did any work", busy)
	}
}
