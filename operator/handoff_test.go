package operator_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// timeline orders what the replicas of a handoff test did.
type timeline struct {
	mu     sync.Mutex
	events []string
}

func (l *timeline) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// after returns the events from the first one equal to mark on.
func (l *timeline) after(mark string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.events {
		if e == mark {
			return append([]string(nil), l.events[i+1:]...)
		}
	}
	return nil
}

func (l *timeline) has(e string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.events {
		if x == e {
			return true
		}
	}
	return false
}

// controlWrites is a Redis hook adding "<name> asserts <key>" to a
// timeline for every write of a control key (stop, stop one, cancel).
type controlWrites struct {
	name string
	log  *timeline
}

func (h controlWrites) note(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 2 {
		return
	}
	key := fmt.Sprint(args[1])
	switch cmd.Name() {
	case "set", "hset", "hdel":
		if strings.HasSuffix(key, ":stopping") || strings.HasSuffix(key, ":stopone") || strings.HasSuffix(key, ":canceled") || key == "crawl-stop" {
			h.log.add(h.name + " asserts " + key)
		}
	}
}

func (h controlWrites) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h controlWrites) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(cmd)
		return next(ctx, cmd)
	}
}

func (h controlWrites) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.note(c)
		}
		return next(ctx, cmds)
	}
}

// holding is a transport that holds the requests match selects, once
// held is set, until release is closed, whatever their context says: a
// worker busy for a while, as on a slow connection.
type holding struct {
	next    http.RoundTripper
	held    *atomic.Bool
	match   func(*http.Request) bool
	entered chan struct{}
	once    *sync.Once
	release chan struct{}
}

func (h holding) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.held.Load() && h.match(r) {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	return h.next.RoundTrip(r)
}

// TestLeaderHandoffLeavesNoStaleControlWrites hands the Lease over, as a
// rolling update does, while the old leader asserts a crawl's stop in its
// Redis and one of its workers is still busy with another crawl: the old
// leader's control writes end before the new leader leads.
func TestLeaderHandoffLeavesNoStaleControlWrites(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	log := &timeline{}
	type replica struct {
		name    string
		held    atomic.Bool
		entered chan struct{}
		release chan struct{}
		done    chan error
		cancel  context.CancelFunc
	}
	var stopped atomic.Value // the job whose status writes are not held
	stopped.Store("-")
	start := func(name string) *replica {
		r := &replica{name: name, entered: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
		rc := h.env.Config()
		var once sync.Once
		rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return holding{next: rt, held: &r.held, entered: r.entered, once: &once, release: r.release,
				match: func(req *http.Request) bool {
					return req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/status") &&
						strings.Contains(req.URL.Path, "/crawljobs/") && !strings.Contains(req.URL.Path, stopped.Load().(string))
				}}
		}
		deps := h.deps()
		deps.Kube = kubernetes.NewForConfigOrDie(rc)
		deps.Trawler = versioned.NewForConfigOrDie(rc)
		cfg := h.config()
		cfg.RedisHook = controlWrites{name: name, log: log}
		// The stopping crawl sits in a long page, which would slow its
		// polls to the idle pace: poll it at the fast pace throughout, so
		// that a stale poller has many chances to write.
		cfg.RedisIdlePollInterval = cfg.RedisPollInterval
		c, err := operator.New(cfg, deps)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() {
			r.done <- c.RunWithLeaderElection(ctx, operator.LeaderElection{Namespace: h.ns, Name: "trawler-operator", Identity: name,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
				OnLeading: func() { log.add(name + " leads") }})
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-r.release:
			default:
				close(r.release)
			}
			<-r.done
		})
		return r
	}
	a, b := start("a"), start("b")
	var leader, next *replica
	h.waitFor("a leader", 20*time.Second, func() bool {
		switch {
		case log.has("a leads"):
			leader, next = a, b
		case log.has("b leads"):
			leader, next = b, a
		}
		return leader != nil
	})

	// A crawl whose crawler is in a long page when asked to stop: its
	// leader asserts the stop on every poll until the page is done.
	id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=5&sim-page-ms=200000"})
	stopped.Store(k8s.CrawlJobName(id))
	h.waitState(id, 30*time.Second, store.StateRunning)
	// Stopped before it begins a page, a crawler exits at once (and the
	// crawl ends canceled): wait until its long page is under way.
	rdb := h.crawlRedis(id)
	h.waitFor("the crawler in its first page", 30*time.Second, func() bool {
		return rdb.HLen(context.Background(), id+":p").Val() > 0
	})
	if err := h.launch.StopCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	stopKey := ":stopping"
	h.waitFor("the leader to assert the stop", 20*time.Second, func() bool {
		for _, e := range log.after(leader.name + " leads") {
			if strings.HasPrefix(e, leader.name+" asserts") && strings.HasSuffix(e, stopKey) {
				return true
			}
		}
		return false
	})

	// One of the leader's workers gets stuck writing another crawl's status.
	leader.held.Store(true)
	h.startCrawl(crawlOpts{seed: slowSite})
	select {
	case <-leader.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the leader never wrote the other crawl's status")
	}
	log.add("handoff")
	leader.cancel()
	// The old worker stays busy for a few of the new leader's polls: the
	// old leader's pollers had as many chances to write.
	h.waitFor("the new leader to assert the stop a few times", 30*time.Second, func() bool {
		n := 0
		for _, e := range log.after(next.name + " leads") {
			if strings.HasPrefix(e, next.name+" asserts") && strings.HasSuffix(e, stopKey) {
				n++
			}
		}
		return n >= 4
	})
	close(leader.release)
	select {
	case err := <-leader.done:
		if err != nil {
			t.Errorf("old leader returned %v", err)
		}
		leader.done <- err
	case <-time.After(20 * time.Second):
		t.Fatal("old leader still running")
	}
	var stale []string
	for _, e := range log.after(next.name + " leads") {
		if strings.HasPrefix(e, leader.name+" ") {
			stale = append(stale, e)
		}
	}
	if len(stale) > 0 {
		t.Errorf("the old leader wrote %d control keys after the new one led, e.g. %q", len(stale), stale[0])
	}
}
