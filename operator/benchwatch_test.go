package operator_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	informers "github.com/trawlerhq/trawler/k8s/generated/informers/externalversions"
)

// statusChanges counts the status updates of a namespace's CrawlJobs by
// what they changed ("state running->waiting_capacity", or the status
// fields, "pods.Phase" for a field of a pod's view), so a benchmark can
// say what the writes it counted were.
type statusChanges struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *harness) watchStatusChanges(ctx context.Context) *statusChanges {
	sc := &statusChanges{n: map[string]int{}}
	f := informers.NewSharedInformerFactoryWithOptions(h.trawler, 0, informers.WithNamespace(h.ns))
	inf := f.Trawler().V1().CrawlJobs().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		old, cur := o.(*trawlerv1.CrawlJob), n.(*trawlerv1.CrawlJob)
		if old.ResourceVersion == cur.ResourceVersion {
			return
		}
		key := changedStatus(old.Status, cur.Status)
		sc.mu.Lock()
		sc.n[key]++
		sc.mu.Unlock()
	}})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return sc
}

// changedStatus names what differs between two statuses.
func changedStatus(old, cur trawlerv1.CrawlJobStatus) string {
	if old.State != cur.State {
		return fmt.Sprintf("state %s->%s", old.State, cur.State)
	}
	var fields []string
	ov, cv := reflect.ValueOf(old), reflect.ValueOf(cur)
	for i := range ov.NumField() {
		name := ov.Type().Field(i).Name
		if apiequality.Semantic.DeepEqual(ov.Field(i).Interface(), cv.Field(i).Interface()) {
			continue
		}
		if name != "Pods" {
			fields = append(fields, name)
			continue
		}
		podFields := map[string]bool{}
		for k := range cur.Pods {
			po, pc := reflect.ValueOf(old.Pods[k]), reflect.ValueOf(cur.Pods[k])
			for j := range po.NumField() {
				if !apiequality.Semantic.DeepEqual(po.Field(j).Interface(), pc.Field(j).Interface()) {
					podFields["pods."+po.Type().Field(j).Name] = true
				}
			}
		}
		if len(old.Pods) != len(cur.Pods) {
			podFields["pods(count)"] = true
		}
		fields = append(fields, slices.Sorted(maps.Keys(podFields))...)
	}
	if len(fields) == 0 {
		return "nothing"
	}
	return strings.Join(fields, "+")
}

// String lists the counts, most frequent first.
func (sc *statusChanges) String() string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(sc.n), func(a, b string) int { return sc.n[b] - sc.n[a] })
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s %d", k, sc.n[k])
	}
	return strings.Join(out, ", ")
}

// podsSeen watches a namespace's pods of a role from now on and returns a
// channel that yields the time the n-th distinct one was seen. A watch
// (an informer, which resumes a broken watch) marks the moment exactly and
// costs the API server one encoding per pod, where polling with a List
// adds its own load and up to a period's delay.
func (h *harness) podsSeen(ctx context.Context, ns, role string, n int) <-chan time.Time {
	h.t.Helper()
	out := make(chan time.Time, 1)
	all := h.podsFirst(ctx, ns, k8s.LabelRole+"="+role, n, func(*corev1.Pod) bool { return true })
	go func() { out <- slices.MaxFunc(slices.Collect(maps.Values(<-all)), time.Time.Compare) }()
	return out
}

// podsFirst watches a namespace's pods that match the label selector from
// now on and, once n distinct ones have met cond, yields when each first
// did (see podsSeen).
func (h *harness) podsFirst(ctx context.Context, ns, selector string, n int, cond func(*corev1.Pod) bool) <-chan map[string]time.Time {
	h.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	h.t.Cleanup(cancel)
	f := kubeinformers.NewSharedInformerFactoryWithOptions(h.kube, 0, kubeinformers.WithNamespace(ns),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := f.Core().V1().Pods().Informer()
	out := make(chan map[string]time.Time, 1)
	var mu sync.Mutex
	seen := map[string]time.Time{}
	see := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || !cond(p) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := seen[p.Name]; !ok && len(seen) < n {
			seen[p.Name] = time.Now()
			if len(seen) == n {
				out <- maps.Clone(seen)
				cancel() // the watch has done its job
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj any) { see(obj) }})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return out
}

// when waits (at most 5 minutes) for the time a channel yields.
func (h *harness) when(what string, ch <-chan time.Time) time.Time {
	h.t.Helper()
	return await(h.t, what, ch)
}

// await waits (at most 5 minutes) for what a channel yields.
func await[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Minute):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}
