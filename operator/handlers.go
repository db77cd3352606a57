package operator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// The informers' handlers and the other wakes only put a job's key in a
// queue, counting why (trawler_operator_crawljob_wakes_total); the sync
// does the rest.

// jobHandler enqueues CrawlJobs or ProfileJobs (kind) with add on every
// change but a CrawlJob's own progress write (progressEcho), and with
// resync on the informer's resyncs (updates with the same version), the
// safety net. The cause passed to add is the kind and the event,
// "crawljob-update".
func jobHandler(kind string, add func(key, cause string), resync func(key string)) cache.ResourceEventHandler {
	enqueue := func(event string) func(obj any) {
		return func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				add(key, kind+"-"+event)
			}
		}
	}
	update := enqueue("update")
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue("add"),
		UpdateFunc: func(old, obj any) {
			switch {
			case old.(metav1.Object).GetResourceVersion() == obj.(metav1.Object).GetResourceVersion():
				if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
					resync(key)
				}
			case !progressEcho(old, obj):
				update(obj)
			}
		},
		DeleteFunc: enqueue("delete"),
	}
}

// childHandler maps an event of a pod, PVC or ConfigMap (kind) to its
// owning job.
func (c *Controller) childHandler(kind string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueOwner(obj, kind+"-add") },
		UpdateFunc: func(old, cur any) {
			if old.(metav1.Object).GetResourceVersion() == cur.(metav1.Object).GetResourceVersion() {
				return // a resync; the owner's own resync covers it
			}
			c.enqueueOwner(cur, kind+"-update")
		},
		DeleteFunc: func(obj any) { c.enqueueOwner(obj, kind+"-delete") },
	}
}

// enqueueOwner follows the controller reference (checking the UID, so a
// child of a deleted job with the same name is ignored) and falls back to
// the crawl label for a ConfigMap created just before its CrawlJob.
func (c *Controller) enqueueOwner(obj any, cause string) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	ns := o.GetNamespace()
	ref := metav1.GetControllerOf(o)
	switch {
	case ref != nil && ref.Kind == "CrawlJob" && ref.APIVersion == trawlerv1.SchemeGroupVersion.String():
		if cj, err := c.jobs.CrawlJobs(ns).Get(ref.Name); err == nil && cj.UID == ref.UID {
			c.enqueue(ns+"/"+ref.Name, cause)
		}
	case ref != nil && ref.Kind == "ProfileJob" && ref.APIVersion == trawlerv1.SchemeGroupVersion.String():
		if pj, err := c.profiles.ProfileJobs(ns).Get(ref.Name); err == nil && pj.UID == ref.UID {
			c.profileQueue.Add(ns + "/" + ref.Name)
		}
	case ref == nil:
		if _, isCM := obj.(*corev1.ConfigMap); isCM && o.GetLabels()[k8s.LabelCrawl] != "" {
			c.enqueue(ns+"/"+k8s.CrawlJobName(o.GetLabels()[k8s.LabelCrawl]), cause)
		}
	}
}

// wake is how a poller asks for a sync: at once when what it saw may
// change a decision (change names it), and for progress alone on the
// progress queue when the write budget allows the next progress write
// (one sync per stats interval, not one per poll).
func (c *Controller) wake(key, change string) {
	if change == "" {
		c.enqueueProgress(key, c.budget.wait(key, c.clock.Now()), "poller")
		return
	}
	c.enqueue(key, change)
}

// enqueue asks for a sync of a CrawlJob on the state queue, counting the
// cause (trawler_operator_crawljob_wakes_total): what fills the queue
// that stops and finishes wait in.
func (c *Controller) enqueue(key, cause string) {
	c.telemetry.woke(cause)
	c.queue.Add(key)
}

// enqueueProgress asks for a sync of a CrawlJob on the progress queue
// after wait, counting the cause (trawler_operator_progress_wakes_total).
func (c *Controller) enqueueProgress(key string, wait time.Duration, cause string) {
	c.telemetry.progressWoke(cause)
	c.progress.queue.AddAfter(key, wait)
}

// enqueueAfter is enqueue after a delay.
func (c *Controller) enqueueAfter(key string, d time.Duration, cause string) {
	c.telemetry.woke(cause)
	c.queue.AddAfter(key, d)
}

// enqueuePodOwner enqueues the job owning a pod (the usage watcher calls
// it when the pod's usage moved enough).
func (c *Controller) enqueuePodOwner(pod string) {
	if p, err := c.pods.Pods(c.cfg.Namespace).Get(pod); err == nil {
		c.enqueueOwner(p, "usage")
	}
}
