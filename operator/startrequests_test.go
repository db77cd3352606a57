package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"

	"github.com/trawlerhq/trawler/store"
)

// TestStartRequests (issue 28): 100 crawls of scale 1 start with no
// wasted request: per crawl 2 PVC POSTs (crawler and Redis), 2 pod POSTs
// (crawler and Redis), no AlreadyExists and no conflict, and at most 3
// CrawlJob status writes from create to running. The API server counts
// the requests (apiserver_request_total); a watch counts each crawl's
// status writes until it runs. The operator's caches lag behind its own
// creates here, as they do under load: only its create expectations keep
// it from creating again.
func TestStartRequests(t *testing.T) {
	const n = 100
	h := newHarness(t)
	cfg := stubConfig(h.config(), h.env.Redis.Addr())
	// On a loaded machine the last of 100 starts can take longer than the
	// tests' usual 20 s before waiting_capacity: a state change of its own.
	cfg.StartingTimeout = 3 * time.Minute
	h.warmCrawlJobWrites()
	op := h.startOperator(cfg)
	h.waitFor("informer caches", time.Minute, op.HasSynced)
	jobs := h.benchJobs(n)

	byCode := func(l map[string]string) string {
		return l["verb"] + " " + l["resource"] + "/" + l["subresource"] + " " + l["code"]
	}
	before := h.apiServerRequestsBy(byCode)
	writes := h.statusWritesUntilRunning(n)
	h.createJobs(jobs)
	seen := <-writes
	perCrawl := seen.writes
	after := h.apiServerRequestsBy(byCode)
	t.Logf("requests: %s", diffCounts(before, after))

	count := func(match func(verb, resource, code string) bool) float64 {
		var sum float64
		for key, v := range after {
			var verb, resource, code string
			if _, err := fmt.Sscan(key, &verb, &resource, &code); err != nil {
				continue
			}
			if match(verb, resource, code) {
				sum += v - before[key]
			}
		}
		return sum
	}
	created := func(resource string) float64 {
		return count(func(verb, res, code string) bool { return verb == "POST" && res == resource+"/" && code == "201" })
	}
	if got := created("persistentvolumeclaims"); got != 2*n {
		t.Errorf("%g PVCs created, want %d", got, 2*n)
	}
	if got := created("pods"); got != 2*n {
		t.Errorf("%g pods created, want %d (crawler and Redis)", got, 2*n)
	}
	// The operator's creates (AlreadyExists) and CrawlJob writes
	// (conflicts); the sandbox kubelet's own PVC binding is not its.
	ours := func(verb, res string) bool {
		return (verb == "POST" && (res == "pods/" || res == "persistentvolumeclaims/")) || strings.HasPrefix(res, "crawljobs/")
	}
	if got := count(func(verb, res, code string) bool { return code == "409" && ours(verb, res) }); got != 0 {
		t.Errorf("%g requests answered 409 (AlreadyExists or a conflict), want 0", got)
	}
	statusWrites := count(func(verb, res, _ string) bool {
		return (verb == "PUT" || verb == "PATCH") && res == "crawljobs/status"
	})
	most, total := 0, 0
	for _, w := range perCrawl {
		most, total = max(most, w), total+w
	}
	t.Logf("status writes from create to running: %d in all, %d at most for one crawl; "+
		"%g status writes in all until the last crawl ran", total, most, statusWrites)
	if most > 3 {
		t.Errorf("a crawl took %d status writes from create to running, want at most 3", most)
		for name, w := range perCrawl {
			if w > 3 {
				t.Logf("%s's statuses until running:\n%s", name, strings.Join(seen.statuses[name], "\n"))
			}
		}
	}
}

// TestSlowStartStillThreeStatusWrites: when the store answers a crawl's
// start slower than a pass waits for it, the crawl still goes from create
// to running in at most 3 status writes. The pass that took no answer
// used to write the status it had (runningSince set, still starting), and
// the pass the answer brought wrote running: 4.
func TestSlowStartStillThreeStatusWrites(t *testing.T) {
	const n = 5
	h := newHarness(t)
	jobs := h.benchJobs(n)
	slow := map[string]bool{}
	for _, j := range jobs {
		slow[j.Spec.ID] = true
	}
	deps := h.deps()
	deps.Store = slowStore{CrawlStore: h.store, slow: slow, delay: time.Second}
	cfg := stubConfig(h.config(), h.env.Redis.Addr())
	cfg.StartingTimeout = 3 * time.Minute
	cfg.StoreTimeout = 10 * time.Second
	op := h.startOperatorWith(cfg, deps)
	h.waitFor("informer caches", time.Minute, op.HasSynced)
	writes := h.statusWritesUntilRunning(n)
	h.createJobs(jobs)
	seen := <-writes
	for name, w := range seen.writes {
		if w > 3 {
			t.Errorf("%s took %d status writes from create to running, want at most 3:\n%s", name, w, strings.Join(seen.statuses[name], "\n"))
		}
	}
}

// startWrites are the status writes of each crawl until it ran: how many,
// and each status written (JSON), so that a failure says which were extra.
type startWrites struct {
	writes   map[string]int
	statuses map[string][]string
}

// statusWritesUntilRunning watches the namespace's CrawlJobs and, once n
// of them run, yields how many times each one's status changed until it
// ran: every write of a changed status is one watch event, and a write
// that changes nothing makes none.
func (h *harness) statusWritesUntilRunning(n int) <-chan startWrites {
	h.t.Helper()
	ctx := context.Background()
	list, err := h.trawler.TrawlerV1().CrawlJobs(h.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	// A watch resumed from the last version seen loses no write when the
	// API server ends it (its timeout, a cut connection).
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return h.trawler.TrawlerV1().CrawlJobs(h.ns).Watch(ctx, o)
		},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	out := make(chan startWrites, 1)
	go func() {
		defer rw.Stop()
		writes, last, running := map[string]int{}, map[string]trawlerv1.CrawlJobStatus{}, map[string]bool{}
		statuses := map[string][]string{}
		deadline := time.After(3 * time.Minute)
		for len(running) < n {
			select {
			case ev, ok := <-rw.ResultChan():
				if !ok {
					h.t.Errorf("the watch ended with %d of %d crawls running", len(running), n)
					out <- startWrites{writes, statuses}
					return
				}
				j, isJob := ev.Object.(*trawlerv1.CrawlJob)
				if !isJob || running[j.Name] || apiequality.Semantic.DeepEqual(last[j.Name], j.Status) {
					continue
				}
				last[j.Name] = j.Status
				writes[j.Name]++
				js, _ := json.Marshal(j.Status)
				statuses[j.Name] = append(statuses[j.Name], string(js))
				if j.Status.State == store.StateRunning {
					running[j.Name] = true
				}
			case <-deadline:
				h.t.Errorf("only %d of %d crawls running after 3 minutes", len(running), n)
				out <- startWrites{writes, statuses}
				return
			}
		}
		out <- startWrites{writes, statuses}
	}()
	return out
}
