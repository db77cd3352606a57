package operator

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	trawlerfake "github.com/trawlerhq/trawler/k8s/generated/clientset/versioned/fake"
	"github.com/trawlerhq/trawler/store"
)

// fixture is a Controller on fake clientsets whose caches are filled
// directly, as in sample-controller's tests.
type fixture struct {
	t       *testing.T
	c       *Controller
	kube    *kubefake.Clientset
	trawler *trawlerfake.Clientset
	store   *memStore
	clock   *testingclock.FakeClock
	events  *record.FakeRecorder
}

func newFixture(t *testing.T, cj *trawlerv1.CrawlJob, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, kube: kubefake.NewClientset(objs...), trawler: trawlerfake.NewSimpleClientset(cj),
		store: newMemStore(), clock: testingclock.NewFakeClock(t0.Add(time.Second)), events: record.NewFakeRecorder(100)}
	f.store.addCrawl(cj.Spec.ID)
	c, err := New(testConfig(), Deps{Kube: f.kube, Trawler: f.trawler, Store: f.store, Clock: f.clock,
		Recorder: f.events, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.seed(cj)
	for _, o := range objs {
		f.seed(o)
	}
	return f
}

// seed puts an object into the matching informer cache.
func (f *fixture) seed(obj runtime.Object) {
	var err error
	switch o := obj.(type) {
	case *trawlerv1.CrawlJob:
		err = f.c.trawlerFactory.Trawler().V1().CrawlJobs().Informer().GetIndexer().Add(o)
	case *corev1.Pod:
		err = f.c.kubeFactory.Core().V1().Pods().Informer().GetIndexer().Add(o)
	case *corev1.PersistentVolumeClaim:
		err = f.c.kubeFactory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
	case *corev1.ConfigMap:
		err = f.c.cmFactory.Core().V1().ConfigMaps().Informer().GetIndexer().Add(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// withRedis makes the crawl's poller report st without any Redis.
func (f *fixture) withRedis(st *redisState) {
	done := make(chan struct{})
	close(done)
	// An ended poller: its context is done and its timer stopped, so it
	// never polls, and halting it again does nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	f.c.pollers.m["crawlers/"+k8s.CrawlJobName(testID)] = &poller{state: st, ctx: ctx, cancel: cancel, timer: timer, done: done}
}

func (f *fixture) sync() error {
	f.kube.ClearActions()
	f.trawler.ClearActions()
	return f.c.sync(context.Background(), "crawlers/"+k8s.CrawlJobName(testID))
}

// syncProgress is a pass from the progress queue, as the poller's
// progress wake-ups and the main queue's hand-overs of progress bring;
// then the crawl document gets the progress it handed to the batch
// writer.
func (f *fixture) syncProgress() error {
	f.kube.ClearActions()
	f.trawler.ClearActions()
	err := f.c.syncProgress(context.Background(), "crawlers/"+k8s.CrawlJobName(testID))
	if ferr := f.c.progressStore.flush(context.Background()); ferr != nil {
		f.t.Fatal(ferr)
	}
	return err
}

// writes lists the mutating actions of the last sync as "verb resource[/sub] name".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range append(f.kube.Actions(), f.trawler.Actions()...) {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		switch x := a.(type) {
		case k8stesting.CreateAction:
			s += " " + x.GetObject().(metav1.Object).GetName()
		case k8stesting.DeleteAction:
			s += " " + x.GetName()
		}
		out = append(out, s)
	}
	return out
}

func (f *fixture) status() trawlerv1.CrawlJobStatus {
	cj, err := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), k8s.CrawlJobName(testID), metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return cj.Status
}

func configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: k8s.CrawlConfigMapName(testID), Namespace: "crawlers",
		Labels: map[string]string{k8s.LabelCrawl: testID}}, Data: map[string]string{k8s.ConfigMapKey: "{}"}}
}

