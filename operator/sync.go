package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// sync reconciles one CrawlJob from the main queue (see syncAs).
func (c *Controller) sync(ctx context.Context, key string) error {
	return c.syncAs(ctx, key, stateSync)
}

// syncProgress reconciles one CrawlJob from the progress queue (see
// syncAs).
func (c *Controller) syncProgress(ctx context.Context, key string) error {
	return c.syncAs(ctx, key, progressSync)
}

// syncResync reconciles one CrawlJob from the informers' resync (see
// syncAs): a state pass on a queue of its own.
func (c *Controller) syncResync(ctx context.Context, key string) error {
	return c.syncAs(ctx, key, resyncSync)
}

// syncAs reconciles one CrawlJob. It reads as the steps of the operator:
// get, finalizer, observe, decide, then the I/O the plan asks for (state
// transitions in the store, children, the poller), then the status,
// assembled once from all of that and written once, and what follows
// from a crawl's end (failure report, post-crawl tasks, release). All
// queues run the same pass, one at a time per job; the class only says
// who writes a status that changed in progress alone (see writeStatus).
func (c *Controller) syncAs(ctx context.Context, key string, class syncClass) error {
	steps := c.telemetry.stepClock(class.queue())
	defer c.locks.lock(key)()
	steps.step("lock")
	cj, err := c.getJob(key)
	if apierrors.IsNotFound(err) {
		c.forgetJob(key)
		return nil
	}
	if err != nil {
		return err
	}
	if cj.DeletionTimestamp == nil {
		if cj, err = c.ensureFinalizer(ctx, cj); err != nil {
			return err
		}
	} else if !slices.Contains(cj.Finalizers, k8s.Finalizer) {
		c.pollers.stop(key)
		return nil
	}

	o, err := c.observe(ctx, key, cj)
	if err != nil {
		return err
	}
	p := decide(cj, o, c.cfg)
	c.reportProblems(cj, p.Problems)
	if p.Poll {
		c.pollers.ensure(context.WithoutCancel(ctx), key, cj, p.Control, podsVersion(o))
	} else {
		c.pollers.stop(key)
	}
	steps.step("observe")
	answers, pending, requeue, err := c.carryOut(ctx, cj, o, p)
	o.Answers = answers
	errs := []error{err}
	steps.step("carry-out")
	exec, execPending, err := c.countExec(ctx, key, cj, p, o)
	o.Exec = exec
	errs = append(errs, err)
	// A 0.11 crawler cannot pause: its crawl runs on past the quota, as
	// in 2023, and the org's next run is refused.
	if o.Exec != nil && o.Exec.PauseReason != "" && cj.Spec.PausedAt == "" && !p.Stopping && speaksV1(cj, c.cfg) {
		errs = append(errs, c.requestAutoPause(ctx, key, cj, o.Exec.PauseReason))
	}
	steps.step("exec")

	st := crawlStatus(cj, p, o)
	c.reportTransitions(cj, st, p, o)
	c.notifyStarted(ctx, key, cj, st, p, o)
	// Every pass writes a state change it made, whatever else it did: the
	// pass that recreates a restarted crawl's pods writes restartTime with
	// them, or the next one would see the restart pending and delete the
	// new pods again. Progress alone waits for the write budget. While the
	// store has yet to answer a state transition, the status would be
	// superseded by the pass its answer brings (a starting crawl would
	// show runningSince, then running): that pass writes both at once,
	// unless this one changed the children the next pass must see. So
	// with a charge that must come first (countExec): the pass its end
	// brings writes the status, with this pass's answers, and wraps up.
	switch {
	case !pending && !execPending || changesChildren(cj.Status, st):
		errs = append(errs, c.writeStatus(ctx, key, cj, st, class))
	case execPending && len(answers) > 0:
		c.calls.keep(key, p.Transitions, answers)
	}
	steps.step("status")

	if st.Finished != nil && !execPending {
		later, err := c.wrapUp(ctx, key, cj, st, p, o)
		errs = append(errs, err)
		requeue = minPositive(requeue, later)
		steps.step("wrap-up")
	}
	if requeue > 0 {
		c.enqueueAfter(key, requeue, "requeue")
	}
	return errors.Join(errs...)
}

