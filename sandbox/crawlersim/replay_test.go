package crawlersim_test

import (
	"net/url"
	"testing"

	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

// checkReplays replays every page of the WACZ: each opens with its title
// from pages.jsonl, and embeds the stylesheet and the image (also its
// icon) of its own origin, found in this same WACZ. Each origin's subresources are
// captured once in it.
func checkReplays(t *testing.T, w *wacztest.WACZ) []*wacztest.Page {
	t.Helper()
	pages, err := w.CheckReplay()
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	origins := map[string]bool{}
	for _, p := range pages {
		u, err := url.Parse(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		origin := u.Scheme + "://" + u.Host
		origins[origin] = true
		got := map[string]string{}
		for _, r := range p.Resources {
			got[r.URL] = r.Mime
		}
		if len(got) != 2 || got[origin+"/sim-static/style.css"] != "text/css" || got[origin+"/sim-static/image.png"] != "image/png" {
			t.Errorf("%s replays with %v, want its origin's stylesheet and image", p.URL, got)
		}
	}
	if want := len(w.Pages) + 2*len(origins); w.Records["response"] != want {
		t.Errorf("%d responses for %d pages of %d origins, want %d", w.Records["response"], len(w.Pages), len(origins), want)
	}
	return pages
}

// TestReplayAcrossInstances crawls two sites with three instances: each
// uploads a WACZ of its own pages, and every page of the crawl replays
// from the WACZ of the instance that crawled it, stylesheet and image
// included. One seed has a fragment (allowHash): pages.jsonl keeps it,
// the records and the index, like the browser's request, do not.
func TestReplayAcrossInstances(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, map[string]any{"seeds": []any{
		map[string]any{"url": "https://example.com/docs/?sim-pages=30&sim-bytes=2000"},
		map[string]any{"url": "https://example.org/app#intro", "scopeType": "page", "allowHash": true},
	}}, "")
	var ins []*instance
	for i := range 3 {
		in := c.instance(i)
		in.start(0, nil)
		ins = append(ins, in)
	}
	for _, in := range ins {
		if code := in.wait(); code != 0 {
			t.Fatalf("%s exit %d; log:\n%s", in.host, code, in.out.String())
		}
	}
	msgs := c.messages()
	if len(msgs) != 3 {
		t.Fatalf("%d crawls-done messages, want 3", len(msgs))
	}
	replayed := map[string]bool{}
	for _, m := range msgs {
		w, err := wacztest.Inspect(uploaded(t, m.Filename))
		if err != nil {
			t.Fatalf("%s: %v", m.Filename, err)
		}
		for _, p := range checkReplays(t, w) {
			if replayed[p.URL] {
				t.Errorf("%s is in two WACZ files", p.URL)
			}
			replayed[p.URL] = true
		}
	}
	if len(replayed) != 31 || c.done() != 31 || !replayed["https://example.org/app#intro"] {
		t.Errorf("%d pages replay, %d done; want all 31, https://example.org/app#intro among them", len(replayed), c.done())
	}
}