func withFinalizer(cj *trawlerv1.CrawlJob) { cj.Finalizers = []string{k8s.Finalizer} }

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.HasPrefix(x, s) {
			return true
		}
	}
	return false
}

func TestSyncCreatesChildrenOfANewCrawl(t *testing.T) {
	f := newFixture(t, newJob(2, withFinalizer), configMap())
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	w := f.writes()
	for _, want := range []string{"create persistentvolumeclaims redis-" + testID, "create persistentvolumeclaims " + name(0),
		"create persistentvolumeclaims " + name(1), "create pods " + name(0), "create pods " + name(1)} {
		if !contains(w, want) {
			t.Errorf("missing %q in %v", want, w)
		}
	}
	if contains(w, "create pods redis-"+testID) {
		t.Error("redis pod created before any crawler is active")
	}
	if !contains(w, "patch crawljobs/status") {
		t.Errorf("status not written with the children: %v", w)
	}
	if st := f.status(); st.Scale != 2 || st.State != store.StateStarting {
		t.Errorf("status %+v", st)
	}
	// The children's events bring the next sync: the new pods' view is
	// progress, which a starting crawl holds back for the state change it
	// leads to.
	updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), k8s.CrawlJobName(testID), metav1.GetOptions{})
	f.seed(updated)
	pods, _ := f.kube.CoreV1().Pods("crawlers").List(context.Background(), metav1.ListOptions{})
	for i := range pods.Items {
		f.seed(&pods.Items[i])
	}
	pvcs, _ := f.kube.CoreV1().PersistentVolumeClaims("crawlers").List(context.Background(), metav1.ListOptions{})
	for i := range pvcs.Items {
		f.seed(&pvcs.Items[i])
	}
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("second sync wrote %v, want nothing yet", w)
	}
	f.clock.Step(f.c.cfg.StatsInterval)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("after the stats interval wrote %v, want nothing while starting", w)
	}
	// At the starting timeout the crawl waits for capacity: a state
	// change, written at once with the pods that show why.
	f.clock.Step(f.c.cfg.StartingTimeout)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 1 || !contains(w, "patch crawljobs/status") || len(f.status().Pods) != 2 ||
		f.status().State != store.StateWaitingCapacity {
		t.Errorf("after the starting timeout wrote %v, state %s, pods %v; want waiting_capacity with both pods",
			w, f.status().State, f.status().Pods)
	}
}

// TestSyncOnAStaleCacheCreatesNothingTwice: the caches have not shown the
// children the last pass created, or the pod it deleted; the next pass
// neither creates them again nor deletes again. Once the expectations
// expire, a pass acts again (a child may have gone before the cache saw it).
func TestSyncOnAStaleCacheCreatesNothingTwice(t *testing.T) {
	f := newFixture(t, newJob(2, withFinalizer), configMap())
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); !contains(w, "create pods "+name(1)) {
		t.Fatalf("first pass wrote %v", w)
	}
	for range 2 {
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		if w := f.writes(); contains(w, "create") {
			t.Errorf("a pass on the stale cache wrote %v", w)
		}
	}
	f.clock.Step(expectationTTL + time.Second)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); !contains(w, "create pods "+name(1)) {
		t.Errorf("after the expectations expired wrote %v, want the creates again", w)
	}

	// A pod of an instance no longer wanted: deleted once.
	g := newFixture(t, newJob(1, withFinalizer, runningStatus(store.StateRunning, 1)), configMap(),
		crawlerPodIn(0, corev1.PodRunning), crawlerPodIn(1, corev1.PodRunning), redisPodIn(corev1.PodRunning))
	g.withRedis(reachable("running"))
	if err := g.sync(); err != nil {
		t.Fatal(err)
	}
	if w := g.writes(); !contains(w, "delete pods "+name(1)) {
		t.Fatalf("first pass wrote %v", w)
	}
	if err := g.sync(); err != nil {
		t.Fatal(err)
	}
	if w := g.writes(); contains(w, "delete") {
		t.Errorf("a pass on the stale cache wrote %v", w)
	}
}

