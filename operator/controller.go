package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	trawlerscheme "github.com/trawlerhq/trawler/k8s/generated/clientset/versioned/scheme"
	informers "github.com/trawlerhq/trawler/k8s/generated/informers/externalversions"
	listers "github.com/trawlerhq/trawler/k8s/generated/listers/trawler/v1"
)

// Event reasons the operator reports on CrawlJobs and ProfileJobs.
const (
	ReasonInvalidSpec     = "InvalidSpec"
	ReasonStateChanged    = "StateChanged"
	ReasonDocumentMissing = "CrawlDocumentMissing"
	ReasonCreateFailed    = "CreateFailed"
	ReasonRedisLost       = "RedisLost"
	ReasonAutoPaused      = "AutoPaused"
)

// Controller reconciles CrawlJobs and ProfileJobs in one namespace.
type Controller struct {
	cfg      Config
	kube     kubernetes.Interface
	trawler  versioned.Interface
	store    CrawlStore
	notifier Notifier
	// pages reads 0.11 crawls' pages from their WACZ files (nil: none).
	pages WACZPages
	files CanceledFiles
	// mailer sends the automatic pauses' e-mails (nil: logged only).
	mailer   Mailer
	clock    clock.WithTicker
	logs     LogReader
	recorder record.EventRecorder
	// broadcaster is ours to shut down when we built the recorder.
	broadcaster record.EventBroadcaster
	log         *slog.Logger
	telemetry   *Telemetry

	kubeFactory    kubeinformers.SharedInformerFactory
	cmFactory      kubeinformers.SharedInformerFactory
	trawlerFactory informers.SharedInformerFactory
	jobs           listers.CrawlJobLister
	profiles       listers.ProfileJobLister
	pods           corelisters.PodLister
	pvcs           corelisters.PersistentVolumeClaimLister
	configMaps     corelisters.ConfigMapLister
	podsByCrawl    labelIndex[*corev1.Pod]
	pvcsByCrawl    labelIndex[*corev1.PersistentVolumeClaim]
	jobsByOrg      labelIndex[*trawlerv1.CrawlJob]
	synced         []cache.InformerSynced

	// queue holds state work; progress alone has a lane of its own
	// (progressqueue.go), and so do the informers' resyncs.
	queue        workqueue.TypedRateLimitingInterface[string]
	profileQueue workqueue.TypedRateLimitingInterface[string]
	progress     *progressLane
	// resync holds the CrawlJobs the informer's periodic resync hands
	// over, all of them at once: in the state queue, 10,000 of them every
	// resync period would stand between a crawl and its stop.
	resync workqueue.TypedRateLimitingInterface[string]
	// locks keeps a job's syncs from the three queues apart.
	locks keyLocks
	// calls are state transitions the store is slow to answer.
	calls transitionCalls
	// exec are the accounting ticks' charges (execcharges.go).
	exec *execCharges
	// progressStore writes the crawl documents' progress in batches.
	progressStore *progressStore

	pollers    *pollers
	background *backgroundTasks
	// usage is nil when pod usage is not read.
	usage *usageWatcher
	// written remembers the statuses we wrote that the informer has not
	// shown yet, so a sync racing the informer does not act on the old.
	written *writtenJobs
	// expect holds the children created or deleted that the caches do
	// not show yet.
	expect *expectations
	// budget holds progress writes to one per stats interval per job.
	budget *writeBudget
	// quotas caches org concurrency quotas (uuid -> cachedQuota).
	quotas sync.Map
}

// eventScheme resolves the kinds events refer to (core objects, CrawlJob,
// ProfileJob). It is built once and private: adding types to client-go's
// global scheme while clients use it is a data race.
var eventScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	utilruntime.Must(trawlerscheme.AddToScheme(s))
	return s
}()

