package operator

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

const mi = 1 << 20

func TestUsageMoved(t *testing.T) {
	tests := []struct {
		name            string
		old, cur, floor int64
		want            bool
	}{
		{"same", 500, 500, cpuFloorMilli, false},
		{"up 10% exactly", 500, 550, cpuFloorMilli, false},
		{"up more than 10%", 500, 551, cpuFloorMilli, true},
		{"down more than 10%", 500, 449, cpuFloorMilli, true},
		{"idle jitter under the floor", 1, 4, cpuFloorMilli, false},
		{"idle to busy", 2, 300, cpuFloorMilli, true},
		{"from nothing past the floor", 0, 6, cpuFloorMilli, true},
		{"memory: a MiB on a small pod is under the floor", 3 * mi, 4 * mi, memoryFloorByte, false},
		{"memory: doubling a small pod", 3 * mi, 6 * mi, memoryFloorByte, true},
		{"memory: 5% on a big pod", 1000 * mi, 1050 * mi, memoryFloorByte, false},
		{"memory: 20% on a big pod", 1000 * mi, 1200 * mi, memoryFloorByte, true},
	}
	for _, tt := range tests {
		if got := usageMoved(tt.old, tt.cur, tt.floor); got != tt.want {
			t.Errorf("%s: usageMoved(%d, %d) = %v, want %v", tt.name, tt.old, tt.cur, got, tt.want)
		}
	}
}

func TestFormatUsage(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{formatCPU(0), "0m"}, {formatCPU(250), "250m"}, {formatCPU(2500), "2500m"},
		{formatMemory(0), "0Mi"}, {formatMemory(123*mi + 1000), "123Mi"}, {formatMemory(3 << 30), "3072Mi"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
		if _, err := resource.ParseQuantity(tt.got); err != nil {
			t.Errorf("%q is no quantity: %v", tt.got, err)
		}
	}
}

// TestMergeUsageAgainstTheRequest: a crawler that requested 1200m and
// 1280Mi shows a new value only once it moved by a tenth of that.
func TestMergeUsageAgainstTheRequest(t *testing.T) {
	requests := map[string]string{"cpu": "1200m", "memory": "1280Mi", "storage": "22Gi"}
	prev := map[string]string{"cpu": "850m", "memory": "600Mi"}
	for _, tt := range []struct {
		cpu, mem int64
		want     map[string]string
	}{
		{960, 720 * mi, prev},
		{1000, 600 * mi, map[string]string{"cpu": "1000m", "memory": "600Mi"}},
		{850, 750 * mi, map[string]string{"cpu": "850m", "memory": "750Mi"}},
	} {
		if got := mergeUsage(prev, podUsage{CPUMilli: tt.cpu, Memory: tt.mem}, true, requests); !maps.Equal(got, tt.want) {
			t.Errorf("%dm %dMi: got %v, want %v", tt.cpu, tt.mem/mi, got, tt.want)
		}
	}
}

