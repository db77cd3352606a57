package operator_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	informers "github.com/trawlerhq/trawler/k8s/generated/informers/externalversions"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// benchJobs prepares n crawls (documents, ConfigMaps, Redis statuses
// "running") and returns their CrawlJobs, not yet created.
func (h *harness) benchJobs(n int) []*trawlerv1.CrawlJob {
	h.t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: h.env.Redis.Addr()})
	defer rdb.Close()
	jobs := make([]*trawlerv1.CrawlJob, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, n)
	for i := range n {
		id := fmt.Sprintf("manual-bench-%s-%04d", h.ns, i)
		jobs[i] = &trawlerv1.CrawlJob{
			ObjectMeta: metav1.ObjectMeta{Name: k8s.CrawlJobName(id), Namespace: h.ns, Finalizers: []string{k8s.Finalizer},
				Labels: map[string]string{k8s.LabelCrawl: id, k8s.LabelRole: k8s.RoleJob, k8s.LabelOrg: h.org.String()}},
			Spec: trawlerv1.CrawlJobSpec{ID: id, OID: h.org.String(), CID: uuid.NewString(), Scale: 1,
				ConfigMap: k8s.CrawlConfigMapName(id), StorageName: "default"},
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := h.store.AddCrawl(ctx, &store.Crawl{ID: id, OID: h.org, State: store.StateStarting}); err != nil {
				errs <- err
				return
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: k8s.CrawlConfigMapName(id), Namespace: h.ns,
				Labels: map[string]string{k8s.LabelCrawl: id}}, Data: map[string]string{k8s.ConfigMapKey: "{}"}}
			if _, err := h.kube.CoreV1().ConfigMaps(h.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				errs <- err
				return
			}
			rdb.HSet(ctx, id+":status", k8s.CrawlerName(id, 0), "running")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
	return jobs
}

// createJobs creates the jobs with 8 concurrent callers of one client.
func (h *harness) createJobs(jobs []*trawlerv1.CrawlJob) {
	h.t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
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

func (h *harness) countPods(ns, role string) int {
	list, err := h.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: k8s.LabelRole + "=" + role})
	if err != nil {
		h.t.Fatal(err)
	}
	return len(list.Items)
}

// BenchmarkCreate100CrawlJobs (issue 5, bench a): time from creating 100
// CrawlJobs at once until all their crawler pods exist, next to creating
// the same PVCs and pods (Redis and crawler) directly with one client at
// the same QPS.
func BenchmarkCreate100CrawlJobs(b *testing.B) {
	const n = 100
	h := newHarness(b)
	cfg := stubConfig(h.config(), h.env.Redis.Addr())
	if w, err := strconv.Atoi(os.Getenv("BENCH_WORKERS")); err == nil {
		cfg.Workers = w
	}
	rc := operator.RateLimitedRestConfig(h.env.Config())
	var mu sync.Mutex
	counts := map[string]int64{}
	counted := rest.CopyConfig(rc)
	counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return requestCounter{next: rt, mu: &mu, n: counts} }
	deps := h.deps()
	deps.Kube = kubernetes.NewForConfigOrDie(counted)
	deps.Trawler = versioned.NewForConfigOrDie(counted)
	op := h.startOperatorWith(cfg, deps)
	jobs := h.benchJobs(n)
	h.waitFor("informer caches", time.Minute, op.HasSynced)

	b.ResetTimer()
	start := time.Now()
	h.createJobs(jobs)
	h.waitFor("all crawler pods", 5*time.Minute, func() bool { return h.countPods(h.ns, k8s.RoleCrawler) >= n })
	viaOperator := time.Since(start)
	b.StopTimer()
	mu.Lock()
	requests := maps.Clone(counts)
	mu.Unlock()

	// The same objects, created directly by one client (sequentially, and
	// with 8 concurrent callers) in another namespace.
	direct := func(concurrency int) time.Duration {
		ns, err := h.kube.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "direct-"}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = h.kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
		client := kubernetes.NewForConfigOrDie(rc)
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, concurrency)
		for _, j := range jobs {
			want := desiredForBench(j, cfg)
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				for _, pvc := range want.pvcs {
					pvc.Namespace, pvc.OwnerReferences = ns.Name, nil
					if _, err := client.CoreV1().PersistentVolumeClaims(ns.Name).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
						b.Error(err)
					}
				}
				for _, pod := range want.pods {
					pod.Namespace = ns.Name
					if _, err := client.CoreV1().Pods(ns.Name).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	sequential := direct(1)
	concurrent := direct(8)
	b.ReportMetric(viaOperator.Seconds(), "s-operator")
	b.ReportMetric(sequential.Seconds(), "s-direct-1")
	b.ReportMetric(concurrent.Seconds(), "s-direct-8")
	b.ReportMetric(viaOperator.Seconds()/sequential.Seconds(), "ratio-vs-1")
	b.ReportMetric(viaOperator.Seconds()/concurrent.Seconds(), "ratio-vs-8")
	b.Logf("operator API requests until then, by verb: %v", requests)
	b.Logf("%d crawl jobs -> pods via the operator (%d workers): %v; same PVCs+pods directly: %v (1 caller), %v (8 callers); QPS %v burst %d",
		n, cfg.Workers, viaOperator, sequential, concurrent, rc.QPS, rc.Burst)
}

// benchObjects are the PVCs and pods (Redis and crawler) the operator
// renders for a new crawl, as a direct client would create them.
type benchObjects struct {
	pvcs []*corev1.PersistentVolumeClaim
	pods []*corev1.Pod
}