// New builds a Controller; call Run to start it.
func New(cfg Config, deps Deps) (*Controller, error) {
	if deps.Kube == nil || deps.Trawler == nil || deps.Store == nil {
		return nil, errors.New("operator: Kube, Trawler and Store are required")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, kube: deps.Kube, trawler: deps.Trawler, store: deps.Store, notifier: deps.Events,
		pages: deps.Pages, files: deps.Files, mailer: deps.Mailer, clock: deps.Clock, logs: deps.Logs, recorder: deps.Recorder, log: deps.Log, telemetry: deps.Telemetry}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.logs == nil {
		c.logs = apiLogReader{kube: deps.Kube}
	}
	if c.recorder == nil {
		c.broadcaster = record.NewBroadcaster()
		c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: deps.Kube.CoreV1().Events(cfg.Namespace)})
		c.recorder = c.broadcaster.NewRecorder(eventScheme, corev1.EventSource{Component: "trawler-operator"})
	}

	ns := cfg.Namespace
	c.kubeFactory = kubeinformers.NewSharedInformerFactoryWithOptions(deps.Kube, cfg.Resync,
		kubeinformers.WithNamespace(ns), kubeinformers.WithTransform(trimForCache),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = fmt.Sprintf("%s in (%s,%s,%s)", k8s.LabelRole, k8s.RoleCrawler, k8s.RoleRedis, k8s.RoleBrowser)
		}))
	c.cmFactory = kubeinformers.NewSharedInformerFactoryWithOptions(deps.Kube, cfg.Resync,
		kubeinformers.WithNamespace(ns), kubeinformers.WithTransform(trimForCache),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = k8s.LabelCrawl
		}))
	c.trawlerFactory = informers.NewSharedInformerFactoryWithOptions(deps.Trawler, cfg.Resync,
		informers.WithNamespace(ns), informers.WithTransform(trimForCache))

	jobInf := c.trawlerFactory.Trawler().V1().CrawlJobs()
	profInf := c.trawlerFactory.Trawler().V1().ProfileJobs()
	podInf := c.kubeFactory.Core().V1().Pods()
	pvcInf := c.kubeFactory.Core().V1().PersistentVolumeClaims()
	cmInf := c.cmFactory.Core().V1().ConfigMaps()
	c.jobs, c.profiles = jobInf.Lister(), profInf.Lister()
	c.pods, c.pvcs, c.configMaps = podInf.Lister(), pvcInf.Lister(), cmInf.Lister()
	var err error
	if c.podsByCrawl, err = addLabelIndex[*corev1.Pod](podInf.Informer(), k8s.LabelCrawl); err != nil {
		return nil, err
	}
	if c.pvcsByCrawl, err = addLabelIndex[*corev1.PersistentVolumeClaim](pvcInf.Informer(), k8s.LabelCrawl); err != nil {
		return nil, err
	}
	if c.jobsByOrg, err = addLabelIndex[*trawlerv1.CrawlJob](jobInf.Informer(), k8s.LabelOrg); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{jobInf.Informer().HasSynced, profInf.Informer().HasSynced,
		podInf.Informer().HasSynced, pvcInf.Informer().HasSynced, cmInf.Informer().HasSynced}

	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: stateSync.queue(), Clock: c.clock, MetricsProvider: c.telemetry.queueProvider()})
	c.resync = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: resyncSync.queue(), Clock: c.clock, MetricsProvider: c.telemetry.queueProvider()})
	c.profileQueue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "profilejobs", Clock: c.clock, MetricsProvider: c.telemetry.queueProvider()})
	progressClient := deps.ProgressTrawler
	if progressClient == nil {
		progressClient = deps.Trawler
	}
	c.progress = newProgressLane(cfg, progressClient, c.clock, c.telemetry)
	c.progressStore = newProgressStore(deps.Store, cfg.StoreTimeout, c.log)
	c.budget = newWriteBudget(cfg.StatsInterval)
	c.written = newWrittenJobs()
	c.expect = newExpectations()
	c.pollers = newPollers(cfg, deps.Store, c.clock, c.log, c.wake)
	c.background = newBackgroundTasks()
	c.exec = newExecCharges(c.chargeExecBatch)
	if deps.Metrics != nil && cfg.MetricsInterval > 0 {
		c.usage = newUsageWatcher(metricsAPI{deps.Metrics}, cfg, c.clock, c.log, c.enqueuePodOwner)
	}

	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{jobInf.Informer(), jobHandler("crawljob", c.enqueue, c.resync.Add)},
		{profInf.Informer(), jobHandler("profilejob", func(key, _ string) { c.profileQueue.Add(key) }, c.profileQueue.Add)},
		{podInf.Informer(), c.childHandler("pod")},
		{pvcInf.Informer(), c.childHandler("pvc")},
		{cmInf.Informer(), c.childHandler("configmap")},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("adding event handler: %w", err)
		}
	}
	return c, nil
}

