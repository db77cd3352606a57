package operator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/store"
)

// BenchmarkPauseResume (issue 29): 100 running crawls are paused at once,
// as the API pauses them (the crawl document, then spec.pausedAt), and
// later resumed at once. It reports the p99 from the request to the crawl
// document's paused, which includes the simulator's pause upload (its
// crawls-done message, recorded by the operator), and from the resume to
// running again, which includes new crawler pods, each as the bench's
// reads saw it and as the operator's state history stamped it (see
// timings). Target: both ≤ 2 s.
// The crawler side is the scale harness's: crawlersim.Fleet and shared
// redis-servers, with the operator in this process.
//
//	go test -run '^$' -bench PauseResume -benchtime 1x ./operator/
func BenchmarkPauseResume(b *testing.B) {
	const n = 100
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(b)
	shared, err := sandbox.StartSharedRedis(ctx, b.TempDir(), 1, n+1)
	if err != nil {
		b.Fatal(err)
	}
	defer shared.Stop()
	fleet := crawlersim.NewFleet(crawlersim.FleetOptions{Locate: func(host string) (string, int, bool) {
		db, ok := shared.Locate(host)
		return db.Addr, db.DB, ok
	}})
	fleet.SetBusy(func(string) bool { return true })
	fleetDone := make(chan struct{})
	go func() { defer close(fleetDone); fleet.Run(ctx) }()
	defer func() { cancel(); <-fleetDone }()
	crawlerImage, redisImage := "pause/"+h.ns+"/crawler", "pause/"+h.ns+"/redis"
	h.env.Kubelet.Register(crawlerImage, fleet.Program())
	h.env.Kubelet.Register(redisImage, shared.Program(h.env.Kubelet.DNS()))
	// The operator's writes, counted: MongoDB's with a command monitor,
	// the API server's at its client.
	mongoCommands := &commandCounts{n: map[string]int64{}}
	monitored := h.commandCountingStore(mongoCommands)
	var apiMu sync.Mutex
	apiRequests := map[string]int64{}
	rc := h.env.Config()
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return requestCounter{next: rt, mu: &apiMu, n: apiRequests}
	}
	deps := h.deps()
	deps.Store = monitored
	deps.Kube = kubernetes.NewForConfigOrDie(rc)
	deps.Trawler = versioned.NewForConfigOrDie(rc)
	cfg := scaleConfig(h.config(), shared.ResolverURL(), crawlerImage, redisImage)
	// As in the scale bench's operator: a paused crawl's Redis pod goes,
	// and go-redis logs each failed dial (hundreds a run).
	redis.SetLogger(quietRedisLog{})
	// Paused crawls' Redis goes soon, and the accounting ticks every
	// second: a paused crawl must still write nothing.
	cfg.RedisIdle = 5 * time.Second
	cfg.ExecAccountingInterval = time.Second
	h.startOperatorWith(cfg, deps)

	jobs := h.benchCrawls(n)
	ids := make([]string, n)
	for i, j := range jobs {
		ids[i] = j.Spec.ID
	}
	h.createJobs(jobs)
	cs := h.crawlStates(ids)
	h.waitAll(cs, 5*time.Minute, store.StateRunning, nil)
	// A page each at least, so every pause uploads a WACZ.
	h.waitFor("a page done in every crawl", 2*time.Minute, func() bool {
		n, err := cs.coll.CountDocuments(context.Background(), bson.M{"_id": bson.M{"$in": ids}, "stats.done": bson.M{"$gt": 0}})
		return err == nil && n == int64(len(ids))
	})

	phase := startPhase(&apiMu, apiRequests, mongoCommands)
	b.ResetTimer()
	paused := h.timeAll(cs, false, store.StatePaused)
	b.StopTimer()
	b.Logf("pause: %s", phase.end())
	// Paused, once their Redis pods are gone (RedisIdle): no writes at
	// all, the accounting's included.
	h.waitFor("the paused crawls' pods gone", 2*time.Minute, func() bool {
		pods, err := h.kube.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0
	})
	time.Sleep(pausedSettle)
	apiBefore := apiWrites(&apiMu, apiRequests)
	mongoBefore := mongoCommands.writes()
	time.Sleep(pausedWindow)
	pausedAPIKinds := apiWrites(&apiMu, apiRequests)
	var pausedAPI int64
	for key, n := range pausedAPIKinds {
		pausedAPIKinds[key] = n - apiBefore[key]
		pausedAPI += pausedAPIKinds[key]
	}
	pausedMongo := mongoCommands.writes() - mongoBefore
	phase = startPhase(&apiMu, apiRequests, mongoCommands)
	b.StartTimer()
	resumed := h.timeAll(cs, true, store.StateRunning)
	b.StopTimer()
	b.Logf("resume: %s", phase.end())
	b.Logf("pause -> paused: seen %s; recorded %s", summary(paused.seen), summary(paused.recorded))
	b.Logf("resume -> running: seen %s; recorded %s", summary(resumed.seen), summary(resumed.recorded))
	b.Logf("paused, %v with the accounting every second: the operator's API writes %d %v, MongoDB writes %d",
		pausedWindow, pausedAPI, pausedAPIKinds, pausedMongo)
	b.ReportMetric(float64(pausedAPI+pausedMongo), "paused-writes")
	b.ReportMetric(percentile(paused.seen, 0.99).Seconds(), "pause-p99-s")
	b.ReportMetric(percentile(paused.recorded, 0.99).Seconds(), "pause-recorded-p99-s")
	b.ReportMetric(percentile(resumed.seen, 0.99).Seconds(), "resume-p99-s")
	b.ReportMetric(percentile(resumed.recorded, 0.99).Seconds(), "resume-recorded-p99-s")
}

