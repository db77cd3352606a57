package operator_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/store"
)

// BenchmarkScale (issue 28, the scale harness): an operator, in its own
// process and unchanged, runs N crawls on the sandbox's simulated node,
// with the crawler side made cheap: every crawl's Redis is a database on
// one of a few shared redis-servers (sandbox.SharedRedis; the Redis pods
// run a stand-in that makes the pod's DNS name resolve to it), and one
// crawlersim.Fleet advances all the crawlers, whose pods only join it.
// The operator still sees a Redis address, pods and PVCs per crawl.
//
// Per N it reports:
//   - idle: every crawl running and idle; API writes (at the API server
//     and the operator's own) and MongoDB writes per second (goal 0);
//   - busy: 10% of the crawls finish a page a second; over the window,
//     the operator's peak RSS and its CPU (cores, averaged), API-server
//     requests per second by verb (apiserver_request_total), MongoDB
//     writes per second, crawler change -> CrawlJob status p99 (a busy
//     crawl's instance to pending-wait and back, and its pages done; an
//     idle crawl's instance likewise), and state change -> recorded p99:
//     stop, cancel, finish (until the crawl document's final state) and
//     scale 1 -> 2 (until the status's scale).
//
// Sub-benchmarks are named crawls=N; $SCALE_CRAWLS picks them
// (comma-separated, default 1000,3000; 10000 is opt-in: its setup takes
// tens of minutes on 2 cores). $SCALE_WINDOW (default 60s; the issue's
// CPU target averages over 5m) and $SCALE_IDLE_WINDOW (default 30s) set
// the windows, $SCALE_SAMPLES (default 10) the state changes per kind,
// $SCALE_WAVE (default 500) how many crawls start at a time,
// $SCALE_BUSY_PERCENT (default 10) the share of crawls that are busy,
// $SCALE_SETTLE (default 3m) how long idle statuses and MongoDB writes may
// take to settle. With $BENCH_PROFILE_DIR set, the operator's and the API
// server's CPU profiles of the busy window are saved there.
//
//	SCALE_CRAWLS=10000 SCALE_WINDOW=5m go test -run '^$' -bench 'Scale' -benchtime 1x -timeout 120m ./operator/
func BenchmarkScale(b *testing.B) {
	for _, n := range envInts(b, "SCALE_CRAWLS", 1000, 3000) {
		b.Run(fmt.Sprintf("crawls=%d", n), func(b *testing.B) { benchScale(b, n) })
	}
}

// scaleConfig makes the operator run the scale harness's images (on every
// channel too, keeping its protocol: a channel's image wins over
// CrawlerImage) and reach each crawl's Redis through the SharedRedis
// resolver. CPU requests are zero, so ten thousand crawls fit the
// sandbox's node, and crawler pods get no liveness probe: the fleet's pods
// serve no /healthz (a listener per pod would cost what the fleet saves),
// and failed probes would restart them mid-run.
func scaleConfig(cfg operator.Config, resolver, crawlerImage, redisImage string) operator.Config {
	cfg.CrawlerImage, cfg.RedisImage = crawlerImage, redisImage
	cfg.CrawlerChannels = slices.Clone(cfg.CrawlerChannels)
	for i := range cfg.CrawlerChannels {
		cfg.CrawlerChannels[i].Image = crawlerImage
	}
	cfg.CrawlerLivenessPort = 0
	zero := resource.MustParse("0")
	cfg.CrawlerCPU = &zero
	cfg.RedisCPU = zero
	cfg.RedisDialer = sandbox.SharedRedisDialer(resolver)
	return cfg
}