// Run starts the informers and workers and blocks until ctx is done and
// every worker has stopped. A controller runs once.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.progress.queue.ShutDown()
	defer c.resync.ShutDown()
	defer c.profileQueue.ShutDown()
	defer c.pollers.stopAll()
	if c.broadcaster != nil {
		defer c.broadcaster.Shutdown()
	}

	c.kubeFactory.Start(ctx.Done())
	c.cmFactory.Start(ctx.Done())
	c.trawlerFactory.Start(ctx.Done())
	defer c.kubeFactory.Shutdown()
	defer c.cmFactory.Shutdown()
	defer c.trawlerFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return // ctx ended before the caches filled
	}
	c.log.Info("operator started", "namespace", c.cfg.Namespace, "workers", c.cfg.Workers)
	defer c.telemetry.runs(c)()
	syncJob, syncProfile := c.telemetry.timed(stateSync.queue(), c.sync), c.telemetry.timed("profilejobs", c.syncProfile)
	syncProgress := c.telemetry.timed(progressSync.queue(), c.syncProgress)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker(c.queue, syncJob), time.Second) })
	}
	for range c.cfg.ProgressWorkers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.progressWorker(syncProgress), time.Second) })
	}
	syncResync := c.telemetry.timed(resyncSync.queue(), c.syncResync)
	for range resyncWorkers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker(c.resync, syncResync), time.Second) })
	}
	wg.Go(func() { c.progressStore.run(ctx) })
	wg.Go(func() { wait.UntilWithContext(ctx, c.worker(c.profileQueue, syncProfile), time.Second) })
	if c.usage != nil {
		wg.Go(func() { c.usage.run(ctx) })
	}
	<-ctx.Done()
	// Control writes stop first: a worker may take a while to return,
	// and the pollers must not go on asserting its stale decisions.
	c.pollers.stopAll()
	c.queue.ShutDown()
	c.progress.queue.ShutDown()
	c.resync.ShutDown()
	c.profileQueue.ShutDown()
	wg.Wait()
	c.calls.wg.Wait()
	c.exec.wg.Wait()
	c.background.wait()
}

// HasSynced reports whether every informer cache has synced (for
// readiness checks).
func (c *Controller) HasSynced() bool {
	for _, synced := range c.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// worker processes keys until the queue shuts down.
func (c *Controller) worker(q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) func(context.Context) {
	return func(ctx context.Context) {
		for c.processNextItem(ctx, q, sync) {
		}
	}
}

// processNextItem syncs one key and reports false once the queue shuts
// down: errors are retried with rate limiting, success forgets the key's
// failures. Done is deferred, so a panicking sync still releases the key.
func (c *Controller) processNextItem(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	err := sync(ctx, key)
	switch {
	case err == nil, ctx.Err() != nil:
		q.Forget(key)
	default:
		c.log.Warn("sync failed, will retry", "key", key, "attempt", q.NumRequeues(key)+1, "err", err)
		q.AddRateLimited(key)
	}
	return true
}

// resyncWorkers sync the CrawlJobs of a resync. A safety net needs no
// haste: with a backlog, the queue holds each key once and the period
// stretches, while state work keeps its own workers.
const resyncWorkers = 2

// splitKey splits a namespace/name key.
func splitKey(key string) (string, string) {
	ns, name, _ := strings.Cut(key, "/")
	return ns, name
}

// isGone reports whether an API error means the object is already gone
// or was replaced (a UID precondition failed).
func isGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}
