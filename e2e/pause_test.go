package e2e

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardPausesAndResumes pauses a running crawl with the Pause
// button, sees it paused with Resume offered instead, resumes it, sees
// it running again, and stops it.
func TestDashboardPausesAndResumes(t *testing.T) {
	tb := newTab(t)
	tb.do("logging in", 60*time.Second,
		chromedp.Navigate(stack.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#login input[name=username]`)),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=username]`), stack.user),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=password]`), stack.password),
		chromedp.Click(chromedp.CSS(`#login button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-workflow`)))
	tb.do("creating and running a workflow", 60*time.Second,
		chromedp.SendKeys(chromedp.CSS(`#new-workflow input[name=name]`), "Paused in a browser"),
		chromedp.SendKeys(chromedp.CSS(`#new-workflow input[name=url]`), watchedSite),
		chromedp.Click(chromedp.CSS(`#new-workflow button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#crawl-title`)))
	tb.pagesDoneRising(2, 2*time.Minute)
	if !eval[bool](tb, `document.getElementById('resume').hidden && !document.getElementById('pause').hidden`) {
		t.Fatal("a running crawl should offer Pause, not Resume")
	}

	tb.do("pausing", 30*time.Second,
		chromedp.Click(chromedp.CSS(`#pause`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
		chromedp.Click(chromedp.CSS(`#confirm-yes`)))
	tb.waitJS("the pause asked", 30*time.Second, `document.getElementById('pause').hidden && !document.getElementById('resume').hidden`)
	tb.waitJS("the paused state", 3*time.Minute,
		`(document.querySelector('#crawl-state [data-state]') || {}).dataset?.state === 'paused'`)
	tb.screenshot("pause-01-paused")
	tb.audit("paused crawl page")

	tb.do("resuming", 30*time.Second,
		chromedp.Click(chromedp.CSS(`#resume`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
		chromedp.Click(chromedp.CSS(`#confirm-yes`)))
	tb.waitJS("Pause offered again", 30*time.Second, `!document.getElementById('pause').hidden && document.getElementById('resume').hidden`)
	tb.waitJS("the crawl running again", 3*time.Minute,
		`(document.querySelector('#crawl-state [data-state]') || {}).dataset?.state === 'running'`)
	tb.screenshot("pause-02-resumed")

	tb.do("stopping", 30*time.Second,
		chromedp.Click(chromedp.CSS(`#stop`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
		chromedp.Click(chromedp.CSS(`#confirm-yes`)))
	tb.waitJS("the final state", 3*time.Minute,
		`['complete', 'partial_complete'].includes((document.querySelector('#crawl-state [data-state]') || {}).dataset?.state)`)
	states := eval[[]string](tb, `[...document.querySelectorAll('#history li')].map((li) => li.dataset.state)`)
	paused := false
	for _, s := range states {
		paused = paused || s == "paused"
	}
	if !paused {
		t.Errorf("state history shown: %v, without paused", states)
	}
}