func benchScale(b *testing.B, n int) {
	window := envDuration(b, "SCALE_WINDOW", time.Minute)
	idleWindow := envDuration(b, "SCALE_IDLE_WINDOW", 30*time.Second)
	samples := envInts(b, "SCALE_SAMPLES", 10)[0]
	settle := envDuration(b, "SCALE_SETTLE", 3*time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(b)
	setup := time.Now()

	// The crawler side: shared redis-servers (2,500 crawls each) and the fleet.
	servers := max(2, (n+2499)/2500)
	shared, err := sandbox.StartSharedRedis(ctx, b.TempDir(), servers, n/servers+1)
	if err != nil {
		b.Fatal(err)
	}
	defer shared.Stop()
	fleet := crawlersim.NewFleet(crawlersim.FleetOptions{Locate: func(host string) (string, int, bool) {
		db, ok := shared.Locate(host)
		return db.Addr, db.DB, ok
	}})
	fleetDone := make(chan struct{})
	go func() { defer close(fleetDone); fleet.Run(ctx) }()
	defer func() { cancel(); <-fleetDone }()
	crawlerImage, redisImage := "scale/"+h.ns+"/crawler", "scale/"+h.ns+"/redis"
	h.env.Kubelet.Register(crawlerImage, fleet.Program())
	h.env.Kubelet.Register(redisImage, shared.Program(h.env.Kubelet.DNS()))

	jobs := h.benchCrawls(n)
	ids := make([]string, n)
	for i, j := range jobs {
		ids[i] = j.Spec.ID
	}
	roles := scaleRoles(ids)
	// A tenth busy by default (the crawls whose state is flipped or
	// scaled); $SCALE_BUSY_PERCENT=100 makes every crawl busy.
	busy := map[string]bool{}
	share := envInts(b, "SCALE_BUSY_PERCENT", 10)[0]
	for _, id := range ids[:min(n, max(len(roles.busyFlipped)+len(roles.scaled), n*share/100))] {
		busy[id] = true
	}
	watch := h.watchScale(ctx, func(id string) bool { return busy[id] }, fleet)
	child := h.startChildOperator(h.dbName, childRedisResolver+"="+shared.ResolverURL(),
		childImages+"="+crawlerImage+","+redisImage)
	created := time.Now()
	// The crawls start in waves: all at once, the operator's starts
	// contend for the sandbox's one MongoDB connection until its 5 s store
	// timeout fails them, and a few thousand barely start at all. What is
	// measured is the steady state after.
	wave := envInts(b, "SCALE_WAVE", 500)[0]
	var progress []string
	lastLog := time.Now()
	for start := 0; start < n; start += wave {
		end := min(start+wave, n)
		h.createJobs(jobs[start:end])
		h.waitFor(fmt.Sprintf("crawls 1..%d running", end), 45*time.Minute, func() bool {
			states := watch.states()
			if time.Since(lastLog) > time.Minute {
				lastLog = time.Now()
				progress = append(progress, fmt.Sprintf("%v %v", time.Since(created).Round(time.Second), states))
			}
			// Nine in ten of the crawls so far, and all of them at the end.
			return states[store.StateRunning] >= end*9/10 && (end < n || states[store.StateRunning] == n)
		})
	}
	b.Logf("setup: %d crawl documents and ConfigMaps in %v; %d crawls running %v after the first CrawlJobs were created (%d at a time); "+
		"on the way: %s", n, created.Sub(setup).Round(time.Second), n, time.Since(created).Round(time.Second), wave,
		strings.Join(progress, "; "))

	b.ResetTimer()
	// Idle: nothing changes, so nothing should be written.
	settleStart := time.Now()
	if !watch.settle(5*time.Second, settle) {
		b.Logf("idle: CrawlJob statuses still changing after %v; measuring anyway", settle)
	}
	// A crawl is counted a minute after it started (its Redis changed
	// since its first count), at the idle interval after: the last wave's
	// counts are start-up, not idle writes.
	if !child.settleMongoWrites(idleWindow, settle-time.Since(settleStart)) {
		b.Logf("idle: MongoDB writes still coming %v after the statuses settled; measuring anyway", time.Since(settleStart).Round(time.Second))
	}
	b.Logf("idle: settled in %v", time.Since(settleStart).Round(time.Second))
	idle := h.measureScale(child, idleWindow, nil)
	b.Logf("idle, %v: API writes %.2f/s at the API server (%s), the operator's %.2f/s (%s); MongoDB writes %.2f/s (%s); "+
		"operator RSS peak %.1f MiB, CPU %.2f cores", idleWindow, idle.apiWrites(), idle.apiWriteKinds(), idle.opWrites(),
		idle.opWriteKinds(), idle.mongoRate(), idle.mongoKinds(), float64(idle.rss)/(1<<20), idle.cores())

	// Busy: a tenth of the crawls finish a page a second.
	fleet.SetBusy(func(id string) bool { return busy[id] })
	h.waitFor("the busy crawls' first pages in their status", 2*time.Minute, func() bool {
		return watch.pagesSeen() >= len(busy)*9/10
	})
	watch.recordProgress(true)
	lat := newLatencies()
	var changes sync.WaitGroup
	profiles := h.windowProfiles(child, window)
	busyRun := h.measureScale(child, window, func(stop <-chan struct{}) {
		h.flipCrawlerStates(ctx, &changes, fleet, watch, roles.busyFlipped, "crawler-state", lat, stop)
		if !busy[roles.idleFlipped[0]] {
			h.flipCrawlerStates(ctx, &changes, fleet, watch, roles.idleFlipped, "idle-crawler-state", lat, stop)
		}
		changes.Go(func() { h.stateChanges(ctx, fleet, watch, roles, samples, window, lat) })
		changes.Go(func() { h.sampleDocLag(ctx, fleet, slices.Sorted(maps.Keys(busy)), stop, lat) })
	})
	watch.recordProgress(false)
	changes.Wait()
	b.StopTimer()
	if saved := profiles(); saved != "" {
		b.Logf("profiles of the busy window (go tool pprof -top FILE): %s", saved)
	}

	rates := busyRun.apiByVerb()
	b.ReportMetric(float64(busyRun.rss)/(1<<20), "MiB-rss")
	b.ReportMetric(busyRun.cores(), "cpu-cores")
	b.ReportMetric(busyRun.apiTotal(), "api-req/s")
	for _, verb := range slices.Sorted(maps.Keys(rates)) {
		b.ReportMetric(rates[verb], "api-"+verb+"/s")
	}
	b.ReportMetric(busyRun.mongoRate(), "mongo-writes/s")
	b.ReportMetric(idle.apiWrites(), "idle-api-writes/s")
	b.ReportMetric(idle.opWrites(), "idle-op-api-writes/s")
	b.ReportMetric(idle.mongoRate(), "idle-mongo-writes/s")
	b.ReportMetric(idle.cores(), "idle-cpu-cores")
	progressLat, untimed := watch.progressLatencies()
	all := lat.all("stop", "cancel", "scale", "finish")
	for _, l := range []struct {
		name string
		d    []time.Duration
	}{{"crawler-state", lat.get("crawler-state")}, {"idle-crawler-state", lat.get("idle-crawler-state")},
		{"progress", progressLat}, {"doc-pages", lat.get("doc-pages")}, {"state-change", all},
		{"stop", lat.get("stop")}, {"cancel", lat.get("cancel")}, {"scale", lat.get("scale")}, {"finish", lat.get("finish")}} {
		if len(l.d) > 0 {
			b.ReportMetric(float64(percentile(l.d, 0.99).Milliseconds()), "ms-"+l.name+"-p99")
		}
	}
	b.Logf("%d crawls, %d busy, over %v: operator RSS peak %.1f MiB, CPU %.2f cores; API server %.1f req/s (%s); "+
		"the operator's API requests %.1f/s (%s); MongoDB writes %.1f/s (%s)",
		n, len(busy), window, float64(busyRun.rss)/(1<<20), busyRun.cores(), busyRun.apiTotal(), formatRates(rates),
		busyRun.opTotal(), busyRun.opWriteKinds(), busyRun.mongoRate(), busyRun.mongoKinds())
	b.Logf("crawler change -> CrawlJob status: busy crawls' instance state %s, pages done %s (and %d pages whose status came over 4m later); "+
		"idle crawls' instance state %s", summary(lat.get("crawler-state")), summary(progressLat), untimed,
		summary(lat.get("idle-crawler-state")))
	missed := lat.missed()
	b.Logf("the crawl documents' (the API's) pages done behind the busy crawls, sampled: %s (%d too old to time)",
		summary(lat.get("doc-pages")), missed["doc-pages"])
	delete(missed, "doc-pages")
	b.Logf("state change -> recorded: all %s; stop %s; cancel %s; scale %s; finish %s; not recorded within 2m: %v",
		summary(all), summary(lat.get("stop")), summary(lat.get("cancel")), summary(lat.get("scale")),
		summary(lat.get("finish")), missed)
	b.Logf("where stop and finish went (polled every 100 ms): stop: ask -> crawler done %s, -> pod exited %s, -> recorded %s; "+
		"finish: crawler done -> pod exited %s, -> recorded %s", summary(lat.get("stop ask->crawler done")),
		summary(lat.get("stop crawler done->pod exited")), summary(lat.get("stop pod exited->recorded")),
		summary(lat.get("finish crawler done->pod exited")), summary(lat.get("finish pod exited->recorded")))
	b.Logf("CPU used in the window by process: %s", busyRun.cpuByProcess)
	b.Logf("the operator's latencies in the window: %s", busyRun.latencies)
}

// crawlRoles are what the harness does with each crawl: a tenth are busy
// (busyFlipped and scaled), and the state changes each get crawls of
// their own.
type crawlRoles struct {
	busyFlipped []string // busy, instance state flipped
	scaled      []string // busy, scaled 1 -> 2 (scale needs pages found)
	idleFlipped []string // idle, instance state flipped
	ended       []string // idle, stopped, canceled or finished
}

func scaleRoles(ids []string) crawlRoles {
	twentieth := max(1, len(ids)/20)
	return crawlRoles{busyFlipped: ids[:twentieth], scaled: ids[twentieth : 2*twentieth],
		idleFlipped: ids[2*twentieth : 3*twentieth], ended: ids[3*twentieth:]}
}

// flippers is how many crawls have their instance state flipped at once,
// per kind: enough samples for a p99 in a minute.
const flippers = 5

// flipCrawlerStates starts flippers loops (on wg) that each move a crawl's
// first instance to pending-wait and back to running, one crawl after
// another until stop, timing each change to the CrawlJob status as kind.
func (h *harness) flipCrawlerStates(ctx context.Context, wg *sync.WaitGroup, fleet *crawlersim.Fleet, w *scaleWatch,
	ids []string, kind string, lat *latencies, stop <-chan struct{}) {
	for i := range min(flippers, len(ids)) {
		// Each loop has crawls of its own: one change at a time per crawl.
		var own []string
		for j := i; j < len(ids); j += flippers {
			own = append(own, ids[j])
		}
		wg.Go(func() { h.flipLoop(ctx, fleet, w, own, kind, lat, stop, uint64(i)) })
	}
}

func (h *harness) flipLoop(ctx context.Context, fleet *crawlersim.Fleet, w *scaleWatch, ids []string, kind string,
	lat *latencies, stop <-chan struct{}, seed uint64) {
	rng := rand.New(rand.NewPCG(28, seed))
	for {
		id := ids[rng.IntN(len(ids))]
		for _, st := range []string{store.StatePendingWait, store.StateRunning} {
			start := time.Now()
			if err := fleet.SetStatus(ctx, id, st); err != nil {
				h.t.Error(err)
				return
			}
			if at, ok := w.waitStatus(id, start, time.Minute, func(s trawlerv1.CrawlJobStatus) bool { return s.State == st }); ok {
				lat.add(kind, at.Sub(start))
			} else {
				lat.missing(kind)
			}
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(200+rng.IntN(400)) * time.Millisecond):
		}
	}
}