// forgetJob drops what the controller holds for a job that is gone.
func (c *Controller) forgetJob(key string) {
	c.pollers.stop(key)
	c.written.forget(key)
	c.expect.forget(key)
	c.budget.forget(key)
	c.calls.forget(key)
	c.exec.forget(key)
	c.background.forget(key)
	c.background.forget(startedKey(key))
	c.background.forget(failureKey(key))
}

// carryOut asks the store for the plan's transitions and converges the
// children to the plan. It returns the store's answers and when to look
// again (the plan's time-based rules, or children still going away).
//
// The store's compare-and-set and the children's creation overlap:
// neither needs the other's answer (the children converge to the plan
// whatever the store says, and a refused change shows in the status and
// the next plan), so a new crawl's pods do not wait on the database. Nor
// does the pass wait long for a slow database (transitionAnswers).
func (c *Controller) carryOut(ctx context.Context, cj *trawlerv1.CrawlJob, o observed, p plan) ([]transitionResult, bool, time.Duration, error) {
	var answers []transitionResult
	var pending bool
	var transitionErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		answers, pending, transitionErr = c.transitionAnswers(ctx, cj.Namespace+"/"+cj.Name, cj, p.Transitions)
	})
	requeue, applyErr := c.apply(ctx, cj, o, desiredChildren(cj, c.cfg, p.Children))
	wg.Wait()
	return answers, pending, minPositive(p.RequeueAfter, requeue), errors.Join(transitionErr, applyErr)
}

// wrapUp does what follows a crawl's end, pass after pass until the job
// is released: the report of why the operator failed it, the teardown,
// the post-crawl tasks, then the release. It returns when to look again.
func (c *Controller) wrapUp(ctx context.Context, key string, cj *trawlerv1.CrawlJob, st trawlerv1.CrawlJobStatus, p plan, o observed) (time.Duration, error) {
	if failureUnreported(st, o) {
		c.reportFailure(ctx, key, cj, st.FailReason, o.Crawlers)
	}
	if !p.Teardown {
		// The crawl just ended: tear down from the next sync on.
		c.enqueue(key, "ended")
	}
	if !meta.IsStatusConditionTrue(st.Conditions, CondFinishTasks) {
		// The post-crawl tasks drain the crawl's Redis (error lines,
		// crawls-done) once its crawlers have exited (pod events bring
		// us back), so what they log while stopping is kept.
		if len(o.Crawlers) == 0 {
			c.startPostCrawlTasks(ctx, key, cj, redisHeld(cj, o))
		}
		return 0, nil
	}
	return c.release(ctx, cj, st, o)
}

// getJob returns a copy of the job from the cache, or of the newest
// status we wrote while the cache still holds a version our writes
// replaced.
func (c *Controller) getJob(key string) (*trawlerv1.CrawlJob, error) {
	ns, name := splitKey(key)
	cj, err := c.jobs.CrawlJobs(ns).Get(name)
	if err != nil {
		return nil, err
	}
	return c.written.newest(key, cj).DeepCopy(), nil
}

// ensureFinalizer adds the finalizer before any child exists, so the
// crawl can never be removed without its teardown.
func (c *Controller) ensureFinalizer(ctx context.Context, cj *trawlerv1.CrawlJob) (*trawlerv1.CrawlJob, error) {
	if slices.Contains(cj.Finalizers, k8s.Finalizer) {
		return cj, nil
	}
	cj.Finalizers = append(cj.Finalizers, k8s.Finalizer)
	updated, err := c.trawler.TrawlerV1().CrawlJobs(cj.Namespace).Update(ctx, cj, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer: %w", err)
	}
	return updated, nil
}

