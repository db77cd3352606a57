package operator

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"

	"github.com/trawlerhq/trawler/k8s"
)

// Telemetry is the operator's Prometheus metrics. One is made per process
// (NewTelemetry) and given to every Controller the process builds, as a
// replica that loses and regains the Lease builds a new one: the series
// go on, and those read from the caches come from the controller that
// runs. Its methods do nothing on a nil *Telemetry.
//
//	trawler_operator_reconcile_duration_seconds{queue}  one sync of a key
//	trawler_operator_reconcile_errors_total{queue}      syncs that failed (retried)
//	trawler_operator_crawljob_status_writes_total{result}  CrawlJob status updates
//	trawler_operator_crawljob_wakes_total{cause}        requests to sync a CrawlJob on the state queue
//	trawler_operator_progress_wakes_total{cause}        requests to sync a CrawlJob on the progress queue
//	trawler_operator_sync_step_seconds{queue,step}      the steps of a CrawlJob sync, its key's lock included
//	trawler_operator_crawljobs{state}                   CrawlJobs by crawl state
//	trawler_operator_pods{role,phase}                   pods it manages
//	trawler_operator_pvcs{role}                         PVCs it manages
//	workqueue_*{name}                                   client-go's workqueue metrics
type Telemetry struct {
	reconcile       *prometheus.HistogramVec
	reconcileErrors *prometheus.CounterVec
	statusWrites    *prometheus.CounterVec
	wakes           *prometheus.CounterVec
	progressWakes   *prometheus.CounterVec
	steps           *prometheus.HistogramVec
	queues          queueMetrics
	// running is the controller whose caches the gauges read (nil: none
	// runs, as on a replica that does not lead).
	running atomic.Pointer[Controller]
}

// NewTelemetry registers the operator's metrics on reg.
func NewTelemetry(reg prometheus.Registerer) (*Telemetry, error) {
	t := &Telemetry{
		reconcile: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trawler_operator_reconcile_duration_seconds",
			Help:    "Time of one sync of a CrawlJob or ProfileJob key, by queue.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"queue"}),
		reconcileErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trawler_operator_reconcile_errors_total",
			Help: "Syncs that returned an error (the key is retried with backoff), by queue.",
		}, []string{"queue"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trawler_operator_crawljob_status_writes_total",
			Help: "CrawlJob status updates sent to the Kubernetes API, by result (ok, conflict: another write came first, gone: the CrawlJob was deleted, error).",
		}, []string{"result"}),
		wakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trawler_operator_crawljob_wakes_total",
			Help: "Requests to sync a CrawlJob on the state queue (repeats of a key already queued included), by cause: an event of the CrawlJob or a child (crawljob-update, pod-update, ...), a change the crawl's Redis showed (redis-statuses, ...), a requeue, a store answer or a background task done.",
		}, []string{"cause"}),
		progressWakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trawler_operator_progress_wakes_total",
			Help: "Requests to sync a CrawlJob on the progress queue (repeats of a key already queued included), by cause: the poller saw progress (poller), a pass of another queue handed its progress over (crawljobs, crawljob-resync), a progress pass came before the crawl's stats interval (budget), the last write is not in the cache yet (unobserved).",
		}, []string{"cause"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trawler_operator_sync_step_seconds",
			Help:    "Time of each step of a CrawlJob sync, by queue: budget (a progress sync's token), lock (waiting for another queue's sync of the same job), observe, carry-out (transitions and children), exec, status, wrap-up.",
			Buckets: queueBuckets,
		}, []string{"queue", "step"}),
		queues: newQueueMetrics(),
	}
	for _, c := range []prometheus.Collector{t.reconcile, t.reconcileErrors, t.statusWrites, t.wakes, t.progressWakes, t.steps, managedCollector{t}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering operator metrics: %w", err)
		}
	}
	if err := t.queues.register(reg); err != nil {
		return nil, err
	}
	return t, nil
}

// queueProvider is the workqueues' metrics provider (nil: client-go's
// default, which records nothing).
func (t *Telemetry) queueProvider() workqueue.MetricsProvider {
	if t == nil {
		return nil
	}
	return t.queues
}

// syncFunc syncs one key of a queue.
type syncFunc func(ctx context.Context, key string) error