// TestSyncRestartWritesRestartTimeWithTheNewPods restarts a crawl that
// waits for capacity, whose old pods are gone: the pass that creates the
// new pods records restartTime in the same status write, so the next pass
// leaves the new pods alone.
func TestSyncRestartWritesRestartTimeWithTheNewPods(t *testing.T) {
	const restart = "2026-11-30T12:00:30Z"
	cj := newJob(1, withFinalizer, withStatus(func(s *trawlerv1.CrawlJobStatus) {
		s.State, s.Scale = store.StateWaitingCapacity, 1
	}), func(cj *trawlerv1.CrawlJob) { cj.Spec.RestartTime = restart })
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), pvcs["redis-"+testID], pvcs[name(0)])
	f.clock.SetTime(t0.Add(2 * time.Minute))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); !contains(w, "create pods "+name(0)) || !contains(w, "patch crawljobs/status") {
		t.Fatalf("writes %v, want the new pod and the status", w)
	}
	if got := f.status().RestartTime; got != restart {
		t.Fatalf("restartTime %q written with the new pods, want %q", got, restart)
	}
	updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), cj.Name, metav1.GetOptions{})
	f.seed(updated)
	f.seed(crawlerPodIn(0, corev1.PodPending))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); contains(w, "delete pods "+name(0)) {
		t.Errorf("the new pod was deleted again: %v", w)
	}
}

func TestSyncAddsTheFinalizerFirst(t *testing.T) {
	f := newFixture(t, newJob(1), configMap())
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	var first string
	for _, a := range f.trawler.Actions() {
		if a.GetVerb() == "update" {
			first = a.GetSubresource()
			break
		}
	}
	if first != "" || len(f.trawler.Actions()) == 0 {
		t.Errorf("first crawljob write is %q, want the finalizer update", first)
	}
	cj, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), k8s.CrawlJobName(testID), metav1.GetOptions{})
	if !contains(cj.Finalizers, k8s.Finalizer) {
		t.Errorf("finalizers %v", cj.Finalizers)
	}
}

func TestSyncInvalidSpecWarnsOnceWithoutRetrying(t *testing.T) {
	f := newFixture(t, newJob(1, withFinalizer)) // no ConfigMap
	if err := f.sync(); err != nil {
		t.Fatalf("user error returned as error (hot loop): %v", err)
	}
	if len(f.events.Events) != 1 || !strings.Contains(<-f.events.Events, "InvalidSpec") {
		t.Fatal("no warning event")
	}
	c := meta.FindStatusCondition(f.status().Conditions, CondSpecValid)
	if c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("condition %+v", c)
	}
	if w := f.writes(); contains(w, "create pods "+name(0)) {
		t.Error("pods created without their config")
	}
	// The next sync sees its own status: no second event, no write.
	cj, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), k8s.CrawlJobName(testID), metav1.GetOptions{})
	f.seed(cj)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.events.Events) != 0 || len(f.writes()) != 0 {
		t.Errorf("events %d writes %v on an unchanged invalid job", len(f.events.Events), f.writes())
	}
}

func TestSyncSteadyRunningCrawlWritesNothing(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), crawlerPodIn(0, corev1.PodRunning), redisPodIn(corev1.PodRunning),
		pvcs["redis-"+testID], pvcs[name(0)])
	r := reachable("running")
	r.PagesFound, r.PagesDone = 4, 2
	f.withRedis(r)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	// First sync: stats and pods reach the status.
	updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), cj.Name, metav1.GetOptions{})
	f.seed(updated)
	for range 3 {
		f.clock.Step(time.Second)
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		if w := f.writes(); len(w) != 0 {
			t.Fatalf("writes while nothing changed: %v", w)
		}
	}
}

func TestSyncRecreatesFailedPods(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	evicted := crawlerPodIn(0, corev1.PodFailed)
	evicted.Status.Reason = "Evicted"
	f := newFixture(t, cj, configMap(), evicted, redisPodIn(corev1.PodRunning))
	f.withRedis(reachable("running"))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); !contains(w, "delete pods "+name(0)) {
		t.Errorf("evicted pod not deleted: %v", w)
	}
}