func TestMergeUsage(t *testing.T) {
	u := func(cpu, mem int64) podUsage { return podUsage{CPUMilli: cpu, Memory: mem} }
	s := func(cpu, mem string) map[string]string { return map[string]string{"cpu": cpu, "memory": mem} }
	tests := []struct {
		name     string
		prev     map[string]string
		cur      podUsage
		measured bool
		want     map[string]string
	}{
		{"no metrics, no usage", nil, podUsage{}, false, nil},
		{"first measurement", nil, u(250, 123*mi), true, s("250m", "123Mi")},
		{"unmeasured now: last value kept", s("250m", "123Mi"), podUsage{}, false, s("250m", "123Mi")},
		{"small moves keep the old strings", s("250m", "123Mi"), u(270, 130*mi), true, s("250m", "123Mi")},
		{"cpu moved, memory did not", s("250m", "123Mi"), u(400, 125*mi), true, s("400m", "123Mi")},
		{"memory moved, cpu did not", s("250m", "123Mi"), u(255, 200*mi), true, s("250m", "200Mi")},
		{"both moved", s("250m", "123Mi"), u(20, 40*mi), true, s("20m", "40Mi")},
		{"a value written otherwise is still compared", s("1", "1Gi"), u(1050, 1100*mi), true, s("1", "1Gi")},
		{"an unparsable value is replaced", s("lots", "123Mi"), u(250, 123*mi), true, s("250m", "123Mi")},
		{"a missing resource is added", map[string]string{"cpu": "250m"}, u(250, 123*mi), true, s("250m", "123Mi")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeUsage(tt.prev, tt.cur, tt.measured, nil); !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestChangedPods(t *testing.T) {
	u := func(cpu int64) podUsage { return podUsage{CPUMilli: cpu, Memory: 100 * mi} }
	tests := []struct {
		name              string
		announced, latest map[string]podUsage
		want              []string
		next              map[string]podUsage
	}{
		{"nothing measured", nil, nil, nil, map[string]podUsage{}},
		{"new pods are announced", nil, map[string]podUsage{"b": u(1), "a": u(2)}, []string{"a", "b"},
			map[string]podUsage{"a": u(2), "b": u(1)}},
		{"small moves are not, and keep the announced value", map[string]podUsage{"a": u(500)},
			map[string]podUsage{"a": u(540)}, nil, map[string]podUsage{"a": u(500)}},
		{"drift adds up against the announced value", map[string]podUsage{"a": u(500)},
			map[string]podUsage{"a": u(560)}, []string{"a"}, map[string]podUsage{"a": u(560)}},
		{"pods no longer measured are forgotten quietly", map[string]podUsage{"a": u(500), "gone": u(5)},
			map[string]podUsage{"a": u(500)}, nil, map[string]podUsage{"a": u(500)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next := changedPods(tt.announced, tt.latest)
			if !slices.Equal(got, tt.want) || !maps.Equal(next, tt.next) {
				t.Errorf("got %v %v, want %v %v", got, next, tt.want, tt.next)
			}
		})
	}
}

func TestPodsChangedMuchOnUsage(t *testing.T) {
	base := func(usage map[string]string) map[string]trawlerv1.PodStatus {
		return map[string]trawlerv1.PodStatus{"0": {Phase: "Running", Usage: usage}}
	}
	if podsChangedMuch(base(nil), base(nil)) {
		t.Error("no usage either side: changed")
	}
	if !podsChangedMuch(base(nil), base(map[string]string{"cpu": "250m", "memory": "123Mi"})) {
		t.Error("first usage not worth recording")
	}
	if !podsChangedMuch(base(map[string]string{"cpu": "250m"}), base(map[string]string{"cpu": "400m"})) {
		t.Error("new usage not worth recording")
	}
	if podsChangedMuch(base(map[string]string{"cpu": "250m"}), base(map[string]string{"cpu": "250m"})) {
		t.Error("same usage recorded again")
	}
}

func TestToStorePodCarriesUsage(t *testing.T) {
	p := toStorePod(trawlerv1.PodStatus{Phase: "Running", Usage: map[string]string{"cpu": "250m", "memory": "123Mi"},
		Requests: map[string]string{"cpu": "1", "memory": "1Gi"}}, t0)
	if p.CPUUsedMilli != 250 || p.MemoryUsed != 123*mi || p.CPUAllocMilli != 1000 || p.MemoryAlloc != 1<<30 {
		t.Errorf("store pod %+v", p)
	}
}

// fakeUsageAPI is a usageAPI answering from fields, counting calls.
type fakeUsageAPI struct {
	mu        sync.Mutex
	isServed  bool
	servedErr error
	listErr   error
	usage     map[string]podUsage
	lookups   int
	lists     int
}

func (f *fakeUsageAPI) served(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	return f.isServed, f.servedErr
}

func (f *fakeUsageAPI) list(context.Context, string, string) (map[string]podUsage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listErr != nil {
		return nil, f.listErr
	}
	return maps.Clone(f.usage), nil
}

func (f *fakeUsageAPI) calls() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lookups, f.lists
}

func (f *fakeUsageAPI) set(fn func(*fakeUsageAPI)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

type watcherFixture struct {
	w        *usageWatcher
	api      *fakeUsageAPI
	clock    *testingclock.FakeClock
	log      *SyncBuffer
	notified []string
}

// logLines is what the watcher logged, a line each.
func (f *watcherFixture) logLines() []string {
	return strings.Split(strings.TrimSpace(f.log.String()), "\n")
}

func newWatcherFixture(api *fakeUsageAPI) *watcherFixture {
	f := &watcherFixture{api: api, clock: testingclock.NewFakeClock(t0), log: &SyncBuffer{}}
	cfg := testConfig()
	f.w = newUsageWatcher(api, cfg, f.clock, slog.New(slog.NewTextHandler(f.log, nil)),
		func(pod string) { f.notified = append(f.notified, pod) })
	return f
}

func TestUsageWatcherWithoutMetricsAPI(t *testing.T) {
	f := newWatcherFixture(&fakeUsageAPI{servedErr: apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io"}, "")})
	ctx := context.Background()
	// An hour of 30 s rounds: a look-up at start and every 5 minutes, no
	// List, one log line.
	for range 120 {
		f.w.poll(ctx)
		f.clock.Step(f.w.interval)
	}
	lookups, lists := f.api.calls()
	if lookups != 12 || lists != 0 {
		t.Errorf("%d look-ups and %d lists in an hour, want 12 and 0", lookups, lists)
	}
	if l := f.logLines(); len(l) != 1 || !strings.Contains(l[0], "not served") || strings.Contains(l[0], "err=") {
		t.Errorf("log %q, want one quiet line", l)
	}
	if _, ok := f.w.usage("anything"); ok || len(f.notified) != 0 {
		t.Error("usage without metrics")
	}
	// The API appears (metrics-server installed): found at the next look-up.
	f.api.set(func(a *fakeUsageAPI) {
		a.isServed, a.servedErr, a.usage = true, nil, map[string]podUsage{"p": {CPUMilli: 100, Memory: 50 * mi}}
	})
	for range 10 {
		f.w.poll(ctx)
		f.clock.Step(f.w.interval)
	}
	if u, ok := f.w.usage("p"); !ok || u.CPUMilli != 100 {
		t.Errorf("usage %+v %v after the API appeared", u, ok)
	}
	if lookups, lists := f.api.calls(); lookups != 13 || lists == 0 {
		t.Errorf("%d look-ups, %d lists", lookups, lists)
	}
	if !slices.Equal(f.notified, []string{"p"}) {
		t.Errorf("notified %v, want p once", f.notified)
	}
}

func TestUsageWatcherListFailures(t *testing.T) {
	f := newWatcherFixture(&fakeUsageAPI{isServed: true, usage: map[string]podUsage{"p": {CPUMilli: 100, Memory: 50 * mi}}})
	ctx := context.Background()
	f.w.poll(ctx)
	// A flaky API: one warning however long it lasts, the last values kept.
	f.api.set(func(a *fakeUsageAPI) { a.listErr = errors.New("connection reset") })
	for range 10 {
		f.clock.Step(f.w.interval)
		f.w.poll(ctx)
	}
	if _, ok := f.w.usage("p"); !ok {
		t.Error("usage dropped on a transient failure")
	}
	f.api.set(func(a *fakeUsageAPI) { a.listErr = nil })
	f.clock.Step(f.w.interval)
	f.w.poll(ctx)
	// Then metrics-server goes away: usage forgotten, looked for rarely.
	f.api.set(func(a *fakeUsageAPI) {
		a.isServed = false
		a.listErr = apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
	})
	for range 20 {
		f.clock.Step(f.w.interval)
		f.w.poll(ctx)
	}
	if _, ok := f.w.usage("p"); ok {
		t.Error("usage kept after the API went away")
	}
	lookups, lists := f.api.calls()
	// Ten minutes after it went: looked for at start, on the round after
	// it went, and 5 minutes later.
	if lookups != 3 || lists != 13 {
		t.Errorf("%d look-ups, %d lists; want 3 and 13", lookups, lists)
	}
	var warn, info int
	for _, l := range f.logLines() {
		switch {
		case strings.Contains(l, "level=WARN"):
			warn++
		case strings.Contains(l, "level=INFO"):
			info++
		}
	}
	// served, failing (warn), works again, no longer served.
	if warn != 1 || info != 3 {
		t.Errorf("%d warnings and %d infos:\n%s", warn, info, strings.Join(f.logLines(), "\n"))
	}
}

func TestUsageWatcherRunsOnTheClock(t *testing.T) {
	f := newWatcherFixture(&fakeUsageAPI{isServed: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.w.run(ctx) }()
	waitFor := func(lists int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, n := f.api.calls(); n >= lists && f.clock.HasWaiters() {
				return
			}
			if time.Now().After(deadline) {
				_, n := f.api.calls()
				t.Fatalf("%d lists, want %d", n, lists)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(1)
	for i := 2; i <= 4; i++ {
		f.clock.Step(f.w.interval)
		waitFor(i)
	}
	f.clock.Step(f.w.interval / 2)
	time.Sleep(20 * time.Millisecond)
	if _, n := f.api.calls(); n != 4 {
		t.Errorf("%d lists before the interval passed", n)
	}
	cancel()
	<-done
}

// podMetrics is a PodMetrics of one container.
func podMetrics(pod string, cpu, mem string) *metricsv1beta1.PodMetrics {
	return &metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "crawlers",
			Labels: map[string]string{k8s.LabelCrawl: testID, k8s.LabelRole: k8s.RoleCrawler}},
		Containers: []metricsv1beta1.ContainerMetrics{{Name: "crawler", Usage: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}},
	}
}

var podMetricsGVR = metricsv1beta1.SchemeGroupVersion.WithResource("pods")

// TestSyncReportsPodUsage runs the watcher on the metrics fake clientset:
// usage reaches the CrawlJob status and the crawl document, small moves
// write nothing, a real change writes both once.
func TestSyncReportsPodUsage(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), crawlerPodIn(0, corev1.PodRunning), redisPodIn(corev1.PodRunning),
		pvcs["redis-"+testID], pvcs[name(0)])
	f.withRedis(reachable("running"))
	mc := metricsfake.NewSimpleClientset()
	mc.Resources = []*metav1.APIResourceList{{GroupVersion: metricsGroupVersion,
		APIResources: []metav1.APIResource{{Name: "nodes"}, {Name: "pods", Namespaced: true}}}}
	redisMetrics := podMetrics("redis-"+testID, "3m", "20Mi")
	redisMetrics.Labels[k8s.LabelRole] = k8s.RoleRedis
	other := podMetrics("unrelated", "1", "1Gi")
	other.Labels = map[string]string{"app": "other"}
	for _, pm := range []*metricsv1beta1.PodMetrics{podMetrics(name(0), "850m", "600Mi"), redisMetrics, other} {
		if err := mc.Tracker().Create(podMetricsGVR, pm, "crawlers"); err != nil {
			t.Fatal(err)
		}
	}
	f.c.usage = newUsageWatcher(metricsAPI{mc}, f.c.cfg, f.clock, f.c.log, f.c.enqueuePodOwner)
	ctx := context.Background()
	key := "crawlers/" + cj.Name
	drain := func() []string {
		var keys []string
		for f.c.queue.Len() > 0 {
			k, _ := f.c.queue.Get()
			keys = append(keys, k)
			f.c.queue.Done(k)
		}
		return keys
	}
	setUsage := func(pm *metricsv1beta1.PodMetrics) {
		t.Helper()
		if err := mc.Tracker().Update(podMetricsGVR, pm, "crawlers"); err != nil {
			t.Fatal(err)
		}
	}
	syncAndSeed := func() []string {
		t.Helper()
		if err := f.syncProgress(); err != nil {
			t.Fatal(err)
		}
		w := f.writes()
		updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(ctx, cj.Name, metav1.GetOptions{})
		f.seed(updated)
		return w
	}

	// Before any metrics: the status has no usage.
	syncAndSeed()
	if u := f.status().Pods["0"].Usage; u != nil {
		t.Fatalf("usage %v before metrics", u)
	}
	drain()

	f.c.usage.poll(ctx)
	var lists []string
	for _, a := range mc.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok {
			lists = append(lists, l.GetNamespace()+" "+l.GetListRestrictions().Labels.String())
		}
	}
	if want := []string{"crawlers role in (crawler,redis)"}; !slices.Equal(lists, want) {
		t.Errorf("lists %q, want %q", lists, want)
	}
	if _, ok := f.c.usage.usage("unrelated"); ok {
		t.Error("an unrelated pod was read")
	}
	if got := drain(); !slices.Equal(got, []string{key}) {
		t.Fatalf("enqueued %v, want the crawl once", got)
	}
	storeWrites := f.store.callCount("RecordCrawlsProgress")
	f.clock.Step(f.c.cfg.StatsInterval) // usage is progress: one write per interval
	if w := syncAndSeed(); !contains(w, "patch crawljobs/status") {
		t.Fatalf("usage did not reach the status: %v", w)
	}
	st := f.status()
	if got := st.Pods["0"].Usage; !maps.Equal(got, map[string]string{"cpu": "850m", "memory": "600Mi"}) {
		t.Errorf("crawler usage %v", got)
	}
	if got := st.Pods["redis"].Usage; !maps.Equal(got, map[string]string{"cpu": "3m", "memory": "20Mi"}) {
		t.Errorf("redis usage %v", got)
	}
	if f.store.callCount("RecordCrawlsProgress") != storeWrites+1 {
		t.Errorf("crawl document not written")
	}
	doc := f.store.get(testID)
	if p := doc.Pods["0"]; p.CPUUsedMilli != 850 || p.MemoryUsed != 600*mi || p.CPUAllocMilli == 0 {
		t.Errorf("crawl document pod %+v", p)
	}
	if p := doc.Pods["redis"]; p.CPUUsedMilli != 3 || p.MemoryUsed != 20*mi {
		t.Errorf("crawl document redis %+v", p)
	}

	// Jitter: no wake-up, and syncs (the resync) write nothing.
	for i, cpu := range []string{"870m", "820m", "900m", "800m"} {
		setUsage(podMetrics(name(0), cpu, []string{"610Mi", "590Mi", "640Mi", "620Mi"}[i]))
		f.clock.Step(f.c.cfg.MetricsInterval)
		f.c.usage.poll(ctx)
		if got := drain(); len(got) != 0 {
			t.Errorf("%s: enqueued %v on jitter", cpu, got)
		}
		if w := syncAndSeed(); len(w) != 0 {
			t.Errorf("%s: writes on jitter: %v", cpu, w)
		}
	}
	if f.store.callCount("RecordCrawlsProgress") != storeWrites+1 {
		t.Errorf("crawl document rewritten on jitter")
	}

	// A real change: woken, written once to both.
	setUsage(podMetrics(name(0), "1500m", "900Mi"))
	f.clock.Step(f.c.cfg.MetricsInterval)
	f.c.usage.poll(ctx)
	if got := drain(); !slices.Equal(got, []string{key}) {
		t.Fatalf("enqueued %v after a real change", got)
	}
	if w := syncAndSeed(); len(w) != 1 || !contains(w, "patch crawljobs/status") {
		t.Errorf("writes %v, want the status", w)
	}
	if got := f.status().Pods["0"].Usage; !maps.Equal(got, map[string]string{"cpu": "1500m", "memory": "900Mi"}) {
		t.Errorf("crawler usage %v", got)
	}
	if p := f.store.get(testID).Pods["0"]; p.CPUUsedMilli != 1500 || p.MemoryUsed != 900*mi {
		t.Errorf("crawl document pod %+v", p)
	}
	if w := syncAndSeed(); len(w) != 0 {
		t.Errorf("writes %v on the next sync", w)
	}

	// The crawler pod ends (gone from metrics): its last usage stays.
	if err := mc.Tracker().Delete(podMetricsGVR, "crawlers", name(0)); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(f.c.cfg.MetricsInterval)
	f.c.usage.poll(ctx)
	if got := drain(); len(got) != 0 {
		t.Errorf("enqueued %v when a pod left the metrics", got)
	}
	if w := syncAndSeed(); len(w) != 0 {
		t.Errorf("writes %v when a pod left the metrics", w)
	}
	if got := f.status().Pods["0"].Usage; got["cpu"] != "1500m" {
		t.Errorf("usage %v after the pod left the metrics", got)
	}
}

// TestSyncWithoutMetricsClientHasNoUsage: the fixture's controller gets
// no metrics client, so no watcher and no usage.
func TestSyncWithoutMetricsClientHasNoUsage(t *testing.T) {
	f := newFixture(t, newJob(1, withFinalizer, runningStatus(store.StateRunning, 1)), configMap(),
		crawlerPodIn(0, corev1.PodRunning))
	f.withRedis(reachable("running"))
	if f.c.usage != nil {
		t.Fatal("a watcher without a metrics client")
	}
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if u := f.status().Pods["0"].Usage; u != nil {
		t.Errorf("usage %v", u)
	}
}