func desiredForBench(j *trawlerv1.CrawlJob, cfg operator.Config) benchObjects {
	id := j.Spec.ID
	size := cfg.CrawlerStorage
	mk := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{k8s.LabelCrawl: id}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}}
	}
	claim := func(name string) []corev1.Volume {
		return []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	}
	redisPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: k8s.RedisName(id),
		Labels: map[string]string{k8s.LabelCrawl: id, k8s.LabelRole: "direct-redis"}},
		Spec: corev1.PodSpec{Hostname: k8s.RedisName(id),
			Containers: []corev1.Container{{Name: "redis", Image: cfg.RedisImage,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: cfg.RedisCPU, corev1.ResourceMemory: cfg.RedisMemory}}}},
			Volumes: claim(k8s.RedisName(id))}}
	crawlerPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: k8s.CrawlerName(id, 0),
		Labels: map[string]string{k8s.LabelCrawl: id, k8s.LabelRole: "direct"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, PriorityClassName: k8s.PriorityClassName(0),
			Containers: []corev1.Container{{Name: "crawler", Image: cfg.CrawlerImage,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: *cfg.CrawlerCPU, corev1.ResourceMemory: *cfg.CrawlerMemory}}}},
			Volumes: claim(k8s.CrawlerName(id, 0))}}
	return benchObjects{pvcs: []*corev1.PersistentVolumeClaim{mk(k8s.RedisName(id)), mk(k8s.CrawlerName(id, 0))},
		pods: []*corev1.Pod{redisPod, crawlerPod}}
}

// BenchmarkThousandRunningCrawls (issue 5, bench b): an operator (in its
// own process) with 1000 running crawls; its RSS and API requests per
// second once nothing changes (goal: no writes).
func BenchmarkThousandRunningCrawls(b *testing.B) {
	const n = 1000
	h := newHarness(b)
	jobs := h.benchJobs(n)
	child := h.startChildOperator(h.dbName)
	setup := time.Now()
	h.createJobs(jobs)
	h.waitFor("every crawl running", 15*time.Minute, func() bool {
		list, err := h.trawler.TrawlerV1().CrawlJobs(h.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		running := 0
		for _, j := range list.Items {
			if j.Status.State == store.StateRunning {
				running++
			}
		}
		return running == n
	})
	b.Logf("%d crawls running after %v", n, time.Since(setup))
	time.Sleep(5 * time.Second)

	b.ResetTimer()
	const window = 30 * time.Second
	before := child.requests()
	_, cpu0 := child.usage()
	time.Sleep(window)
	after := child.requests()
	rss, cpu1 := child.usage()
	b.StopTimer()

	var writes, total float64
	for verb, v := range after {
		d := float64(v - before[verb])
		total += d
		if verb != "GET" && verb != "WATCH" {
			writes += d
		}
		b.Logf("%s: %.2f/s", verb, d/window.Seconds())
	}
	b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
	b.ReportMetric(total/window.Seconds(), "api-req/s")
	b.ReportMetric(writes/window.Seconds(), "api-writes/s")
	b.ReportMetric(100*float64(cpu1-cpu0)/float64(window), "cpu-%")
	b.Logf("%d running crawls: RSS %.1f MiB, %.2f API requests/s (%.2f writes/s), CPU %.1f%% of a core",
		n, float64(rss)/(1<<20), total/window.Seconds(), writes/window.Seconds(), 100*float64(cpu1-cpu0)/float64(window))
}

// BenchmarkStatusLatency (issue 5, bench c): from a crawler's change in
// Redis (pages done) to the CrawlJob status showing it, over 10 running
// crawls (goal: p99 <= 1 s).
func BenchmarkStatusLatency(b *testing.B) {
	const crawls, samples = 10, 200
	h := newHarness(b)
	h.startOperator(stubConfig(h.config(), h.env.Redis.Addr()))
	jobs := h.benchJobs(crawls)
	h.createJobs(jobs)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	seen := map[string]int64{}
	changed := make(chan struct{}, 1)
	f := informers.NewSharedInformerFactoryWithOptions(h.trawler, 0, informers.WithNamespace(h.ns))
	inf := f.Trawler().V1().CrawlJobs().Informer()
	note := func(obj any) {
		j := obj.(*trawlerv1.CrawlJob)
		mu.Lock()
		seen[j.Spec.ID] = j.Status.PagesDone
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
	var lat []time.Duration
	b.ResetTimer()
	for i := range samples {
		id := jobs[i%crawls].Spec.ID
		v, err := rdb.Incr(ctx, id+":d").Result()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		deadline := time.After(10 * time.Second)
		for {
			mu.Lock()
			ok := seen[id] >= v
			mu.Unlock()
			if ok {
				break
			}
			select {
			case <-changed:
			case <-time.After(5 * time.Millisecond):
			case <-deadline:
				b.Fatalf("status of %s never showed pagesDone %d", id, v)
			}
		}
		lat = append(lat, time.Since(start))
		time.Sleep(time.Duration(20+i*7%150) * time.Millisecond)
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	b.ReportMetric(float64(pct(0.5).Milliseconds()), "ms-p50")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "ms-p99")
	b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "ms-max")
	b.Logf("crawler change -> CrawlJob status over %d samples: p50 %v p90 %v p99 %v max %v",
		len(lat), pct(0.5), pct(0.9), pct(0.99), lat[len(lat)-1])
}