// observe gathers what decide needs from the caches, the poller and the
// store.
func (c *Controller) observe(ctx context.Context, key string, cj *trawlerv1.CrawlJob) (observed, error) {
	o := observed{Now: c.clock.Now(), Crawlers: map[int]*corev1.Pod{},
		PVCs: map[string]*corev1.PersistentVolumeClaim{}, OrgSlotFree: true}
	o.ExecClock, o.ExecQuotaFreeAt = c.exec.clock(key)
	pods, err := c.podsByCrawl.list(cj.Namespace, cj.Spec.ID)
	if err != nil {
		return o, fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range pods {
		if !metav1.IsControlledBy(p, cj) {
			continue
		}
		if i, ok := k8s.CrawlerIndex(cj.Spec.ID, p.Name); ok && p.Labels[k8s.LabelRole] == k8s.RoleCrawler {
			o.Crawlers[i] = p
		} else if p.Name == k8s.RedisName(cj.Spec.ID) {
			o.RedisPod = p
		} else {
			continue
		}
		if u, ok := c.usage.usage(p.Name); ok {
			if o.Usage == nil {
				o.Usage = map[string]podUsage{}
			}
			o.Usage[p.Name] = u
		}
	}
	pvcs, err := c.pvcsByCrawl.list(cj.Namespace, cj.Spec.ID)
	if err != nil {
		return o, fmt.Errorf("listing pvcs: %w", err)
	}
	for _, p := range pvcs {
		if metav1.IsControlledBy(p, cj) {
			o.PVCs[p.Name] = p
		}
	}
	if cm, err := c.configMaps.ConfigMaps(cj.Namespace).Get(cj.Spec.ConfigMap); err == nil {
		_, o.ConfigMapOK = cm.Data[k8s.ConfigMapKey]
	}
	o.Redis = c.pollers.get(key)
	o.FinishTasksDone = c.background.done(key)
	o.StartedNotified = c.background.done(startedKey(key))
	o.FailureReported = c.background.done(failureKey(key))

	if cj.DeletionTimestamp == nil && cj.Status.State == "" {
		if o.QuotaSkip, err = c.quotaSkip(ctx, cj, o.Now); err != nil {
			return o, err
		}
	}
	if st := cj.Status; cj.DeletionTimestamp == nil && (st.State == "" || gatedByOrgLimit(st.State, st.RunningSince)) {
		if o.OrgSlotFree, err = c.orgLimitAllows(ctx, cj); err != nil {
			return o, err
		}
	}
	return o, nil
}

// recordTransitions asks the store for decide's state changes, in order,
// and returns its answers. It stops at the first the store refused (the
// crawl is then not in the state the later ones start from) and at an
// error, which it returns.
func (c *Controller) recordTransitions(ctx context.Context, cj *trawlerv1.CrawlJob, ts []transition) ([]transitionResult, error) {
	var results []transitionResult
	for _, t := range ts {
		res, err := c.recordTransition(ctx, cj, t)
		if err != nil {
			return results, err
		}
		results = append(results, res)
		if !res.Changed {
			break
		}
	}
	return results, nil
}

// recordTransition is one compare-and-set of the crawl's state.
func (c *Controller) recordTransition(ctx context.Context, cj *trawlerv1.CrawlJob, t transition) (transitionResult, error) {
	extra := store.CrawlStateExtra{Stats: t.Stats}
	if t.Finished {
		f := c.clock.Now().UTC().Truncate(time.Second)
		extra.Finished = &f
		// The final stats come with the final state: no progress batch
		// may land after them.
		if err := c.progressStore.settle(ctx, cj.Spec.ID); err != nil {
			return transitionResult{}, err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
	changed, cur, err := c.store.SetCrawlState(sctx, cj.Spec.ID, t.To, t.From, extra)
	cancel()
	switch {
	case errors.Is(err, store.ErrNotFound):
		// The crawl was deleted under us: nothing left to run it for.
		c.recorder.Event(cj, corev1.EventTypeWarning, ReasonDocumentMissing, "crawl document missing; stopping the crawl")
		return transitionResult{State: store.StateCanceled}, nil
	case err != nil:
		return transitionResult{}, fmt.Errorf("setting crawl state %s: %w", t.To, err)
	case changed:
		return transitionResult{Changed: true, State: t.To, Finished: extra.Finished}, nil
	}
	return transitionResult{State: cur.State, Finished: cur.Finished}, nil
}

// reportTransitions logs and records an Event for a state change, and
// logs the pods of a crawl that just failed.
func (c *Controller) reportTransitions(cj *trawlerv1.CrawlJob, st trawlerv1.CrawlJobStatus, p plan, o observed) {
	prev := cj.Status.State
	if prev == "" {
		prev = store.StateStarting
	}
	if st.State != prev {
		c.log.Info("crawl state changed", "crawl", cj.Spec.ID, "from", prev, "to", st.State)
		c.recorder.Eventf(cj, corev1.EventTypeNormal, ReasonStateChanged, "%s -> %s", prev, st.State)
	}
	for i, res := range o.Answers {
		if res.Changed && p.Transitions[i].To == store.StateFailed {
			c.logFailedCrawl(cj, o.Crawlers, failureUnreported(st, o))
		}
	}
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
