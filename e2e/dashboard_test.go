package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// watchedSite is a simulated site big enough to watch, scale and stop:
// 600 pages of about 0.4 s each (two browsers per crawler), a few failing.
const watchedSite = "https://example.com/?sim-pages=600&sim-page-ms=400&sim-links=4&sim-fail=0.03"

// TestDashboardFollowsACrawl is what a person does in the dashboard: log
// in, create and run a workflow, watch the numbers rise without reloading,
// scale 1 → 3 and see three instances, stop the crawl (by keyboard) and
// see its final state, open its files and download one. Each view is
// audited for accessibility and shown at a phone's size.
func TestDashboardFollowsACrawl(t *testing.T) {
	tb := newTab(t)

	tb.do("opening the dashboard", 30*time.Second,
		chromedp.Navigate(stack.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#login input[name=username]`)))
	tb.screenshot("01-login")
	tb.audit("login page")
	tb.onPhone("login page")
	tb.do("logging in", 30*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#login input[name=username]`), stack.user),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=password]`), stack.password),
		chromedp.Click(chromedp.CSS(`#login button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-workflow`)))
	tb.waitJS("the lists", 30*time.Second, `document.getElementById('main').dataset.loaded === 'true'`)
	tb.screenshot("02-home")
	tb.audit("home page")

	tb.do("creating and running a workflow", 60*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#new-workflow input[name=name]`), "Watched in a browser"),
		chromedp.SendKeys(chromedp.CSS(`#new-workflow input[name=url]`), watchedSite),
		chromedp.Click(chromedp.CSS(`#new-workflow button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#crawl-title`)))
	hash := eval[string](tb, `location.hash`)
	if !strings.HasPrefix(hash, "#/crawls/") {
		t.Fatalf("after creating the workflow the page is %q, not the crawl's", hash)
	}
	crawlID := strings.TrimPrefix(hash, "#/crawls/")
	t.Logf("crawl %s", crawlID)

	// The numbers rise without reloading: a mark set on this page stays.
	eval[bool](tb, `window.e2eNotReloaded = true`)
	seen := tb.pagesDoneRising(3, 2*time.Minute)
	t.Logf("pages done seen rising: %v", seen)
	if !eval[bool](tb, `window.e2eNotReloaded === true`) {
		t.Fatal("the page reloaded while the numbers rose")
	}
	tb.waitJS("the chart to draw", 10*time.Second, `document.querySelectorAll('svg.chart polyline').length === 2`)
	tb.screenshot("03-running")
	tb.audit("crawl page")
	tb.onPhone("crawl page")

	tb.do("scaling to 3", 30*time.Second,
		chromedp.SetValue(chromedp.CSS(`#scale`), "3"),
		chromedp.Click(chromedp.CSS(`#scale-apply`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
		chromedp.Click(chromedp.CSS(`#confirm-yes`)))
	tb.waitJS("three running instances", 2*time.Minute, `(() => {
	  const rows = document.querySelectorAll('#instances tbody tr[data-index]');
	  return rows.length === 3 && [...rows].every((r) => r.querySelector('td[data-status]').dataset.status === 'running');
	})()`)
	tb.screenshot("04-three-instances")

	// Stop by keyboard: the dialog opens on its safe choice.
	tb.do("opening the stop dialog", 30*time.Second,
		chromedp.Focus(chromedp.CSS(`#stop`)), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS(`#confirm`)))
	tb.expectFocus("confirm-no")
	tb.do("moving to the stop button", 10*time.Second, chromedp.KeyEvent("\t"))
	tb.expectFocus("confirm-yes")
	tb.screenshot("05-stop-dialog")
	tb.do("confirming the stop", 10*time.Second, chromedp.KeyEvent("\r"))
	tb.waitJS("the final state", 3*time.Minute,
		`['complete', 'partial_complete'].includes((document.querySelector('#crawl-state [data-state]') || {}).dataset?.state)`)
	tb.waitJS("the stream to end", 30*time.Second, `document.getElementById('connection').textContent === 'Finished'`)
	states := eval[[]string](tb, `[...document.querySelectorAll('#history li')].map((li) => li.dataset.state)`)
	if len(states) < 3 || states[0] != "starting" || !slices.Contains(states, "running") {
		t.Errorf("state history shown: %v", states)
	}
	tb.screenshot("06-finished")

	tb.downloadFile()
	tb.audit("finished crawl page")
	tb.onPhone("finished crawl page")

	tb.do("back to the list", 30*time.Second, chromedp.Click(chromedp.CSS(`a.back`)), chromedp.WaitVisible(chromedp.CSS(`#new-workflow`)))
	tb.waitJS("the crawl in the list", 30*time.Second,
		fmt.Sprintf(`!!document.querySelector('a[href="#/crawls/%s"]')`, crawlID))
	tb.screenshot("08-home-after")
	tb.audit("home page")
	tb.onPhone("home page")
}

// pagesDoneRising waits until "Pages done" has shown n increases.
func (tb *tab) pagesDoneRising(n int, timeout time.Duration) []int {
	tb.t.Helper()
	var seen []int
	deadline := time.Now().Add(timeout)
	for len(seen) <= n {
		text := eval[string](tb, `(document.getElementById('pages-done') || {}).textContent || ''`)
		if v, err := strconv.Atoi(strings.Map(digitsOnly, text)); err == nil && (len(seen) == 0 || v > seen[len(seen)-1]) {
			seen = append(seen, v)
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			tb.t.Fatalf("pages done did not rise %d times within %v: %v", n, timeout, seen)
		}
		tb.waitJS("pages done to change", left,
			fmt.Sprintf(`(document.getElementById('pages-done') || {}).textContent !== %q`, text))
	}
	return seen
}

func digitsOnly(r rune) rune {
	if r >= '0' && r <= '9' {
		return r
	}
	return -1
}

// expectFocus checks which element has the keyboard focus.
func (tb *tab) expectFocus(id string) {
	tb.t.Helper()
	got := eval[string](tb, `document.activeElement ? document.activeElement.id : ''`)
	if got != id {
		tb.t.Fatalf("focus on %q, want %q", got, id)
	}
}

// downloadFile opens the files of the finished crawl and downloads the
// first, as a person clicking its link, and checks it is a WACZ (a zip).
func (tb *tab) downloadFile() {
	tb.t.Helper()
	tb.waitJS("a file to download", time.Minute, `!!document.querySelector('#files li a[download]')`)
	dir := filepath.Join(stack.artifacts, "downloads")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	done := make(chan string, 1)
	if err := chromedp.ListenBrowser(tb.ctx, func(ev any) {
		if e, ok := ev.(*browser.EventDownloadProgress); ok && e.State == browser.DownloadProgressStateCompleted {
			select {
			case done <- e.GUID:
			default:
			}
		}
	}); err != nil {
		tb.t.Fatal(err)
	}
	events := true
	if _, err := chromedp.CallBrowser(tb.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &events,
	}); err != nil {
		tb.t.Fatal(err)
	}
	name := eval[string](tb, `document.querySelector('#files li a[download]').getAttribute('download')`)
	tb.do("downloading the first file", 30*time.Second, chromedp.Click(chromedp.CSS(`#files li a[download]`)))
	tb.screenshot("07-files")
	select {
	case guid := <-done:
		data, err := os.ReadFile(filepath.Join(dir, guid))
		if err != nil {
			tb.t.Fatal(err)
		}
		if len(data) < 22 || !bytes.HasPrefix(data, []byte("PK")) {
			tb.t.Fatalf("downloaded %s: %d bytes, not a zip", name, len(data))
		}
		kept := filepath.Join(dir, filepath.Base(name))
		_ = os.Rename(filepath.Join(dir, guid), kept)
		tb.t.Logf("downloaded %s (%d bytes) to %s", name, len(data), kept)
	case <-time.After(time.Minute):
		tb.t.Fatalf("the download of %s did not complete within a minute", name)
	}
}