func TestSyncDeletedCrawlIsCanceledAndTornDownInOrder(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) {
		cj.DeletionTimestamp = mtime(t0)
	})
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), crawlerPodIn(0, corev1.PodRunning), redisPodIn(corev1.PodRunning),
		pvcs["redis-"+testID], pvcs[name(0)])
	f.store.SetCrawlState(context.Background(), testID, store.StateRunning, nil, store.CrawlStateExtra{})
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.store.get(testID); got.State != store.StateCanceled || got.Finished == nil {
		t.Errorf("crawl %s finished %v", got.State, got.Finished)
	}
	w := f.writes()
	if !contains(w, "delete pods "+name(0)) {
		t.Errorf("crawler pod not deleted first: %v", w)
	}
	for _, bad := range []string{"delete pods redis-" + testID, "delete persistentvolumeclaims " + name(0)} {
		if contains(w, bad) {
			t.Errorf("%q while a crawler pod remains", bad)
		}
	}
	if st := f.status(); st.State != store.StateCanceled || st.Finished == nil {
		t.Errorf("status %+v", st)
	}
}

func TestSyncDeletedCrawlWithoutDocumentStillTearsDown(t *testing.T) {
	cj := newJob(1, withFinalizer, func(cj *trawlerv1.CrawlJob) { cj.DeletionTimestamp = mtime(t0) })
	f := newFixture(t, cj, configMap())
	delete(f.store.crawls, testID)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if st := f.status(); st.State != store.StateCanceled || st.Finished == nil {
		t.Errorf("status %+v", st)
	}
}

func TestSyncStoreOutageIsRetriedWithStatusKept(t *testing.T) {
	cj := newJob(1, withFinalizer, withStatus(func(s *trawlerv1.CrawlJobStatus) { s.Scale, s.InitRedis = 1, true }))
	f := newFixture(t, cj, configMap(), crawlerPodIn(0, corev1.PodRunning), redisPodIn(corev1.PodRunning))
	f.withRedis(reachable("running"))
	f.store.setDown(true)
	if err := f.sync(); err == nil {
		t.Fatal("store outage not returned for a rate-limited retry")
	}
	if st := f.status(); st.State == store.StateRunning {
		t.Error("state moved without the document")
	}
	f.store.setDown(false)
	updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), cj.Name, metav1.GetOptions{})
	f.seed(updated)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if st := f.status(); st.State != store.StateRunning {
		t.Errorf("state %s after the store came back", st.State)
	}
}

func TestSyncReleasesAFinishedCrawlAfterItsTTL(t *testing.T) {
	finished := func(cj *trawlerv1.CrawlJob) {
		cj.Status.State, cj.Status.Finished, cj.Status.Scale = store.StateComplete, mtime(t0), 1
		setCondition(&cj.Status, CondFinishTasks, metav1.ConditionTrue, "Done", "", t0)
	}
	f := newFixture(t, newJob(1, withFinalizer, finished), configMap())
	f.clock.SetTime(t0.Add(10 * time.Second))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); contains(w, "delete crawljobs") {
		t.Fatalf("deleted before the ttl: %v", w)
	}
	f.clock.SetTime(t0.Add(31 * time.Second))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); !contains(w, "delete crawljobs") {
		t.Fatalf("not deleted after the ttl: %v", w)
	}

	deleting := newJob(1, withFinalizer, finished, func(cj *trawlerv1.CrawlJob) { cj.DeletionTimestamp = mtime(t0.Add(31 * time.Second)) })
	f = newFixture(t, deleting, configMap())
	f.clock.SetTime(t0.Add(32 * time.Second))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	cj, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), deleting.Name, metav1.GetOptions{})
	if len(cj.Finalizers) != 0 {
		t.Errorf("finalizer kept: %v (writes %v)", cj.Finalizers, f.writes())
	}
}

