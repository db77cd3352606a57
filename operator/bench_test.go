package operator_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	informers "github.com/trawlerhq/trawler/k8s/generated/informers/externalversions"
	"github.com/trawlerhq/trawler/store"
)

// benchJobs prepares n crawls (documents, ConfigMaps, Redis statuses
// "running" in the sandbox's redis-server) and returns their CrawlJobs,
// not yet created.
func (h *harness) benchJobs(n int) []*trawlerv1.CrawlJob {
	h.t.Helper()
	ctx := context.Background()
	jobs := h.benchCrawls(n)
	rdb := redis.NewClient(&redis.Options{Addr: h.env.Redis.Addr()})
	defer rdb.Close()
	pipe := rdb.Pipeline()
	for _, j := range jobs {
		pipe.HSet(ctx, j.Spec.ID+":status", k8s.CrawlerName(j.Spec.ID, 0), "running")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		h.t.Fatal(err)
	}
	return jobs
}

// benchCrawls prepares n crawls (documents and ConfigMaps) and returns
// their CrawlJobs, not yet created. The documents go in with one insert:
// they have no workflow to record a start on, and one AddCrawl each would
// take minutes for a thousand on the test server.
func (h *harness) benchCrawls(n int) []*trawlerv1.CrawlJob {
	h.t.Helper()
	ctx := context.Background()
	jobs := make([]*trawlerv1.CrawlJob, n)
	docs := make([]any, n)
	for i := range n {
		id := fmt.Sprintf("manual-bench-%s-%04d", h.ns, i)
		jobs[i] = &trawlerv1.CrawlJob{
			ObjectMeta: metav1.ObjectMeta{Name: k8s.CrawlJobName(id), Namespace: h.ns, Finalizers: []string{k8s.Finalizer},
				Labels: map[string]string{k8s.LabelCrawl: id, k8s.LabelRole: k8s.RoleJob, k8s.LabelOrg: h.org.String()}},
			Spec: trawlerv1.CrawlJobSpec{ID: id, OID: h.org.String(), CID: uuid.NewString(), Scale: 1,
				ConfigMap: k8s.CrawlConfigMapName(id), StorageName: "default"},
		}
		docs[i] = &store.Crawl{ID: id, Type: store.TypeCrawl, OID: h.org, State: store.StateStarting, Files: []store.CrawlFile{},
			Errors: []string{}, CollectionIDs: []uuid.UUID{}, Tags: []string{}}
	}
	client, err := mongo.Connect(options.Client().ApplyURI(h.env.MongoURI()).SetRegistry(store.Registry()))
	if err != nil {
		h.t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	if _, err := client.Database(h.dbName).Collection("crawls").InsertMany(ctx, docs); err != nil {
		h.t.Fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := j.Spec.ID
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: k8s.CrawlConfigMapName(id), Namespace: h.ns,
				Labels: map[string]string{k8s.LabelCrawl: id}}, Data: map[string]string{k8s.ConfigMapKey: "{}"}}
			if _, err := h.kube.CoreV1().ConfigMaps(h.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
	return jobs
}

// createJobs creates the jobs with 16 concurrent callers of one client.
func (h *harness) createJobs(jobs []*trawlerv1.CrawlJob) {
	h.t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := h.trawler.TrawlerV1().CrawlJobs(h.ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
				h.t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// warmCrawlJobWrites creates a CrawlJob in a namespace of its own that
// no operator watches, and writes its status. The API server's first
// CrawlJob writes take about 2 s (all at once, with no operator running),
// and its first status writes are slower too: one-time costs that would
// otherwise land on whichever timing comes first.
func (h *harness) warmCrawlJobWrites() {
	h.t.Helper()
	ctx := context.Background()
	ns, err := h.kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "warm-"}}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = h.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}) }()
	j := &trawlerv1.CrawlJob{ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: ns.Name},
		Spec: trawlerv1.CrawlJobSpec{ID: "warm", OID: h.org.String(), CID: uuid.NewString(), Scale: 1, ConfigMap: "warm"}}
	j, err = h.trawler.TrawlerV1().CrawlJobs(ns.Name).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	j.Status.State = store.StateStarting
	if _, err := h.trawler.TrawlerV1().CrawlJobs(ns.Name).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// BenchmarkThousandRunningCrawls (issue 5, bench b): an operator (in its
