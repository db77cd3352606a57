package crawls

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

// The end-to-end tests of pages that answer with HTTP errors (the
// simulator's sim-http-error, sim-status-rx and sim-url-status seed
// parameters): what the API shows of them, and what the WACZ holds.

// statusMessage is the crawler's error line for a page that answered
// with an HTTP error.
const statusMessage = "Non-200 Status Code, skipping page"

// errorLines reads all of a crawl's error lines through the API.
func (c client) errorLines(id string) []map[string]any {
	c.T.Helper()
	var page struct {
		Items []map[string]any `json:"items"`
		Total int              `json:"total"`
	}
	c.JSON("GET", c.Org("/crawls/"+id+"/errors?pageSize=1000"), nil, 200, &page)
	if len(page.Items) != page.Total {
		c.T.Fatalf("%d error lines of %d in one page", len(page.Items), page.Total)
	}
	return page.Items
}

// splitExitLines separates the operator's lines about crawler exits
// (context k8s, 1.x only) from the rest of a crawl's error lines.
func splitExitLines(all []map[string]any) (lines, exits []map[string]any) {
	for _, l := range all {
		if l["context"] == "k8s" {
			exits = append(exits, l)
		} else {
			lines = append(lines, l)
		}
	}
	return lines, exits
}

// checkExitLines checks the exit lines of a crawl whose crawler pod
// exited 1 once: one "Crawler Instance Exited" line on 1.x, none on 0.11.
func checkExitLines(t *testing.T, exits []map[string]any, protocol, pod string) {
	t.Helper()
	if protocol != k8s.ProtocolV1 {
		if len(exits) != 0 {
			t.Errorf("0.11 crawl with exit lines %v", exits)
		}
		return
	}
	if len(exits) != 1 {
		t.Fatalf("exit lines %v, want one", exits)
	}
	d, _ := exits[0]["details"].(map[string]any)
	if exits[0]["message"] != "Crawler Instance Exited: Error" || exits[0]["logLevel"] != "error" ||
		d["pod"] != pod || d["exitCode"] != 1.0 || d["reason"] != "Error" {
		t.Errorf("exit line %v", exits[0])
	}
}

// statusErrors maps the URL of each page's HTTP error line to the status
// it names, failing the test on a page with more than one such line.
func statusErrors(t *testing.T, lines []map[string]any) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, l := range lines {
		if l["message"] != statusMessage {
			continue
		}
		d, _ := l["details"].(map[string]any)
		u, _ := d["url"].(string)
		code, _ := d["statusCode"].(float64)
		if l["logLevel"] != "error" || u == "" || code < 400 {
			t.Errorf("error line %v: want level error, with url and statusCode in its details", l)
		}
		if _, dup := out[u]; dup {
			t.Errorf("%s has more than one error line", u)
		}
		out[u] = int(code)
	}
	return out
}

// archivedStatuses downloads a crawl's WACZ files and returns the status
// each of their pages was archived with.
func (c client) archivedStatuses(base, id string) map[string]int {
	c.T.Helper()
	out := map[string]int{}
	replay := c.Object("GET", c.Org("/crawls/"+id+"/replay.json"), nil, 200)
	for _, r := range replay["resources"].([]any) {
		res := r.(map[string]any)
		w, err := wacztest.Inspect(e2etest.Download(c.T, base, res["path"].(string)))
		if err != nil {
			c.T.Fatalf("%s: %v", res["name"], err)
		}
		pages, err := w.CheckReplay()
		if err != nil {
			c.T.Fatalf("%s: %v", res["name"], err)
		}
		for _, p := range pages {
			out[p.URL] = p.Status
		}
	}
	return out
}

// errorPages keeps the pages archived with an HTTP error status.
func errorPages(archived map[string]int) map[string]int {
	out := maps.Clone(archived)
	maps.DeleteFunc(out, func(_ string, code int) bool { return code < 400 })
	return out
}

// TestSeedAnswering404: a crawl whose seed answers 404 completes, with
// the one page captured as the 404 it is and its error line.
func TestSeedAnswering404(t *testing.T) {
	d := sharedStack(t)
	c := newClient(t, d)
	seed := "https://missing.example/?sim-http-error=1&sim-http-status=404"
	crawl := c.runCrawl("e2e 404 seed", seed, 1)
	id := crawl["id"].(string)
	stats := crawl["stats"].(map[string]any)
	if crawl["state"] != "complete" || stats["done"] != 1.0 || stats["found"] != 1.0 || crawl["fileCount"] != 1.0 {
		t.Fatalf("crawl ended %v with stats %v and %v files, want complete with one page and one file", crawl["state"], stats, crawl["fileCount"])
	}
	lines := c.errorLines(id)
	if got := statusErrors(t, lines); len(lines) == 0 || !maps.Equal(got, map[string]int{seed: 404}) {
		t.Errorf("error lines %v, want the seed's 404", lines)
	}
	if got := c.archivedStatuses(d.APIURL, id); !maps.Equal(got, map[string]int{seed: 404}) {
		t.Errorf("archived pages %v, want the seed with status 404", got)
	}
}