// timed wraps a queue's sync so that each call is timed and its failure
// counted.
func (t *Telemetry) timed(queue string, sync syncFunc) syncFunc {
	if t == nil {
		return sync
	}
	// The queue's error series exists from the start, at 0, so that an
	// alert on its rate has something to read before the first failure.
	t.reconcileErrors.WithLabelValues(queue)
	return func(ctx context.Context, key string) error {
		start := time.Now()
		err := sync(ctx, key)
		t.reconcile.WithLabelValues(queue).Observe(time.Since(start).Seconds())
		if err != nil && ctx.Err() == nil {
			t.reconcileErrors.WithLabelValues(queue).Inc()
		}
		return err
	}
}

// statusWritten counts one CrawlJob status update and its result.
func (t *Telemetry) statusWritten(err error) {
	if t == nil {
		return
	}
	result := "ok"
	switch {
	case apierrors.IsConflict(err):
		result = "conflict"
	case apierrors.IsNotFound(err):
		result = "gone"
	case err != nil:
		result = "error"
	}
	t.statusWrites.WithLabelValues(result).Inc()
}

// woke counts one request to sync a CrawlJob on the state queue.
func (t *Telemetry) woke(cause string) {
	if t == nil {
		return
	}
	t.wakes.WithLabelValues(cause).Inc()
}

// progressWoke counts one request to sync a CrawlJob on the progress
// queue.
func (t *Telemetry) progressWoke(cause string) {
	if t == nil {
		return
	}
	t.progressWakes.WithLabelValues(cause).Inc()
}

// stepClock times the steps of one sync on queue.
func (t *Telemetry) stepClock(queue string) *stepClock {
	return &stepClock{t: t, queue: queue, last: time.Now()}
}

// stepClock records where a sync spends its time: a pass that waits for
// its key's lock, the store or the API server looks the same from the
// queue's work duration alone.
type stepClock struct {
	t     *Telemetry
	queue string
	last  time.Time
}

// step records the time since the previous step (or the clock's start)
// as step's.
func (s *stepClock) step(step string) {
	now := time.Now()
	if s.t != nil {
		s.t.steps.WithLabelValues(s.queue, step).Observe(now.Sub(s.last).Seconds())
	}
	s.last = now
}

// runs makes c the controller the gauges read, until the returned func is
// called.
func (t *Telemetry) runs(c *Controller) func() {
	if t == nil {
		return func() {}
	}
	t.running.Store(c)
	return func() { t.running.CompareAndSwap(c, nil) }
}

// managedCollector reads, at scrape time, what the running controller's
// caches hold: no cost between scrapes, and no series on a replica that
// does not lead.
type managedCollector struct{ t *Telemetry }

var (
	crawlJobsDesc = prometheus.NewDesc("trawler_operator_crawljobs",
		"CrawlJobs in the operator's cache by crawl state (\"\" before the first sync).", []string{"state"}, nil)
	podsDesc = prometheus.NewDesc("trawler_operator_pods",
		"Pods the operator manages (crawlers, crawl Redis, profile browsers), by role and phase.", []string{"role", "phase"}, nil)
	pvcsDesc = prometheus.NewDesc("trawler_operator_pvcs",
		"PVCs the operator manages, by role.", []string{"role"}, nil)
)

func (m managedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- crawlJobsDesc
	ch <- podsDesc
	ch <- pvcsDesc
}

func (m managedCollector) Collect(ch chan<- prometheus.Metric) {
	c := m.t.running.Load()
	if c == nil || !c.HasSynced() {
		return
	}
	ns := c.cfg.Namespace
	if jobs, err := c.jobs.CrawlJobs(ns).List(labels.Everything()); err == nil {
		byState := map[string]int{}
		for _, j := range jobs {
			byState[j.Status.State]++
		}
		for state, n := range byState {
			ch <- prometheus.MustNewConstMetric(crawlJobsDesc, prometheus.GaugeValue, float64(n), state)
		}
	}
	if pods, err := c.pods.Pods(ns).List(labels.Everything()); err == nil {
		type key struct{ role, phase string }
		count := map[key]int{}
		for _, p := range pods {
			count[key{p.Labels[k8s.LabelRole], string(p.Status.Phase)}]++
		}
		for k, n := range count {
			ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(n), k.role, k.phase)
		}
	}
	if pvcs, err := c.pvcs.PersistentVolumeClaims(ns).List(labels.Everything()); err == nil {
		count := map[string]int{}
		for _, p := range pvcs {
			count[p.Labels[k8s.LabelRole]]++
		}
		for role, n := range count {
			ch <- prometheus.MustNewConstMetric(pvcsDesc, prometheus.GaugeValue, float64(n), role)
		}
	}
}