func TestSyncForceDeletesPodsStuckTerminating(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1), func(cj *trawlerv1.CrawlJob) {
		cj.DeletionTimestamp = mtime(t0)
	})
	stuck := crawlerPodIn(0, corev1.PodRunning)
	stuck.DeletionTimestamp = mtime(t0.Add(10 * time.Second)) // end of its grace period
	f := newFixture(t, cj, configMap(), stuck)
	f.clock.SetTime(t0.Add(30 * time.Second))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); contains(w, "delete pods") {
		t.Fatalf("force-deleted before the timeout: %v", w)
	}
	f.clock.SetTime(t0.Add(71 * time.Second))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	var grace *int64
	for _, a := range f.kube.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && d.GetName() == name(0) {
			grace = d.GetDeleteOptions().GracePeriodSeconds
		}
	}
	if grace == nil || *grace != 0 {
		t.Errorf("stuck pod not force-deleted: %v", f.writes())
	}
}

// TestSyncWritesProgressOncePerInterval: a busy crawl's pages change at
// every poll; its status and crawl document get them once per stats
// interval, and a state change is written at once with the progress of
// that moment.
func TestSyncWritesProgressOncePerInterval(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), crawlerPodIn(0, corev1.PodRunning), redisPodIn(corev1.PodRunning),
		pvcs["redis-"+testID], pvcs[name(0)])
	f.store.SetCrawlState(context.Background(), testID, store.StateRunning, nil, store.CrawlStateExtra{})
	interval := f.c.cfg.StatsInterval
	pass := func(status string, done int64) []string {
		t.Helper()
		r := reachable(status)
		r.PagesFound, r.PagesDone = 100, done
		f.withRedis(r)
		if err := f.syncProgress(); err != nil {
			t.Fatal(err)
		}
		updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), cj.Name, metav1.GetOptions{})
		f.seed(updated)
		return f.writes()
	}
	storedDone := func() int64 {
		if s := f.store.get(testID).Stats; s != nil {
			return s.Done
		}
		return -1
	}

	if w := pass("running", 1); !contains(w, "patch crawljobs/status") || storedDone() != 1 {
		t.Fatalf("first progress: writes %v, stored done %d", w, storedDone())
	}
	for done := int64(2); done <= 5; done++ {
		f.clock.Step(interval / 5)
		if w := pass("running", done); len(w) != 0 {
			t.Fatalf("progress %d written %v within the interval", done, w)
		}
	}
	if storedDone() != 1 || f.status().PagesDone != 1 {
		t.Fatalf("progress stored within the interval: document %d, status %d", storedDone(), f.status().PagesDone)
	}
	f.clock.Step(interval / 5)
	if w := pass("running", 6); !contains(w, "patch crawljobs/status") || storedDone() != 6 || f.status().PagesDone != 6 {
		t.Fatalf("after the interval: writes %v, document %d, status %d", w, storedDone(), f.status().PagesDone)
	}
	// A state change 100 ms later is written at once, with its progress.
	f.clock.Step(100 * time.Millisecond)
	if w := pass("pending-wait", 7); !contains(w, "patch crawljobs/status") {
		t.Fatalf("state change not written at once: %v", w)
	}
	if st := f.status(); st.State != store.StatePendingWait || st.PagesDone != 7 || storedDone() != 7 {
		t.Errorf("state %s pages %d, document %d; want pending-wait with 7 pages", st.State, st.PagesDone, storedDone())
	}
}