// stateChanges makes samples state changes of each kind (stop, cancel,
// scale, finish) spread over the window, each on a crawl of its own, and
// times each until it is recorded: the crawl document's final state for
// stop, cancel and finish, the CrawlJob status's scale for scale (which
// needs a busy crawl, one with more pages found than instances).
func (h *harness) stateChanges(ctx context.Context, fleet *crawlersim.Fleet, w *scaleWatch, roles crawlRoles,
	samples int, window time.Duration, lat *latencies) {
	rng := rand.New(rand.NewPCG(28, 2))
	scalable, others := slices.Clone(roles.scaled), slices.Clone(roles.ended)
	rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	kinds := []string{"stop", "cancel", "scale", "finish"}
	total := samples * len(kinds)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range total {
		kind := kinds[i%len(kinds)]
		var id string
		if kind == "scale" && len(scalable) > 0 {
			id, scalable = scalable[0], scalable[1:]
		} else if len(others) > 0 {
			id, others = others[0], others[1:]
		} else {
			break
		}
		time.Sleep(time.Until(start.Add(window * time.Duration(i) / time.Duration(total))))
		wg.Go(func() {
			d, ok := h.stateChange(ctx, fleet, w, kind, id, lat)
			if !ok {
				lat.missing(kind)
				return
			}
			lat.add(kind, d)
		})
	}
	wg.Wait()
}