// TestHTTPErrorFraction: with an error fraction of 0.3 over 20 pages, the
// pages the simulator picks by URL (6 of this site's, the seed not among
// them) answer 500, each with one error line, and are archived so; a
// second crawl of the workflow picks the same pages.
func TestHTTPErrorFraction(t *testing.T) {
	d := sharedStack(t)
	c := newClient(t, d)
	wf := c.Object("POST", c.Org("/crawlconfigs/"), map[string]any{
		"name": "e2e error fraction", "runNow": true, "scale": 2,
		// Every page is linked from the seed, so none is cut off by an
		// error page, whose links the crawler does not follow.
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://http-errors.example/?sim-pages=20&sim-links=19&sim-http-error=0.3"}}},
	}, 200)
	first := c.waitCrawl(wf["run_now_job"].(string))
	second := c.waitCrawl(c.Object("POST", c.Org("/crawlconfigs/"+wf["id"].(string)+"/run"), nil, 200)["started"].(string))
	var picked []map[string]int
	for _, crawl := range []map[string]any{first, second} {
		id := crawl["id"].(string)
		stats := crawl["stats"].(map[string]any)
		if crawl["state"] != "complete" || stats["done"] != 20.0 || stats["found"] != 20.0 {
			t.Fatalf("crawl %s ended %v with stats %v, want complete with 20 pages", id, crawl["state"], stats)
		}
		errs := statusErrors(t, c.errorLines(id))
		if len(errs) != 6 {
			t.Errorf("crawl %s: %d pages with error lines %v, want 6", id, len(errs), errs)
		}
		for u, code := range errs {
			if code != 500 {
				t.Errorf("%s answered %d, want 500", u, code)
			}
		}
		archived := c.archivedStatuses(d.APIURL, id)
		if len(archived) != 20 || !maps.Equal(errorPages(archived), errs) {
			t.Errorf("crawl %s: archived %v, want 20 pages, the error pages %v among them", id, archived, errs)
		}
		picked = append(picked, errs)
	}
	if !maps.Equal(picked[0], picked[1]) {
		t.Errorf("the two crawls picked different pages: %v and %v", slices.Sorted(maps.Keys(picked[0])), slices.Sorted(maps.Keys(picked[1])))
	}
}

// TestErrorLinesOnceAcrossCrawlerRestart: the crawler dies on its third
// page (exit 1) once that page answered 404 and logged its error line,
// before the page is recorded; the restarted container crawls the page
// again and logs the line again. The crawl's logs hold the line twice,
// its errors in MongoDB once a page. On the 1.x protocol its errors also
// hold the operator's one line about the exit.
func TestErrorLinesOnceAcrossCrawlerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sandbox")
	}
	dir := t.TempDir()
	logFile, err := os.Create(filepath.Join(dir, "trawler.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	v, err := e2etest.DevConfig(map[string]any{"crawler.extra_args": "--sim.exitAtPage 3 --sim.faultRuns 1"})
	if err != nil {
		t.Fatal(err)
	}
	stack, err := e2etest.StartStack(v, dir, sandbox.Options{
		Nodes:          kubelet.Nodes{Count: 1},
		RestartBackoff: kubelet.Backoff{Initial: 200 * time.Millisecond, Max: time.Second},
		Programs: map[string]kubelet.Program{v.GetString("crawler.image"): crawlersim.Program(func(o *crawlersim.Options) {
			o.TimeScale = simScale
		})},
	}, slog.New(slog.NewTextHandler(logFile, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stack.Stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	if err := e2etest.WaitReady(stack.APIURL+"/readyz", 2*time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	c := client{e2etest.LoginAs(t, stack.APIURL, &http.Client{Timeout: time.Minute},
		v.GetString("superuser.email"), v.GetString("superuser.password"))}
	c.OID = c.OrgID()
	// Every page but the seed answers 404.
	crawl := c.runCrawl("e2e restart", "https://restart.example/?sim-pages=10&sim-links=9&sim-status-rx=sim%2F%5Cd%2B%24", 1)
	id := crawl["id"].(string)
	if stats := crawl["stats"].(map[string]any); crawl["state"] != "complete" || stats["done"] != 10.0 || stats["found"] != 10.0 {
		t.Fatalf("crawl ended %v with stats %v, want complete with 10 pages", crawl["state"], stats)
	}
	lines, exits := splitExitLines(c.errorLines(id))
	errs := statusErrors(t, lines)
	if len(errs) != 9 || len(lines) != 9 {
		t.Errorf("%d error lines for %d pages, want one for each of the 9 error pages: %v", len(lines), len(errs), lines)
	}
	checkExitLines(t, exits, sandbox.TestCrawlerProtocol(), k8s.CrawlerName(id, 0))
	code, raw := c.Send("GET", c.Org("/crawls/"+id+"/logs?logLevel=error&context=general"), nil, "application/json")
	if code != 200 {
		t.Fatalf("logs: %d %s", code, raw)
	}
	logged := 0
	for sc := bufio.NewScanner(bytes.NewReader(raw)); sc.Scan(); {
		var l struct{ Message string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == statusMessage {
			logged++
		}
	}
	// At least the page the crawler died on logged twice; otherwise the
	// restart never put the errors to the test.
	if logged <= 9 {
		t.Errorf("the logs hold %d status lines, want more than 9 (a page crawled again after the restart)", logged)
	}
}