// TestSyncMakesAtMostOneProgressWrite: whatever changed in a pass (the
// stats, the pods, the state), the crawl document gets the progress in
// one write at most; a pass used to write the stats and the pods apart.
func TestSyncMakesAtMostOneProgressWrite(t *testing.T) {
	cj := newJob(2, withFinalizer, runningStatus(store.StateRunning, 2))
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0, 1}}).PVCs
	f := newFixture(t, cj, configMap(), crawlerPodIn(0, corev1.PodRunning), crawlerPodIn(1, corev1.PodRunning),
		redisPodIn(corev1.PodRunning), pvcs["redis-"+testID], pvcs[name(0)], pvcs[name(1)])
	f.store.SetCrawlState(context.Background(), testID, store.StateRunning, nil, store.CrawlStateExtra{})
	// Every store call but the state's compare-and-set, the reads and the
	// execution-time accounting is a progress write, whatever its name.
	progressWrites := func() int {
		f.store.mu.Lock()
		defer f.store.mu.Unlock()
		n := 0
		for method, calls := range f.store.calls {
			switch method {
			case "SetCrawlState", "GetCrawlByID", "GetOrg", "ChargeCrawlsExec":
			default:
				n += calls
			}
		}
		return n
	}
	redis := func(found, done int64, statuses ...string) *redisState {
		r := reachable(statuses...)
		r.PagesFound, r.PagesDone, r.FilesAdded = found, done, 1
		return r
	}
	steps := []struct {
		name  string
		redis *redisState
		pods  []*corev1.Pod // seeded before the pass
		state string        // the crawl document's state after it
		check func(store.Crawl) bool
	}{
		{name: "first stats and pods", redis: redis(10, 3, "running", "running"), state: store.StateRunning,
			check: func(c store.Crawl) bool { return c.Stats != nil && c.Stats.Done == 3 && len(c.Pods) == 3 }},
		{name: "more pages and a crawler restart", redis: redis(10, 5, "running", "running"),
			pods: []*corev1.Pod{crashingPod(0, 1, 1)}, state: store.StateRunning,
			check: func(c store.Crawl) bool { return c.Stats.Done == 5 && c.Pods["0"].Restarts == 1 }},
		{name: "a state change with progress", redis: redis(10, 9, "uploading-wacz", "uploading-wacz"),
			state: store.StateUploadingWACZ, check: func(c store.Crawl) bool { return c.Stats.Done == 9 }},
		{name: "the end, the crawlers exited", redis: redis(10, 10, "done", "done"),
			pods:  []*corev1.Pod{crawlerPodIn(0, corev1.PodSucceeded), crawlerPodIn(1, corev1.PodSucceeded)},
			state: store.StateComplete,
			check: func(c store.Crawl) bool {
				return c.Stats.Done == 10 && c.Pods["0"].Phase == "Succeeded" && c.Pods["1"].Phase == "Succeeded"
			}},
	}
	for _, s := range steps {
		for _, p := range s.pods {
			f.seed(p)
		}
		f.withRedis(s.redis)
		f.clock.Step(f.c.cfg.StatsInterval) // progress is due at every step
		before := progressWrites()
		if err := f.syncProgress(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), cj.Name, metav1.GetOptions{})
		f.seed(updated)
		if n := progressWrites() - before; n != 1 {
			t.Errorf("%s: %d progress writes, want 1", s.name, n)
		}
		if c := f.store.get(testID); c.State != s.state || !s.check(c) {
			t.Errorf("%s: crawl %s stats %+v pods %+v", s.name, c.State, c.Stats, c.Pods)
		}
	}
}

