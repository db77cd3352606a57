package crawlersim_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

// TestUploadsARealWACZ checks what a finished instance uploads: a WACZ
// whose package lists every entry with its hash, whose WARCs hold a
// request and a response per page and, once, per subresource of the
// site (its stylesheet and image), indexed, with the crawl log inside.
func TestUploadsARealWACZ(t *testing.T) {
	t.Parallel()
	c := newCrawl(t, seedConfig("https://example.com/?sim-pages=12&sim-bytes=3000"), "--workers 2")
	in := c.instance(0)
	w := finishAndInspect(t, c, in, 0)
	pages := in.pages()
	if len(pages) != 12 {
		t.Fatalf("%d pages, want 12", len(pages))
	}
	captured := slices.Concat(pages, []string{"https://example.com/sim-static/style.css", "https://example.com/sim-static/image.png"})
	if !sameSet(w.Pages, pages) || !sameSet(w.Responses, captured) {
		t.Errorf("WACZ pages %v, responses %v; want %v and %v", w.Pages, w.Responses, pages, captured)
	}
	if w.Records["request"] != 14 || w.Records["response"] != 14 || w.Records["warcinfo"] < 1 || len(w.Index) != 14 {
		t.Errorf("records %v, %d index lines; want 14 requests, 14 responses, a warcinfo per file, 14 index lines", w.Records, len(w.Index))
	}
	var logged bool
	for _, l := range w.LogLines {
		logged = logged || strings.Contains(l, `"message":"Generating WACZ"`)
	}
	if !logged {
		t.Errorf("the WACZ's logs lack the session's lines: %v", w.LogLines)
	}
}

// finishAndInspect runs the instance (after restarts container
// restarts), which must finish with one crawls-done message, checks the
// message and returns the uploaded WACZ.
func finishAndInspect(t *testing.T, c *crawl, in *instance, restarts int) *wacztest.WACZ {
	t.Helper()
	if code := in.run(restarts, nil); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, in.out.String())
	}
	msgs := c.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	checkMessage(t, msgs[0], in, true)
	w, err := wacztest.Inspect(uploaded(t, msgs[0].Filename))
	if err != nil {
		t.Fatalf("uploaded WACZ: %v", err)
	}
	return w
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestFailedUpload follows the crawler when its upload fails: the error
// is an exception out of the crawl (failing, exit 9, failed on the third
// within the window), no crawls-done message is sent, and the WARCs stay
// on the volume, so a later run uploads them once storage works again.
func TestFailedUpload(t *testing.T) {
	for _, tc := range []struct{ name, key, value string }{
		{"wrong secret", "STORE_SECRET_KEY", "not-the-secret"},
		{"server unreachable", "STORE_ENDPOINT_URL", "http://127.0.0.1:1/btrix-data/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCrawl(t, seedConfig("https://example.com/?sim-pages=6&sim-bytes=2000"), "--sim.failWindow 600")
			mon := c.monitor()
			broken := func(o *crawlersim.Options) {
				o.Env = maps.Clone(o.Env)
				o.Env[tc.key] = tc.value
			}
			in := c.instance(0)
			var want []string
			for run, status := range []string{"failing", "failing", "failed"} {
				if code := in.run(run, broken); code != 9 {
					t.Fatalf("run %d: exit %d, want 9; log:\n%s", run, code, in.out.String())
				}
				want = append(want, "running", "pending-wait", "generate-wacz", "uploading-wacz", status)
				mon.expectStatuses(c, in.host, want)
			}
			if n := len(c.messages()); n != 0 {
				t.Fatalf("%d crawls-done messages after failed uploads", n)
			}
			// With working storage, the next run uploads.
			if w := finishAndInspect(t, c, in, 3); len(w.Pages) != 6 {
				t.Errorf("uploaded WACZ has %d pages, want all 6 of the failed runs", len(w.Pages))
			}
		})
	}
}
