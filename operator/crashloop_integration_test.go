package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// crawlErrors returns the crawl's error lines, decoded.
func (h *harness) crawlErrors(id string) []map[string]any {
	h.t.Helper()
	lines, _, err := h.store.ListCrawlErrors(context.Background(), id, store.Paging{PageSize: 1000})
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]map[string]any, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &out[i]); err != nil {
			h.t.Fatalf("error line %q: %v", l, err)
		}
	}
	return out
}

// waitFailedAndReported waits until the operator failed the crawl and
// reported why, and until its pods and volumes are gone; it returns the
// crawl's errors.
func (h *harness) waitFailedAndReported(id string, timeout time.Duration) []map[string]any {
	h.t.Helper()
	if final := h.waitState(id, timeout, store.FinishedStates...); final != store.StateFailed {
		h.t.Fatalf("final state %s, want failed", final)
	}
	h.waitFor("failure reported and children gone", 60*time.Second, func() bool {
		j, err := h.job(id)
		reported := err != nil || meta.IsStatusConditionTrue(j.Status.Conditions, operator.CondFailureReported)
		return reported && len(h.pods(id)) == 0 && len(h.pvcs(id)) == 0
	})
	return h.crawlErrors(id)
}

// startOperatorForCrashes gives the namespace's crawlers the simulator's
// crash args and starts an operator that tolerates restarts restarts
// without progress.
func (h *harness) startOperatorForCrashes(args string, restarts int) {
	h.t.Helper()
	h.crawlArgs(args)
	cfg := h.config()
	cfg.CrashLoopRestarts = restarts
	h.startOperator(cfg)
}

// operatorLines are the error lines the operator wrote: the reason, then
// one per crawler pod.
func operatorLines(errs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, e := range errs {
		if e["context"] == "operator" {
			out = append(out, e)
		}
	}
	return out
}

// An exclusion of "(" passed the API before issue 15: the crawler exits 17
// on every start, sat in CrashLoopBackOff and the crawl showed running
// with 0 pages for as long as anyone waited. Now the crawl fails, and its
// errors say why, with the crawler's own last words; so does its
// workflow's lastCrawlState. (Not asked to stop: compare
// TestStopAtOnceEndsCanceled.)
func TestFatalCrawlerExitFailsTheCrawl(t *testing.T) {
	h := newHarness(t)
	h.startOperator(h.config())
	id := h.startCrawl(crawlOpts{config: `{"seeds":[{"url":"https://example.com/?sim-pages=5"}],"exclude":["("]}`, workflow: true})
	errs := operatorLines(h.waitFailedAndReported(id, 60*time.Second))
	if len(errs) != 2 {
		t.Fatalf("operator error lines %v, want the reason and one pod's logs", errs)
	}
	if e := errs[0]; e["logLevel"] != "fatal" || !strings.Contains(e["message"].(string), "fatal code 17") {
		t.Errorf("reason line %v", e)
	}
	details, _ := errs[1]["details"].(map[string]any)
	logs, _ := json.Marshal(details["logs"])
	// The crawler's last words: its fatal line (about the regex, or about
	// the seeds it left it without).
	if details["exitCode"] != float64(17) || !strings.Contains(string(logs), `\"logLevel\":\"fatal\"`) {
		t.Errorf("pod line %v", errs[1])
	}
	if c := h.crawl(id); c.Finished == nil {
		t.Errorf("failed crawl without a finish time: %+v", c)
	}
	if s := h.waitLastCrawlState(id); s != store.StateFailed {
		t.Errorf("workflow's lastCrawlState %s, want failed", s)
	}
}

// A crawler that dies on its first page every time (exit 1, no status
// written) never gets a page done: after CrashLoopRestarts restarts the
// crawl fails. (Twenty seeds, so the crawler has pages left to die on
// for longer than that: it gives up on a page after two tries, and with
// none left it exits 17 for want of WARCs.)
func TestCrashLoopWithoutProgressFailsTheCrawl(t *testing.T) {
	h := newHarness(t)
	h.startOperatorForCrashes(" --sim.exitAtPage 1 --sim.exitCode 1", 3)
	var seeds []string
	for i := range 20 {
		seeds = append(seeds, fmt.Sprintf(`{"url":"https://example.com/s%d?sim-pages=1"}`, i))
	}
	id := h.startCrawl(crawlOpts{config: `{"seeds":[` + strings.Join(seeds, ",") + `]}`})
	errs := operatorLines(h.waitFailedAndReported(id, 90*time.Second))
	if len(errs) != 2 || !strings.Contains(errs[0]["message"].(string), "restarted 3 times without a page done") {
		t.Fatalf("operator error lines %v", errs)
	}
	if c := h.crawl(id); c.Stats.Done != 0 {
		t.Errorf("pages done %d", c.Stats.Done)
	}
}

// Restarts with pages done in between are no crash loop: a crawler that
// dies on every third page still finishes the crawl, after more restarts
// than the limit (partially: the crawler gives up on pages that were
// being crawled twice when it died). Twenty pages, because a run can get
// a page or two past its third before it exits: twelve gave only two
// restarts on a loaded machine.
func TestRestartsWithProgressAreNoCrashLoop(t *testing.T) {
	h := newHarness(t)
	h.startOperatorForCrashes(" --sim.exitAtPage 3 --sim.exitCode 1", 2)
	id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=20"})
	if final := h.waitState(id, 120*time.Second, store.FinishedStates...); final != store.StateComplete && final != store.StatePartialComplete {
		t.Fatalf("final state %s, want complete or partial_complete", final)
	}
	if c := h.crawl(id); c.Pods["0"].Restarts <= 2 {
		t.Errorf("crawler restarted %d times, want more than the limit for this test to mean anything", c.Pods["0"].Restarts)
	}
	if errs := operatorLines(h.crawlErrors(id)); len(errs) != 0 {
		t.Errorf("operator error lines %v", errs)
	}
}

// A crawler that dies on every third page gets a page or two done between
// crashes, so the crash-loop rule never trips, and with the kubelet's
// back-off (up to five minutes) such a crawl ran for hours (issue 27, item
// 7). Its restarts are counted over the crawl's life as well: at
// MaxCrawlerRestarts it fails, with the reason and the pods' last words.
func TestSlowCrashLoopEndsAtTheRestartCap(t *testing.T) {
	h := newHarness(t)
	h.crawlArgs(" --sim.exitAtPage 3 --sim.exitCode 1")
	cfg := h.config()
	cfg.CrashLoopRestarts, cfg.MaxCrawlerRestarts = 2, 6
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=500", workflow: true})
	errs := operatorLines(h.waitFailedAndReported(id, 120*time.Second))
	if len(errs) != 2 || !strings.Contains(errs[0]["message"].(string), "restarted 6 times in all") {
		t.Fatalf("operator error lines %v, want the restart cap's reason and one pod's logs", errs)
	}
	if c := h.crawl(id); c.Stats == nil || c.Stats.Done < 6 {
		t.Errorf("stats %+v: want a page or more done between crashes, for this test to mean anything", c.Stats)
	}
	if s := h.waitLastCrawlState(id); s != store.StateFailed {
		t.Errorf("workflow's lastCrawlState %s, want failed", s)
	}
}
