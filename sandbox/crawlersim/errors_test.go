package crawlersim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

// errorLine is a line of <id>:e, decoded.
type errorLine struct {
	LogLevel, Context, Message string
	Details                    struct {
		URL        string
		StatusCode int
	}
}

// errorLines decodes the crawl's <id>:e, oldest first.
func (c *crawl) errorLines() []errorLine {
	c.t.Helper()
	raw := c.rdb.LRange(context.Background(), c.key("e"), 0, -1).Val()
	slices.Reverse(raw)
	out := make([]errorLine, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal([]byte(r), &out[i]); err != nil {
			c.t.Fatalf("error line %q: %v", r, err)
		}
	}
	return out
}

// statusLines maps the URL of each "Non-200 Status Code" line to its
// status, failing on a URL logged twice.
func statusLines(t *testing.T, lines []errorLine) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, l := range lines {
		if l.Message != "Non-200 Status Code, skipping page" {
			continue
		}
		if l.LogLevel != "error" || l.Context != "general" {
			t.Errorf("status line %+v: want level error, context general", l)
		}
		if _, dup := out[l.Details.URL]; dup {
			t.Errorf("%s logged twice in :e", l.Details.URL)
		}
		out[l.Details.URL] = l.Details.StatusCode
	}
	return out
}

// TestHTTPErrorPages crawls a site whose pages answer with HTTP errors by
// fraction and by pattern: each such page is a failed page (in :d and
// :f, its links not followed) with one error line naming its status and
// URL, and it is archived as the response it is, with a pages.jsonl line
// and an index line of its status; the other pages replay as before.
func TestHTTPErrorPages(t *testing.T) {
	t.Parallel()
	// Every page is linked from the seed, which loads, so every page is
	// found whatever fails.
	seed := "https://example.com/?sim-pages=40&sim-links=39&sim-http-error=0.3&sim-http-status=503&sim-status-rx=sim%2F7%24&sim-noise=0.3"
	c := newCrawl(t, seedConfig(seed), "--workers 1")
	in := c.instance(0)
	if code := in.run(0, nil); code != 0 {
		t.Fatalf("exit %d, want 0; log:\n%s", code, in.out.String())
	}
	lines := c.errorLines()
	byURL := statusLines(t, lines)
	if byURL["https://example.com/sim/7"] != 404 {
		t.Errorf("sim/7 logged %d, want the pattern's status 404", byURL["https://example.com/sim/7"])
	}
	n503 := 0
	for u, code := range byURL {
		switch {
		case code == 503:
			n503++
		case u != "https://example.com/sim/7":
			t.Errorf("%s logged status %d", u, code)
		}
	}
	if n503 < 6 || n503 > 18 {
		t.Errorf("%d pages answered 503, want about 30%% of 40", n503)
	}
	ctx := context.Background()
	if d, f, failed := c.done(), c.found(), c.rdb.LLen(ctx, c.key("f")).Val(); d != 40 || f != 40 || failed != int64(len(byURL)) {
		t.Errorf("done %d found %d failed %d, want 40, 40 and the %d error pages", d, f, failed, len(byURL))
	}
	if n := len(lines) - len(byURL); n == 0 || in.logged("Behaviors timed out") != n {
		t.Errorf("%d other error lines, %d \"Behaviors timed out\" logged: want those, and some", n, in.logged("Behaviors timed out"))
	}
	if in.logged("Failed to load resource: the server responded with a status of 404 (Not Found)")+in.logged("Page Loading Slowly, skipping behaviors") == 0 {
		t.Error("no page logged a noise warning")
	}

	msgs := c.messages()
	if len(msgs) != 1 {
		t.Fatalf("%d crawls-done messages, want 1", len(msgs))
	}
	w, err := wacztest.Inspect(uploaded(t, msgs[0].Filename))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := w.CheckReplay()
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 40 {
		t.Errorf("%d pages in pages.jsonl, want all 40", len(pages))
	}
	for _, p := range pages {
		want := byURL[p.URL]
		if want == 0 {
			want = 200
		}
		if p.Status != want {
			t.Errorf("%s archived with status %d, want %d", p.URL, p.Status, want)
		}
		if title := fmt.Sprintf("%d %s", want, http.StatusText(want)); want != 200 && (len(p.Resources) != 0 || p.Title != title) {
			t.Errorf("error page %s: title %q, %d resources", p.URL, p.Title, len(p.Resources))
		}
	}
}

// TestErrorLinesOnceAcrossRestart: the crawler dies once a 404 page
// loaded and logged its error line, before the page is recorded; the
// restarted crawler crawls that page again and logs the line again. The
// logs hold both, :e holds each page's line once.
func TestErrorLinesOnceAcrossRestart(t *testing.T) {
	t.Parallel()
	seed := "https://example.com/?sim-pages=8&sim-links=7&sim-status-rx=sim%2F%5Cd%2B%24"
	c := newCrawl(t, seedConfig(seed), "--workers 1 --sim.exitAtPage 3 --sim.exitCode 3 --sim.faultRuns 1")
	in := c.instance(0)
	if code := in.run(0, nil); code != 3 {
		t.Fatalf("exit %d, want 3", code)
	}
	const msg = "Non-200 Status Code, skipping page"
	if n, e := in.logged(msg), len(c.errorLines()); n != 2 || e != 1 {
		t.Fatalf("first run logged %d status lines and left %d in :e, want 2 and 1 (the third page's not yet)", n, e)
	}
	if code := in.run(1, nil); code != 0 {
		t.Fatalf("second run exit %d, want 0; log:\n%s", code, in.out.String())
	}
	if n := in.logged(msg); n != 8 {
		t.Errorf("%d status lines logged over both runs, want 8: 7 pages, one of them twice", n)
	}
	byURL := statusLines(t, c.errorLines())
	if len(byURL) != 7 || len(c.errorLines()) != 7 {
		t.Errorf(":e has %d lines for %d pages, want one for each of the 7", len(c.errorLines()), len(byURL))
	}
	if d, f := c.done(), c.found(); d != 8 || f != 8 {
		t.Errorf("done %d found %d, want 8 and 8", d, f)
	}
}