// stateChange makes one state change and times it until recorded.
func (h *harness) stateChange(ctx context.Context, fleet *crawlersim.Fleet, w *scaleWatch, kind, id string, lat *latencies) (time.Duration, bool) {
	const timeout = 2 * time.Minute
	start := time.Now()
	var err error
	switch kind {
	case "stop":
		err = h.launch.StopCrawl(ctx, id)
	case "cancel":
		err = h.launch.CancelCrawl(ctx, id)
	case "scale":
		err = h.launch.ScaleCrawl(ctx, id, 2)
	case "finish":
		err = fleet.Finish(ctx, id)
	}
	if err != nil {
		h.t.Errorf("%s %s: %v", kind, id, err)
		return 0, false
	}
	if kind == "scale" {
		at, ok := w.waitStatus(id, start, timeout, func(s trawlerv1.CrawlJobStatus) bool { return s.Scale == 2 })
		return at.Sub(start), ok
	}
	// A cancel deletes the pods at once: only a stop's and a finish's
	// steps are timed.
	staged := kind != "cancel"
	t := stageTimes{}
	pod := k8s.CrawlerName(id, 0)
	deadline := start.Add(timeout)
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		if ended, ok := fleet.EndedAt(id); ok && staged && t.crawlerDone.IsZero() {
			t.crawlerDone = ended
		}
		if staged && t.podExited.IsZero() {
			p, err := h.kube.CoreV1().Pods(h.ns).Get(ctx, pod, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && p.Status.Phase == corev1.PodSucceeded) {
				t.podExited = now
			}
		}
		if c, err := h.store.GetCrawlByID(ctx, id); err == nil && slices.Contains(store.FinishedStates, c.State) {
			if staged {
				h.t.Logf("%s %s recorded (%s) after %v: crawler done %s, pod exited %s after the ask", kind, id, c.State,
					now.Sub(start).Round(time.Millisecond), sinceAsk(t.crawlerDone, start), sinceAsk(t.podExited, start))
				t.add(lat, kind, start, now)
			}
			return now.Sub(start), true
		}
		time.Sleep(100 * time.Millisecond)
	}
	st, _ := w.statusOf(id)
	h.t.Logf("%s %s not recorded in %v: crawler done %v, pod exited %v after the ask; its status: state %q, finished %v, stopping %v",
		kind, id, timeout, sinceAsk(t.crawlerDone, start), sinceAsk(t.podExited, start), st.State, st.Finished != nil, st.Stopping)
	return 0, false
}

// stageTimes are when a stop or a finish passed the steps on its way to
// recorded: the crawler said done, its pod exited.
type stageTimes struct {
	crawlerDone, podExited time.Time
}

// sinceAsk says how long after the ask (start) a step came, or never.
func sinceAsk(at, start time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return at.Sub(start).Round(time.Millisecond).String()
}

// add records the steps' latencies under kind.
func (t stageTimes) add(lat *latencies, kind string, start, recorded time.Time) {
	if t.crawlerDone.IsZero() || t.podExited.IsZero() {
		return
	}
	if kind == "stop" {
		lat.add("stop ask->crawler done", t.crawlerDone.Sub(start))
	}
	lat.add(kind+" crawler done->pod exited", t.podExited.Sub(t.crawlerDone))
	lat.add(kind+" pod exited->recorded", recorded.Sub(t.podExited))
}