// TestSyncActsOnTheNewestStatusItWrote makes two status writes the
// informer does not show: the restart recorded by the first, with the new
// pod, must not look pending again to the pass after the second, which
// would delete the new pod.
func TestSyncActsOnTheNewestStatusItWrote(t *testing.T) {
	const restart = "2026-11-30T12:00:30Z"
	cj := newJob(1, withFinalizer, withStatus(func(s *trawlerv1.CrawlJobStatus) {
		s.State, s.Scale = store.StateWaitingCapacity, 1
	}), func(cj *trawlerv1.CrawlJob) { cj.Spec.RestartTime = restart; cj.ResourceVersion = "10" })
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), pvcs["redis-"+testID], pvcs[name(0)])
	// Each write makes a new version, as the API server's do (the fake
	// keeps the one it was given).
	rv := 10
	patch := k8stesting.ObjectReaction(f.trawler.Tracker())
	f.trawler.PrependReactor("patch", "crawljobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := patch(a)
		if err != nil || !handled {
			return handled, obj, err
		}
		rv++
		updated := obj.(*trawlerv1.CrawlJob).DeepCopy()
		updated.ResourceVersion = strconv.Itoa(rv)
		return true, updated, nil
	})
	f.clock.SetTime(t0.Add(2 * time.Minute))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); !contains(w, "create pods "+name(0)) || !contains(w, "patch crawljobs/status") {
		t.Fatalf("first pass wrote %v, want the new pod and the status", w)
	}
	// The informer shows the new pod running but neither status write.
	f.seed(crawlerPodIn(0, corev1.PodRunning))
	f.clock.Step(f.c.cfg.StatsInterval)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); !contains(w, "patch crawljobs/status") {
		t.Fatalf("second pass wrote %v, want the status with the crawler active", w)
	}
	f.clock.Step(f.c.cfg.StatsInterval)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); contains(w, "delete pods "+name(0)) {
		t.Errorf("a pass acted on the status before both writes and deleted the new pod: %v", w)
	}
}

// waitEnqueued waits for the job to be back in the queue, failing with
// fail after ten seconds.
func (f *fixture) waitEnqueued(fail string) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.c.queue.Len() == 0 {
		if time.Now().After(deadline) {
			f.t.Fatal(fail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSyncGoesOnWithoutASlowStoresAnswer: a store slow to answer a state
// transition holds the pass for transitionWait, not for the call; the
// call's end brings the job back, and that pass writes the answer
// without asking again.
func TestSyncGoesOnWithoutASlowStoresAnswer(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), crawlerPodIn(0, corev1.PodRunning), redisPodIn(corev1.PodRunning),
		pvcs["redis-"+testID], pvcs[name(0)])
	f.store.SetCrawlState(context.Background(), testID, store.StateRunning, nil, store.CrawlStateExtra{})
	f.store.slowStates = make(chan struct{})
	f.withRedis(reachable("pending-wait"))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if st := f.status(); st.State != store.StateRunning {
		t.Fatalf("state %s written before the store answered", st.State)
	}
	if f.c.queue.Len() != 0 {
		t.Fatal("enqueued before the store answered")
	}
	// A pass meanwhile does not ask again.
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	close(f.store.slowStates)
	f.waitEnqueued("the store's answer did not bring the job back")
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if st := f.status(); st.State != store.StatePendingWait {
		t.Errorf("state %s after the answer, want pending-wait", st.State)
	}
	if n := f.store.callCount("SetCrawlState"); n != 2 {
		t.Errorf("%d SetCrawlState calls, want 2 (the setup's and the pass's)", n)
	}
}

// TestSyncGoesOnWithoutASlowCharge: a charge the pass must wait for (a
// crawler exited) holds the pass for transitionWait, not for the charge,
// and the pass wraps nothing up; the charge's end brings the job back,
// and that pass takes its answer without charging again.
func TestSyncGoesOnWithoutASlowCharge(t *testing.T) {
	cj := newJob(2, withFinalizer, runningStatus(store.StateRunning, 2))
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0, 1}}).PVCs
	f := newFixture(t, cj, configMap(), exited(0, t0, t0.Add(time.Minute)), runningSince(1, t0),
		redisPodIn(corev1.PodRunning), pvcs["redis-"+testID], pvcs[name(0)], pvcs[name(1)])
	f.store.SetCrawlState(context.Background(), testID, store.StateRunning, nil, store.CrawlStateExtra{})
	f.store.slowCharges = make(chan struct{})
	f.withRedis(reachable("done", "running"))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if f.c.queue.Len() != 0 {
		t.Fatal("enqueued before the charge ended")
	}
	close(f.store.slowCharges)
	f.waitEnqueued("the charge's end did not bring the job back")
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.store.callCount("ChargeCrawlsExec"); n != 1 {
		t.Errorf("%d charges, want the one the first pass started", n)
	}
}