// pausedWindow is how long the bench counts the writes of 100 paused
// crawls, after pausedSettle for the statuses that record their pods'
// removal.
const (
	pausedSettle = 10 * time.Second
	pausedWindow = 15 * time.Second
)

// phase is where the work of one step of the bench went: the CPU of every
// process, the operator's API requests and its MongoDB commands.
type phase struct {
	cpu                    map[int]procCPU
	apiMu                  *sync.Mutex
	api                    map[string]int64
	mongo                  *commandCounts
	apiBefore, mongoBefore map[string]float64
}

func startPhase(apiMu *sync.Mutex, api map[string]int64, mongo *commandCounts) *phase {
	return &phase{cpu: cpuByProcess(), apiMu: apiMu, api: api, mongo: mongo,
		apiBefore: copyCounts(apiMu, api), mongoBefore: copyCounts(&mongo.mu, mongo.n)}
}

// end describes what the phase used.
func (p *phase) end() string {
	return fmt.Sprintf("CPU by process: %s; the operator's API requests: %s; its MongoDB commands: %s",
		diffCPU(p.cpu, cpuByProcess()), diffCounts(p.apiBefore, copyCounts(p.apiMu, p.api)),
		diffCounts(p.mongoBefore, copyCounts(&p.mongo.mu, p.mongo.n)))
}

func copyCounts(mu *sync.Mutex, counts map[string]int64) map[string]float64 {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]float64, len(counts))
	for k, n := range counts {
		out[k] = float64(n)
	}
	return out
}

// apiWrites copies the counts of requests that are not reads or watches.
func apiWrites(mu *sync.Mutex, counts map[string]int64) map[string]int64 {
	mu.Lock()
	defer mu.Unlock()
	out := map[string]int64{}
	for key, n := range counts {
		if key != http.MethodGet && key != "WATCH" {
			out[key] = n
		}
	}
	return out
}

// crawlStates reads the state of every crawl in ids with one query, so
// the bench's polling costs the shared MongoDB little.
type crawlStates struct {
	coll *mongo.Collection
	ids  []string
}

func (h *harness) crawlStates(ids []string) *crawlStates {
	h.t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(h.env.MongoURI()).SetRegistry(store.Registry()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return &crawlStates{coll: client.Database(h.dbName).Collection("crawls"), ids: ids}
}

// crawlState is a crawl's state and when the operator recorded it (its
// state history's newest entry).
type crawlState struct {
	State    string
	Recorded time.Time
}

// read returns each crawl's state by id.
func (cs *crawlStates) read() (map[string]crawlState, error) {
	cur, err := cs.coll.Find(context.Background(), bson.M{"_id": bson.M{"$in": cs.ids}},
		options.Find().SetProjection(bson.M{"state": 1, "stateHistory": 1}))
	if err != nil {
		return nil, err
	}
	var docs []struct {
		ID      string              `bson:"_id"`
		State   string              `bson:"state"`
		History []store.StateChange `bson:"stateHistory"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		return nil, err
	}
	out := make(map[string]crawlState, len(docs))
	for _, d := range docs {
		st := crawlState{State: d.State}
		if n := len(d.History); n > 0 && d.History[n-1].State == d.State {
			st.Recorded = d.History[n-1].At
		}
		out[d.ID] = st
	}
	return out, nil
}

// waitAll waits until every crawl's document is in state, reading them
// every quarter second; seen is called with each crawl found in it.
func (h *harness) waitAll(cs *crawlStates, timeout time.Duration, state string, seen func(id string, st crawlState)) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		states, err := cs.read()
		all := err == nil
		for _, id := range cs.ids {
			if st := states[id]; st.State == state {
				if seen != nil {
					seen(id, st)
				}
			} else {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %v waiting for every crawl %s (%v)", timeout, state, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// timings are, per crawl, the time from its request to its document
// showing the state: as the bench's quarter-second reads first saw it
// (late by up to one read), and as the operator stamped the state's
// entry in the history (early by the write that follows the stamp). The
// time the document changed lies between.
type timings struct {
	seen, recorded []time.Duration
}

// timeAll pauses (or resumes) every crawl at once and times each from its
// request to its document showing state.
func (h *harness) timeAll(cs *crawlStates, resume bool, state string) timings {
	h.t.Helper()
	ids := cs.ids
	asked := make([]time.Time, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			asked[i] = time.Now()
			errs[i] = h.askPause(id, resume)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		h.t.Fatal(err)
	}
	index := map[string]int{}
	for i, id := range ids {
		index[id] = i
	}
	t := timings{seen: make([]time.Duration, len(ids)), recorded: make([]time.Duration, len(ids))}
	h.waitAll(cs, 5*time.Minute, state, func(id string, st crawlState) {
		if i := index[id]; t.seen[i] == 0 {
			t.seen[i] = time.Since(asked[i])
			t.recorded[i] = st.Recorded.Sub(asked[i])
		}
	})
	return t
}

// commandCounts are the MongoDB commands a store sent, by name and
// collection ("update crawls").
type commandCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

// writes sums the commands that write.
func (c *commandCounts) writes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum int64
	for key, n := range c.n {
		if name, _, _ := strings.Cut(key, " "); mongoWriteCommands[name] {
			sum += n
		}
	}
	return sum
}

// commandCountingStore is a store for the operator that counts its
// MongoDB commands in counts; it is closed with the test.
func (h *harness) commandCountingStore(counts *commandCounts) *store.Mongo {
	h.t.Helper()
	monitored, err := store.Open(context.Background(), h.env.MongoURI(), h.dbName, store.WithCommandMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			counts.mu.Lock()
			coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
			counts.n[e.CommandName+" "+coll]++
			counts.mu.Unlock()
		},
	}))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = monitored.Close(context.Background()) })
	return monitored
}
