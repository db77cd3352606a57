package operator

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/clock"

	"github.com/trawlerhq/trawler/k8s"
)

// Pod usage comes from metrics.k8s.io when the cluster serves it: one
// label-selected List of the crawler namespace per interval, kept in
// memory for the syncs to read. The status shows a new value only when it
// moved meaningfully (mergeUsage), so a steady crawl writes nothing.
//
// Meaningfully means: by more than a tenth of the value shown and by more
// than a tenth of what the pod requested (at least the resource's floor).
// Usage matters against what the pod was given: how near its request a
// crawler runs is what a user reads from the dashboard and what decides
// whether it is squeezed or OOM-killed, and a swing smaller than a tenth
// of the request changes neither. Crawler CPU and memory swing by more
// than a tenth of themselves from one reading to the next on every busy
// page, so the relative rule alone would write nearly every reading: at
// 10,000 crawls and a 30 s interval, some 330 status and as many MongoDB
// writes a second for numbers nobody acts on.

const (
	// metricsGroupVersion is the API the usage is read from.
	metricsGroupVersion = "metrics.k8s.io/v1beta1"
	// metricsLookAgain is how often an absent metrics API is looked for.
	metricsLookAgain = 5 * time.Minute
	// metricsTimeout bounds one discovery look-up or List.
	metricsTimeout = 10 * time.Second

	// A usage value is replaced when it moved by more than usageChange of
	// itself and by more than the resource's floor (idle pods jitter by a
	// few millicores and the memory is shown in whole MiB).
	usageChange     = 0.10
	cpuFloorMilli   = 5
	memoryFloorByte = 1 << 20
	// requestShare is the part of a pod's request a value must move by
	// for the status.
	requestShare = 0.10
)

// podUsage is a pod's measured usage, summed over its containers.
type podUsage struct {
	CPUMilli int64
	Memory   int64 // bytes
}

// metricsAPI is the usageAPI of metrics.k8s.io.
type metricsAPI struct{ c metricsclient.Interface }

func (m metricsAPI) served(ctx context.Context) (bool, error) {
	// Discovery takes no context; its client has its own timeout, and a
	// late answer is dropped.
	type answer struct {
		l   *metav1.APIResourceList
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		l, err := m.c.Discovery().ServerResourcesForGroupVersion(metricsGroupVersion)
		ch <- answer{l, err}
	}()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case a := <-ch:
		if a.err != nil {
			return false, a.err
		}
		return slices.ContainsFunc(a.l.APIResources, func(r metav1.APIResource) bool { return r.Name == "pods" }), nil
	}
}

func (m metricsAPI) list(ctx context.Context, ns, selector string) (map[string]podUsage, error) {
	l, err := m.c.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make(map[string]podUsage, len(l.Items))
	for i := range l.Items {
		out[l.Items[i].Name] = usageOf(&l.Items[i])
	}
	return out, nil
}

// usageOf sums a pod's container usage.
func usageOf(pm *metricsv1beta1.PodMetrics) podUsage {
	var u podUsage
	for _, c := range pm.Containers {
		if q, ok := c.Usage[corev1.ResourceCPU]; ok {
			u.CPUMilli += q.MilliValue()
		}
		if q, ok := c.Usage[corev1.ResourceMemory]; ok {
			u.Memory += q.Value()
		}
	}
	return u
}

// formatCPU and formatMemory render usage as kubectl top does: "250m",
// "123Mi".
func formatCPU(milli int64) string { return fmt.Sprintf("%dm", milli) }

func formatMemory(bytes int64) string { return fmt.Sprintf("%dMi", bytes/(1<<20)) }

// usageMoved reports whether a value moved enough to be shown: by more
// than usageChange of the old value and more than floor.
func usageMoved(old, cur, floor int64) bool {
	d := cur - old
	if d < 0 {
		d = -d
	}
	return d > floor && float64(d) > usageChange*float64(old)
}

// usageChangedMuch reports whether either resource moved enough.
func usageChangedMuch(old, cur podUsage) bool {
	return usageMoved(old.CPUMilli, cur.CPUMilli, cpuFloorMilli) || usageMoved(old.Memory, cur.Memory, memoryFloorByte)
}

