package crawls

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/store"
)

// TestWorkflowStateNeverGoesBack drives `trawler dev` as the web app does:
// it starts a crawl, polls its workflow (one workflow GET and one list
// GET, back to back) while the crawl is canceled or stopped, and fails if
// any reading goes back: lastCrawlState to an earlier group (starting <
// running < ended), a terminal state changing, isCrawlRunning turning true
// again, or lastCrawlId changing.
func TestWorkflowStateNeverGoesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts trawler dev")
	}
	dev := startDev(t, t.TempDir())
	c := e2etest.Login(t, dev.APIURL(), &http.Client{Timeout: time.Minute})
	orgPath := "/api/orgs/" + c.OrgID()

	for _, end := range []string{"cancel", "stop"} {
		t.Run(end, func(t *testing.T) {
			c.T = t
			var created struct {
				ID  string `json:"id"`
				Job string `json:"run_now_job"`
			}
			c.JSON("POST", orgPath+"/crawlconfigs/", map[string]any{
				"name": "never-back-" + end, "runNow": true,
				"config": map[string]any{"seeds": []any{map[string]any{
					"url": "https://example.com/?sim-pages=2000&sim-page-ms=150"}}},
			}, 200, &created)
			if created.Job == "" {
				t.Fatalf("no crawl started: %+v", created)
			}
			p := &workflowPoller{c: c, org: orgPath, cid: created.ID, crawl: created.Job}

			// Stop once some pages are done, so the crawl ends with its
			// pages (a stop before any page ends as canceled).
			p.until(t, 3*time.Minute, "the crawl runs with a page done", func(w workflowReading) bool {
				if w.State != store.StateRunning {
					return false
				}
				var crawl struct {
					Stats *struct{ Done int } `json:"stats"`
				}
				c.JSON("GET", orgPath+"/crawls/"+created.Job, nil, 200, &crawl)
				return end == "cancel" || (crawl.Stats != nil && crawl.Stats.Done > 0)
			})
			c.JSON("POST", orgPath+"/crawls/"+created.Job+"/"+end, nil, 200, nil)

			last := p.until(t, 3*time.Minute, "the workflow shows the ended crawl, counted", func(w workflowReading) bool {
				return !w.Running && store.IsFinished(w.State) && w.CrawlCount == 1
			})
			var crawl struct{ State string }
			c.JSON("GET", orgPath+"/crawls/"+created.Job, nil, 200, &crawl)
			if last.State != crawl.State {
				t.Errorf("workflow ends with lastCrawlState %q, the crawl is %q", last.State, crawl.State)
			}
			if end == "cancel" && last.State != store.StateCanceled {
				t.Errorf("canceled crawl ended as %q", last.State)
			}
			t.Logf("%d readings: %s", len(p.readings), p.transitions())
		})
	}
	if err := dev.Interrupt(); err != nil {
		t.Fatal(err)
	}
}

// workflowReading is what one poll saw of the workflow's last crawl.
type workflowReading struct {
	From       string // "get" or "list"
	LastCrawl  string
	State      string
	Running    bool
	CrawlCount int
}

// workflowPoller polls one workflow and checks that each reading moves
// forward from the one before.
type workflowPoller struct {
	c        *e2etest.Client
	org      string // /api/orgs/<oid>
	cid      string
	crawl    string
	readings []workflowReading
}

// until polls (get, list, get, ...) as fast as the API answers, checking
// every reading, until done accepts one. It returns that reading.
func (p *workflowPoller) until(t *testing.T, timeout time.Duration, what string, done func(workflowReading) bool) workflowReading {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		w := p.read(len(p.readings)%2 == 1)
		if len(p.readings) > 0 {
			if err := stepBack(p.readings[len(p.readings)-1], w); err != nil {
				t.Fatalf("reading %d went back: %v\nreadings so far: %s", len(p.readings), err, p.transitions())
			}
		}
		p.readings = append(p.readings, w)
		if done(w) {
			return w
		}
	}
	t.Fatalf("not within %v: %s; readings: %s", timeout, what, p.transitions())
	return workflowReading{}
}

type workflowOut struct {
	ID             string  `json:"id"`
	LastCrawlID    *string `json:"lastCrawlId"`
	LastCrawlState *string `json:"lastCrawlState"`
	IsCrawlRunning bool    `json:"isCrawlRunning"`
	CrawlCount     int     `json:"crawlCount"`
}

func (p *workflowPoller) read(fromList bool) workflowReading {
	var wf workflowOut
	from := "get"
	if fromList {
		from = "list"
		var page struct{ Items []workflowOut }
		p.c.JSON("GET", p.org+"/crawlconfigs?pageSize=1000", nil, 200, &page)
		for _, it := range page.Items {
			if it.ID == p.cid {
				wf = it
			}
		}
	} else {
		p.c.JSON("GET", p.org+"/crawlconfigs/"+p.cid, nil, 200, &wf)
	}
	r := workflowReading{From: from, Running: wf.IsCrawlRunning, CrawlCount: wf.CrawlCount}
	if wf.LastCrawlID != nil {
		r.LastCrawl = *wf.LastCrawlID
	}
	if wf.LastCrawlState != nil {
		r.State = *wf.LastCrawlState
	}
	if r.LastCrawl != p.crawl {
		p.c.T.Fatalf("%s: lastCrawlId %q, want %q", from, r.LastCrawl, p.crawl)
	}
	return r
}

// stateGroup orders crawl states: a crawl starts, runs, then ends. Within
// the running group states may alternate (a crawler still running while
// another waits), so they share a rank.
func stateGroup(state string) int {
	switch {
	case store.IsFinished(state):
		return 2
	case store.IsRunning(state):
		return 1
	default:
		return 0
	}
}

// stepBack says how reading next goes back from prev, or nil.
func stepBack(prev, next workflowReading) error {
	switch {
	case stateGroup(next.State) < stateGroup(prev.State):
		return fmt.Errorf("lastCrawlState %q (%s) after %q (%s)", next.State, next.From, prev.State, prev.From)
	case store.IsFinished(prev.State) && next.State != prev.State:
		return fmt.Errorf("ended lastCrawlState %q (%s) became %q (%s)", prev.State, prev.From, next.State, next.From)
	case next.Running && !prev.Running:
		return fmt.Errorf("isCrawlRunning true (%s) after false (%s)", next.From, prev.From)
	case next.CrawlCount < prev.CrawlCount:
		return fmt.Errorf("crawlCount %d (%s) after %d (%s)", next.CrawlCount, next.From, prev.CrawlCount, prev.From)
	}
	return nil
}

// transitions summarises the readings as the sequence of distinct
// (state, isCrawlRunning, crawlCount) values with their counts.
func (p *workflowPoller) transitions() string {
	var b strings.Builder
	for i := 0; i < len(p.readings); {
		j := i
		key := func(w workflowReading) string {
			return fmt.Sprintf("%s/running=%t/count=%d", w.State, w.Running, w.CrawlCount)
		}
		for j < len(p.readings) && key(p.readings[j]) == key(p.readings[i]) {
			j++
		}
		fmt.Fprintf(&b, " → %s ×%d", key(p.readings[i]), j-i)
		i = j
	}
	return b.String()
}
