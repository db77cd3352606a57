package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// apply converges the observed children to the desired ones: create what
// is missing (an existing name is fine), delete what is not desired (with
// a UID precondition, so a replacement is never hit), recreate pods that
// failed for good (evicted), and force-delete pods whose deletion never
// completes. Pods and PVCs are never updated. Errors are collected and
// the rest goes on. It returns when to look again for stuck deletions.
//
// What it created or deleted and the caches do not show yet is expected
// (see expectations): a pass on a stale cache repeats none of it.
func (c *Controller) apply(ctx context.Context, cj *trawlerv1.CrawlJob, o observed, want children) (time.Duration, error) {
	key := cj.Namespace + "/" + cj.Name
	var errs []error
	var requeue time.Duration
	pods := map[string]*corev1.Pod{}
	for _, p := range o.Crawlers {
		pods[p.Name] = p
	}
	if o.RedisPod != nil {
		pods[o.RedisPod.Name] = o.RedisPod
	}
	now := c.clock.Now()
	if c.expect.any(key) {
		seen := map[string]types.UID{}
		for name, p := range pods {
			seen["pod/"+name] = p.UID
		}
		for name, p := range o.PVCs {
			seen["pvc/"+name] = p.UID
		}
		c.expect.observed(key, seen)
	}

	for _, name := range slices.Sorted(maps.Keys(pods)) {
		p := pods[name]
		switch {
		case p.DeletionTimestamp != nil:
			after, err := c.forceDeleteIfStuck(ctx, p, now)
			errs = append(errs, err)
			requeue = minPositive(requeue, after)
		case c.expect.awaitsDelete(key, "pod/"+name, p.UID, now):
		case want.Pods[name] == nil:
			errs = append(errs, c.deleteChildPod(ctx, key, p, now))
		case p.Status.Phase == corev1.PodFailed:
			// Evicted or lost: OnFailure never restarts a Failed pod, so
			// replace it; its PVC and Redis state carry the crawl on.
			c.log.Info("recreating failed pod", "pod", p.Name, "reason", p.Status.Reason)
			errs = append(errs, c.deleteChildPod(ctx, key, p, now))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.PVCs)) {
		p := o.PVCs[name]
		if want.PVCs[name] == nil && p.DeletionTimestamp == nil && !c.expect.awaitsDelete(key, "pvc/"+name, p.UID, now) {
			err := c.kube.CoreV1().PersistentVolumeClaims(p.Namespace).Delete(ctx, p.Name, deleteOptions(p.UID, nil))
			if err != nil && !isGone(err) {
				errs = append(errs, fmt.Errorf("deleting pvc %s: %w", p.Name, err))
			} else {
				c.expect.deleted(key, "pvc/"+name, p.UID, now)
			}
		}
	}

	// PVCs before pods, so a new pod finds its volume; each group is
	// created concurrently, since a new crawl needs several objects.
	err := createAll(ctx, want.PVCs,
		func(name string) bool { return o.PVCs[name] != nil || c.expect.awaitsCreate(key, "pvc/"+name, now) },
		func(ctx context.Context, p *corev1.PersistentVolumeClaim) error {
			_, err := c.kube.CoreV1().PersistentVolumeClaims(cj.Namespace).Create(ctx, p, metav1.CreateOptions{})
			c.expectCreated(key, "pvc/"+p.Name, now, err)
			return err
		})
	errs = append(errs, err)
	err = createAll(ctx, want.Pods,
		func(name string) bool { return pods[name] != nil || c.expect.awaitsCreate(key, "pod/"+name, now) },
		func(ctx context.Context, p *corev1.Pod) error {
			_, err := c.kube.CoreV1().Pods(cj.Namespace).Create(ctx, p, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				c.recorder.Eventf(cj, corev1.EventTypeWarning, ReasonCreateFailed, "creating pod %s: %v", p.Name, err)
			}
			c.expectCreated(key, "pod/"+p.Name, now, err)
			return err
		})
	errs = append(errs, err)
	return requeue, errors.Join(errs...)
}

// expectCreated records a create the caches will show: one that
// succeeded, or found the object there already.
func (c *Controller) expectCreated(key, name string, now time.Time, err error) {
	if err == nil || apierrors.IsAlreadyExists(err) {
		c.expect.created(key, name, now)
	}
}

// deleteChildPod deletes a child pod and expects its deletion.
func (c *Controller) deleteChildPod(ctx context.Context, key string, p *corev1.Pod, now time.Time) error {
	err := c.deletePod(ctx, p, nil)
	if err == nil {
		c.expect.deleted(key, "pod/"+p.Name, p.UID, now)
	}
	return err
}

// createAll creates the wanted objects that do not exist, concurrently; an
// object that exists already (a stale cache) is fine.
func createAll[T metav1.Object](ctx context.Context, want map[string]T, exists func(string) bool,
	create func(context.Context, T) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if exists(name) {
			continue
		}
		wg.Go(func() {
			err := create(ctx, want[name])
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("creating %s: %w", name, err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// forceDeleteIfStuck removes a terminating pod with no grace once
// StuckPodTimeout has passed after its grace period ended (its
// deletionTimestamp): a pod on a lost node never confirms its deletion and
// would block teardown forever.
func (c *Controller) forceDeleteIfStuck(ctx context.Context, p *corev1.Pod, now time.Time) (time.Duration, error) {
	deadline := p.DeletionTimestamp.Add(c.cfg.StuckPodTimeout)
	if now.Before(deadline) {
		return deadline.Sub(now), nil
	}
	c.log.Warn("force-deleting stuck pod", "pod", p.Name)
	zero := int64(0)
	return 0, c.deletePod(ctx, p, &zero)
}

func (c *Controller) deletePod(ctx context.Context, p *corev1.Pod, grace *int64) error {
	err := c.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, deleteOptions(p.UID, grace))
	if err != nil && !isGone(err) {
		return fmt.Errorf("deleting pod %s: %w", p.Name, err)
	}
	return nil
}

// deleteOptions deletes exactly the object seen (UID precondition) in the
// background, so the garbage collector takes care of dependents.
func deleteOptions(uid types.UID, grace *int64) metav1.DeleteOptions {
	policy := metav1.DeletePropagationBackground
	return metav1.DeleteOptions{PropagationPolicy: &policy, GracePeriodSeconds: grace,
		Preconditions: metav1.NewUIDPreconditions(string(uid))}
}