// mergeUsage returns a pod's status usage: the previous value of each
// resource unless the measurement (when there is one) moved enough, by
// usageMoved with a floor of requestShare of the pod's request (requests
// as the status shows them). A pod without a measurement keeps its last
// measured usage.
func mergeUsage(prev map[string]string, cur podUsage, measured bool, requests map[string]string) map[string]string {
	if !measured {
		return prev
	}
	out := make(map[string]string, 2)
	pick := func(key string, cur, floor int64, format func(int64) string, value func(resource.Quantity) int64) {
		if q, err := resource.ParseQuantity(requests[key]); err == nil {
			floor = max(floor, int64(requestShare*float64(value(q))))
		}
		if s, ok := prev[key]; ok {
			if q, err := resource.ParseQuantity(s); err == nil && !usageMoved(value(q), cur, floor) {
				out[key] = s
				return
			}
		}
		out[key] = format(cur)
	}
	pick(string(corev1.ResourceCPU), cur.CPUMilli, cpuFloorMilli, formatCPU, func(q resource.Quantity) int64 { return q.MilliValue() })
	pick(string(corev1.ResourceMemory), cur.Memory, memoryFloorByte, formatMemory, func(q resource.Quantity) int64 { return q.Value() })
	return out
}

// changedPods compares a fresh measurement with the values last announced
// and returns the pods whose usage appeared or moved enough (sorted), and
// the values to compare with next time. Pods no longer measured are
// forgotten without an announcement: their status keeps the last value.
func changedPods(announced, latest map[string]podUsage) ([]string, map[string]podUsage) {
	var changed []string
	next := make(map[string]podUsage, len(latest))
	for name, u := range latest {
		old, ok := announced[name]
		if !ok || usageChangedMuch(old, u) {
			changed = append(changed, name)
			next[name] = u
			continue
		}
		next[name] = old
	}
	slices.Sort(changed)
	return changed, next
}

// usageWatcher polls pod usage for the crawler namespace and keeps the
// latest values for the syncs. It looks for the metrics API at start and,
// while it is absent, every metricsLookAgain, logging only when that
// changes.
type usageWatcher struct {
	api      usageAPI
	ns       string
	selector string
	interval time.Duration
	clock    clock.WithTicker
	log      *slog.Logger
	// notify is called with each pod whose usage moved enough.
	notify func(pod string)

	mu     sync.RWMutex
	latest map[string]podUsage

	// The rest belongs to run.
	looked    bool
	isServed  bool
	lookAfter time.Time
	failing   bool
	announced map[string]podUsage
}

func newUsageWatcher(api usageAPI, cfg Config, clk clock.WithTicker, log *slog.Logger, notify func(string)) *usageWatcher {
	return &usageWatcher{api: api, ns: cfg.Namespace, interval: cfg.MetricsInterval, clock: clk, log: log, notify: notify,
		selector: fmt.Sprintf("%s in (%s,%s)", k8s.LabelRole, k8s.RoleCrawler, k8s.RoleRedis)}
}

// usage returns a pod's latest measured usage; a nil watcher has none.
func (w *usageWatcher) usage(pod string) (podUsage, bool) {
	if w == nil {
		return podUsage{}, false
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	u, ok := w.latest[pod]
	return u, ok
}

// run polls every interval until ctx is done.
func (w *usageWatcher) run(ctx context.Context) {
	t := w.clock.NewTicker(w.interval)
	defer t.Stop()
	for {
		w.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// poll does one round: look for the API if due, then list the usage and
// announce what moved.
func (w *usageWatcher) poll(ctx context.Context) {
	now := w.clock.Now()
	if !w.isServed {
		if w.looked && now.Before(w.lookAfter) {
			return
		}
		lctx, cancel := context.WithTimeout(ctx, metricsTimeout)
		ok, err := w.api.served(lctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		first := !w.looked
		w.looked, w.lookAfter = true, now.Add(metricsLookAgain)
		if !ok {
			if first {
				attrs := []any{"api", metricsGroupVersion}
				if err != nil && !apierrors.IsNotFound(err) {
					attrs = append(attrs, "err", err)
				}
				w.log.Info("pod metrics not served; pod usage is not reported", attrs...)
			}
			return
		}
		w.isServed = true
		w.log.Info("pod metrics served; reporting pod usage", "api", metricsGroupVersion, "every", w.interval)
	}

	lctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	latest, err := w.api.list(lctx, w.ns, w.selector)
	cancel()
	if err != nil {
		switch {
		case ctx.Err() != nil:
		case apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err):
			// The API went away (metrics-server removed or down): look for
			// it again on the next round, then rarely.
			w.isServed, w.lookAfter, w.failing, w.announced = false, now, false, nil
			w.set(nil)
			w.log.Info("pod metrics no longer served; pod usage keeps its last values", "api", metricsGroupVersion, "err", err)
		case !w.failing:
			w.failing = true
			w.log.Warn("reading pod metrics failed; will retry quietly", "err", err)
		}
		return
	}
	if w.failing {
		w.failing = false
		w.log.Info("reading pod metrics works again")
	}
	w.set(latest)
	changed, next := changedPods(w.announced, latest)
	w.announced = next
	for _, pod := range changed {
		w.notify(pod)
	}
}

func (w *usageWatcher) set(latest map[string]podUsage) {
	w.mu.Lock()
	w.latest = latest
	w.mu.Unlock()
}