// TestPausedStatusWaitsForASlowCharge: the pass that records a pause
// while its crawlers' charge runs on writes no status (the paused status
// follows the seconds); the pass the charge's end brings writes it with
// the store's answer it already had, asking no second time.
func TestPausedStatusWaitsForASlowCharge(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1), pausedAtSpec(t0), withStopReason(reasonPaused))
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), exited(0, t0, t0.Add(time.Minute)), redisPodIn(corev1.PodRunning),
		pvcs["redis-"+testID], pvcs[name(0)])
	f.store.SetCrawlState(context.Background(), testID, store.StateRunning, nil, store.CrawlStateExtra{})
	f.store.slowCharges = make(chan struct{})
	f.withRedis(reachable(statusInterrupted))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if st := f.status(); st.State != store.StateRunning {
		t.Fatalf("state %s written before the charge ended", st.State)
	}
	close(f.store.slowCharges)
	f.waitEnqueued("the charge's end did not bring the job back")
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if st := f.status(); st.State != store.StatePaused {
		t.Errorf("state %s after the charge, want paused", st.State)
	}
	if n := f.store.callCount("SetCrawlState"); n != 2 {
		t.Errorf("%d SetCrawlState calls, want 2 (the setup's and the pause's)", n)
	}
}

// TestProgressWaitsUntilTheCacheShowsTheLastWrite: progress goes without
// a precondition, so it must not pile a second write on one the cache
// does not show yet; a state change is written at once all the same.
func TestProgressWaitsUntilTheCacheShowsTheLastWrite(t *testing.T) {
	cj := newJob(1, withFinalizer, runningStatus(store.StateRunning, 1))
	pvcs := desiredChildren(cj, testConfig(), childPlan{RedisPVC: true, CrawlerPVCs: []int{0}}).PVCs
	f := newFixture(t, cj, configMap(), crawlerPodIn(0, corev1.PodRunning), redisPodIn(corev1.PodRunning),
		pvcs["redis-"+testID], pvcs[name(0)])
	f.store.SetCrawlState(context.Background(), testID, store.StateRunning, nil, store.CrawlStateExtra{})
	redisAt := func(status string, done int64) {
		r := reachable(status)
		r.PagesFound, r.PagesDone = 100, done
		f.withRedis(r)
	}
	redisAt("running", 1)
	if err := f.syncProgress(); err != nil || !contains(f.writes(), "patch crawljobs/status") {
		t.Fatalf("first progress not written: %v %v", f.writes(), err)
	}
	// The cache still has the job as it was; the write made a new version
	// (which the fake clientset does not count).
	key := "crawlers/" + cj.Name
	f.c.written.mu.Lock()
	last := f.c.written.jobs[key]
	last.job = last.job.DeepCopy()
	last.job.ResourceVersion = "2"
	f.c.written.jobs[key] = last
	f.c.written.mu.Unlock()
	f.clock.Step(f.c.cfg.StatsInterval)
	redisAt("running", 2)
	if err := f.syncProgress(); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("progress written on an unobserved write: %v", w)
	}
	redisAt("pending-wait", 3)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if st := f.status(); st.State != store.StatePendingWait || st.PagesDone != 3 {
		t.Fatalf("state %s pages %d, want the state change written at once", st.State, st.PagesDone)
	}
	updated, _ := f.trawler.TrawlerV1().CrawlJobs("crawlers").Get(context.Background(), cj.Name, metav1.GetOptions{})
	f.seed(updated)
	f.clock.Step(f.c.cfg.StatsInterval)
	redisAt("pending-wait", 4)
	if err := f.syncProgress(); err != nil || !contains(f.writes(), "patch crawljobs/status") || f.status().PagesDone != 4 {
		t.Fatalf("progress not written once the cache caught up: %v %v", f.writes(), err)
	}
}