// own process) with 1000 running crawls; its RSS and API requests per
// second once nothing changes (goals: no writes, RSS <= 150 MiB). Its heap
// and goroutine profiles are saved to $BENCH_PROFILE_DIR (default: the
// temp dir) for `go tool pprof`.
func BenchmarkThousandRunningCrawls(b *testing.B) {
	const n = 1000
	h := newHarness(b)
	setup := time.Now()
	jobs := h.benchJobs(n)
	b.Logf("setup: %d crawl documents, ConfigMaps and Redis statuses in %v", n, time.Since(setup).Round(time.Second))
	child := h.startChildOperator(h.dbName)
	started := time.Now()
	h.createJobs(jobs)
	b.Logf("setup: %d CrawlJobs created in %v", n, time.Since(started).Round(time.Second))
	// The states on the way, once a minute, in one log line (a benchmark's
	// log keeps only its first lines).
	var progress []string
	lastLog := time.Now()
	h.waitFor("every crawl running", 15*time.Minute, func() bool {
		list, err := h.trawler.TrawlerV1().CrawlJobs(h.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		states := map[string]int{}
		for _, j := range list.Items {
			states[j.Status.State]++
		}
		if time.Since(lastLog) > time.Minute {
			lastLog = time.Now()
			progress = append(progress, fmt.Sprintf("%v %v", time.Since(started).Round(time.Second), states))
		}
		return states[store.StateRunning] == n
	})
	b.Logf("setup: %d crawls running %v after their CrawlJobs were created (%v in all); on the way: %s", n,
		time.Since(started).Round(time.Second), time.Since(setup).Round(time.Second), strings.Join(progress, "; "))
	time.Sleep(5 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := h.watchStatusChanges(ctx)

	b.ResetTimer()
	const window = 30 * time.Second
	before := child.requests()
	_, cpu0 := child.usage()
	time.Sleep(window)
	after := child.requests()
	rss, cpu1 := child.usage()
	b.StopTimer()
	b.Logf("CrawlJob status changes seen in the window, by what changed: %v", changes)

	var writes, total float64
	var rates []string
	for _, key := range slices.Sorted(maps.Keys(after)) {
		d := float64(after[key] - before[key])
		if d == 0 {
			continue
		}
		total += d
		if key != "GET" && key != "WATCH" {
			writes += d
		}
		rates = append(rates, fmt.Sprintf("%s %.2f/s", key, d/window.Seconds()))
	}
	b.Logf("API requests by kind: %s", strings.Join(rates, ", "))
	b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
	b.ReportMetric(total/window.Seconds(), "api-req/s")
	b.ReportMetric(writes/window.Seconds(), "api-writes/s")
	b.ReportMetric(100*float64(cpu1-cpu0)/float64(window), "cpu-%")
	b.Logf("%d running crawls: RSS %.1f MiB, %.2f API requests/s (%.2f writes/s), CPU %.1f%% of a core",
		n, float64(rss)/(1<<20), total/window.Seconds(), writes/window.Seconds(), 100*float64(cpu1-cpu0)/float64(window))
	resident := child.residentMemory()
	b.Logf("resident: RssAnon %.1f MiB (the Go runtime), RssFile %.1f MiB (the executable's pages)",
		float64(resident["RssAnon"])/(1<<20), float64(resident["RssFile"])/(1<<20))
	if stats, err := child.memStats(); err == nil {
		b.Logf("runtime memory: %s", stats)
	}
	saveProfiles(b, child, "heap?gc=1", "goroutine", "profile?seconds=10")
}

// saveProfiles writes the child's profiles to $BENCH_PROFILE_DIR (default:
// the temp dir) and logs where, in one line (a benchmark's log keeps only
// its first lines).
func saveProfiles(b *testing.B, child *childOperator, names ...string) {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	var saved []string
	for _, name := range names {
		data, err := child.profile(name)
		if err != nil {
			saved = append(saved, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		file := fmt.Sprintf("%s/trawler-bench-%s-%s.pb.gz", dir, time.Now().Format("20060102-150405"), strings.SplitN(name, "?", 2)[0])
		if err := os.WriteFile(file, data, 0o644); err != nil {
			saved = append(saved, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		saved = append(saved, file)
	}
	b.Logf("profiles (go tool pprof -top FILE): %s", strings.Join(saved, " "))
}

// BenchmarkStatusLatency (issue 5, bench c; issue 11): over 10 running
// crawls, from a crawler's change in Redis to the CrawlJob status showing
// it. A state change (an instance going to pending-wait and back to
// running) must show within 1 s (p99); progress (pages done) is written
// once per stats interval by design, so it shows within that interval
// plus a poll.
func BenchmarkStatusLatency(b *testing.B) {
	const crawls, samples = 10, 200
	h := newHarness(b)
	cfg := stubConfig(h.config(), h.env.Redis.Addr())
	h.startOperator(cfg)
	jobs := h.benchJobs(crawls)
	h.createJobs(jobs)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	seen := map[string]trawlerv1.CrawlJobStatus{}
	changed := make(chan struct{}, 1)
	f := informers.NewSharedInformerFactoryWithOptions(h.trawler, 0, informers.WithNamespace(h.ns))
	inf := f.Trawler().V1().CrawlJobs().Informer()
	note := func(obj any) {
		j := obj.(*trawlerv1.CrawlJob)
		mu.Lock()
		seen[j.Spec.ID] = j.Status
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, o any) { note(o) }})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	h.waitFor("every crawl running", 2*time.Minute, func() bool {
		for _, j := range jobs {
			got, err := h.job(j.Spec.ID)
			if err != nil || got.Status.State != store.StateRunning {
				return false
			}
		}
		return true
	})

	rdb := redis.NewClient(&redis.Options{Addr: h.env.Redis.Addr()})
	defer rdb.Close()
	// waitSeen times cond on the crawl's status from start.
	waitSeen := func(id string, start time.Time, cond func(trawlerv1.CrawlJobStatus) bool) time.Duration {
		deadline := time.After(10 * time.Second)
		for {
			mu.Lock()
			ok := cond(seen[id])
			mu.Unlock()
			if ok {
				return time.Since(start)
			}
			select {
			case <-changed:
			case <-time.After(5 * time.Millisecond):
			case <-deadline:
				b.Fatalf("status of %s never showed the change", id)
			}
		}
	}
	var stateLat, progressLat []time.Duration
	b.ResetTimer()
	for i := range samples {
		id := jobs[i%crawls].Spec.ID
		if i%2 == 0 {
			v, err := rdb.Incr(ctx, id+":d").Result()
			if err != nil {
				b.Fatal(err)
			}
			progressLat = append(progressLat, waitSeen(id, time.Now(), func(s trawlerv1.CrawlJobStatus) bool { return s.PagesDone >= v }))
		} else {
			for _, st := range []string{store.StatePendingWait, store.StateRunning} {
				start := time.Now()
				if err := rdb.HSet(ctx, id+":status", k8s.CrawlerName(id, 0), st).Err(); err != nil {
					b.Fatal(err)
				}
				stateLat = append(stateLat, waitSeen(id, start, func(s trawlerv1.CrawlJobStatus) bool { return s.State == st }))
			}
		}
		time.Sleep(time.Duration(20+i*7%150) * time.Millisecond)
	}
	b.StopTimer()
	pct := func(lat []time.Duration, p float64) time.Duration {
		slices.Sort(lat)
		return lat[int(p*float64(len(lat)-1))]
	}
	b.ReportMetric(float64(pct(stateLat, 0.5).Milliseconds()), "ms-state-p50")
	b.ReportMetric(float64(pct(stateLat, 0.99).Milliseconds()), "ms-state-p99")
	b.ReportMetric(float64(pct(progressLat, 0.99).Milliseconds()), "ms-progress-p99")
	b.Logf("crawler change -> CrawlJob status: state changes (%d) p50 %v p90 %v p99 %v max %v; progress (%d, stats interval %v) p50 %v p99 %v max %v",
		len(stateLat), pct(stateLat, 0.5), pct(stateLat, 0.9), pct(stateLat, 0.99), stateLat[len(stateLat)-1],
		len(progressLat), cfg.StatsInterval, pct(progressLat, 0.5), pct(progressLat, 0.99), progressLat[len(progressLat)-1])
}
