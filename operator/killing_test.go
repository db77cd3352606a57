package operator_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// TestKillOperatorAtRandomPoints stops and restarts the operator 20 times
// at random moments of a two-instance crawl: no pod is ever created
// twice, no WACZ or error line is lost or duplicated, and the crawl ends
// complete.
func TestKillOperatorAtRandomPoints(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	id := h.startCrawl(crawlOpts{scale: 2, seed: "https://example.com/?sim-pages=600&sim-page-ms=1500&sim-fail=0.1"})
	rng := rand.New(rand.NewPCG(5, 1149))

	// Every pod UID seen per name: a duplicate would show as a second UID.
	uids := map[string]map[string]bool{}
	logs := map[string]string{}
	var mu sync.Mutex
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	stopWatching := sync.OnceFunc(func() { close(stopWatch); <-watched })
	t.Cleanup(stopWatching) // also when the test fails early
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(50 * time.Millisecond):
			}
			// Not h.pods: this goroutine must not end the test, and a
			// failed list is only a missed sample.
			list, err := h.kube.CoreV1().Pods(h.ns).List(context.Background(),
				metav1.ListOptions{LabelSelector: k8s.LabelCrawl + "=" + id})
			if err != nil {
				continue
			}
			for _, p := range list.Items {
				name := p.Name
				mu.Lock()
				if uids[name] == nil {
					uids[name] = map[string]bool{}
				}
				uids[name][string(p.UID)] = true
				if l := h.env.Kubelet.Logs(h.ns, name, p.Spec.Containers[0].Name); len(l) >= len(logs[name]) {
					logs[name] = l
				}
				mu.Unlock()
			}
		}
	}()

	for range 20 {
		op := h.startOperator(h.config())
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		op.stop()
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
	}
	t.Logf("state after 20 kills: %s", h.crawl(id).State)
	if s := h.crawl(id).State; store.IsFinished(s) {
		t.Fatalf("crawl ended (%s) before the kills were over: make it longer", s)
	}
	h.startOperator(h.config())
	final := h.waitState(id, 180*time.Second, store.FinishedStates...)
	h.waitFor("post-crawl tasks", 30*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	stopWatching()
	if final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}

	var uploads, errorLines int
	for name, ids := range uids {
		if len(ids) != 1 {
			t.Errorf("pod %s created %d times", name, len(ids))
		}
		for _, line := range strings.Split(logs[name], "\n") {
			if strings.Contains(line, `"Uploaded WACZ"`) {
				uploads++
			}
			if strings.Contains(line, `"logLevel":"error"`) || strings.Contains(line, `"logLevel":"fatal"`) {
				errorLines++
			}
		}
	}
	c := h.crawl(id)
	if len(c.Files) != uploads || uploads != 2 {
		t.Errorf("files recorded %d, uploaded %d (want 2)", len(c.Files), uploads)
	}
	_, total, err := h.store.ListCrawlErrors(context.Background(), id, store.Paging{})
	if err != nil || int(total) != errorLines || errorLines == 0 {
		t.Errorf("error lines recorded %d (%v), logged %d", total, err, errorLines)
	}
}

// cuttable is an HTTP transport that can be cut, as a crashed or
// partitioned process would be.
type cuttable struct {
	next http.RoundTripper
	cut  *atomic.Bool
}

func (c cuttable) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("connection cut")
	}
	return c.next.RoundTrip(r)
}

// TestLeaderFailover runs two operators under one Lease; the leader's
// connection is cut mid-crawl and the other takes over and finishes it.
func TestLeaderFailover(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	type replica struct {
		name    string
		cut     atomic.Bool
		leading atomic.Bool
		done    chan error
		cancel  context.CancelFunc
	}
	start := func(name string) *replica {
		r := &replica{name: name, done: make(chan error, 1)}
		rc := h.env.Config()
		rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return cuttable{next: rt, cut: &r.cut} }
		deps := h.deps()
		deps.Kube = kubernetes.NewForConfigOrDie(rc)
		deps.Trawler = versioned.NewForConfigOrDie(rc)
		c, err := operator.New(h.config(), deps)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() {
			r.done <- c.RunWithLeaderElection(ctx, operator.LeaderElection{Namespace: h.ns, Name: "trawler-operator", Identity: name,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
				OnLeading: func() { r.leading.Store(true) }})
		}()
		t.Cleanup(func() { cancel(); <-r.done })
		return r
	}
	a, b := start("replica-a"), start("replica-b")
	var leader, follower *replica
	h.waitFor("a leader", 20*time.Second, func() bool {
		switch {
		case a.leading.Load():
			leader, follower = a, b
		case b.leading.Load():
			leader, follower = b, a
		}
		return leader != nil
	})
	id := h.startCrawl(crawlOpts{scale: 2, seed: slowSite})
	h.waitState(id, 30*time.Second, store.StateRunning)
	leader.cut.Store(true)
	cutAt := time.Now()
	h.waitFor("the follower to lead", 20*time.Second, follower.leading.Load)
	t.Logf("%s took over %v after %s was cut", follower.name, time.Since(cutAt), leader.name)
	select {
	case err := <-leader.done:
		if !errors.Is(err, operator.ErrLostLeadership) {
			t.Errorf("old leader returned %v, want ErrLostLeadership", err)
		}
		leader.done <- err
	case <-time.After(10 * time.Second):
		t.Error("old leader still running")
	}
	if final := h.waitState(id, 90*time.Second, store.FinishedStates...); final != store.StateComplete {
		t.Fatalf("final state %s", final)
	}
	h.waitFor("job removed by the new leader", 60*time.Second, func() bool { return h.gone(id) })
	_, err := h.trawler.TrawlerV1().CrawlJobs(h.ns).Get(context.Background(), k8s.CrawlJobName(id), metav1.GetOptions{})
	if err == nil {
		t.Error("job still there")
	}
}
