package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// exitKilled is the exit code of a container killed after its grace
// period: 128 + SIGKILL.
const exitKilled = 137

// retryInterval paces retries of failed API writes and of container
// configs that cannot be built yet (a missing ConfigMap, say).
const retryInterval = time.Second

// podWorker owns one pod (one UID) from its first sight to its deletion:
// it runs the containers, writes pods/status, and removes the object once
// the containers have stopped after a delete. syncPod only signals it.
type podWorker struct {
	k    *Kubelet
	uid  types.UID
	ip   string      // the pod's address
	spec *corev1.Pod // the pod when first seen; a pod's spec does not change
	logs []*containerLog
	log  *slog.Logger

	wake chan struct{} // capacity 1: something below changed
	done chan struct{} // closed when run returns

	mu     sync.Mutex
	state  podState
	dirty  bool      // state not yet written to the API
	killAt time.Time // zero until the pod is being deleted
	gone   bool      // the pod object no longer exists
}

func newPodWorker(k *Kubelet, pod *corev1.Pod) *podWorker {
	w := &podWorker{k: k, uid: pod.UID, ip: k.allocatePodIP(), spec: pod.DeepCopy(),
		log:  k.log.With("pod", pod.Namespace+"/"+pod.Name),
		wake: make(chan struct{}, 1), done: make(chan struct{}), dirty: true}
	w.state.startTime = now()
	w.state.podIP = w.ip
	for _, c := range pod.Spec.Containers {
		w.logs = append(w.logs, k.containerLog(pod, c.Name))
		w.state.containers = append(w.state.containers, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		})
	}
	return w
}

// terminate starts or shortens the grace period: the programs' contexts
// are cancelled now and Killed closes at deadline.
func (w *podWorker) terminate(deadline time.Time) {
	w.mu.Lock()
	if w.killAt.IsZero() || deadline.Before(w.killAt) {
		w.killAt = deadline
	}
	w.mu.Unlock()
	w.poke()
}

// vanish tells the worker its pod was removed behind its back (a forced
// delete): stop everything at once and write nothing.
func (w *podWorker) vanish() {
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	w.poke()
}

func (w *podWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *podWorker) update(i int, f func(*corev1.ContainerStatus)) {
	w.mu.Lock()
	f(&w.state.containers[i])
	w.dirty = true
	w.mu.Unlock()
	w.poke()
}

// run drives the pod until it is gone or the kubelet stops (ctx).
func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	// Cancelling runCtx is the SIGTERM; closing killed the SIGKILL.
	runCtx, sigterm := context.WithCancel(ctx)
	killed := make(chan struct{})
	var killOnce sync.Once
	kill := func() { killOnce.Do(func() { close(killed) }) }

	var containers sync.WaitGroup
	for i := range w.spec.Spec.Containers {
		containers.Go(func() { w.runContainer(runCtx, killed, i) })
	}
	stopped := make(chan struct{})
	go func() { containers.Wait(); close(stopped) }()
	// However the worker ends, its containers end first; a killed
	// container does not wait for its program.
	defer func() {
		sigterm()
		kill()
		<-stopped
		for _, l := range w.logs {
			l.close()
		}
	}()

	killTimer := time.NewTimer(time.Hour)
	killTimer.Stop()
	defer killTimer.Stop()
	var retry <-chan time.Time
	var armed time.Time
	running := stopped // nil once the containers stopped
	for {
		select {
		case <-w.wake:
		case <-retry:
			retry = nil
		case <-killTimer.C:
			kill()
		case <-running:
			running = nil
			w.mu.Lock()
			w.state.final, w.dirty = true, true
			w.mu.Unlock()
		case <-ctx.Done():
			// The kubelet stops: the programs got their SIGTERM through
			// ctx and get StopGrace; nothing is written to the API, which
			// may be stopping too.
			select {
			case <-stopped:
			case <-time.After(w.k.opts.StopGrace):
			}
			return
		}

		w.mu.Lock()
		gone, killAt, dirty, final := w.gone, w.killAt, w.dirty, w.state.final
		w.mu.Unlock()
		if gone {
			return
		}
		if !killAt.IsZero() && !killAt.Equal(armed) {
			sigterm()
			killTimer.Reset(time.Until(killAt))
			armed = killAt
		}
		if dirty {
			if err := w.writeStatus(ctx); err != nil {
				w.log.Warn("writing pod status", "err", err)
				retry = time.After(retryInterval)
				continue
			}
		}
		if final && !killAt.IsZero() {
			if err := w.deletePod(ctx); err != nil {
				w.log.Warn("deleting pod", "err", err)
				retry = time.After(retryInterval)
				continue
			}
			return
		}
	}
}

// runContainer runs container i, restarting it as the pod's restartPolicy
// says, until it is final or ctx is cancelled.
func (w *podWorker) runContainer(ctx context.Context, killed <-chan struct{}, i int) {
	policy := w.spec.Spec.RestartPolicy
	spec := &w.spec.Spec.Containers[i]
	name := spec.Name
	for restarts, exp := 0, 0; ; {
		run := newContainerRun(ctx, killed)
		c, reason, err := w.container(ctx, i, restarts, run.killed)
		if err != nil {
			run.end()
			w.log.Info("container cannot start yet", "container", name, "reason", reason, "err", err)
			w.update(i, func(s *corev1.ContainerStatus) {
				s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: reason, Message: err.Error()}}
			})
			if !sleep(ctx, retryInterval) {
				return
			}
			continue
		}
		started := now()
		w.update(i, func(s *corev1.ContainerStatus) {
			s.RestartCount = int32(restarts)
			s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
			s.Ready, s.Started = spec.ReadinessProbe == nil, new(true)
			s.ImageID = "sandbox://" + s.Image
			s.ContainerID = fmt.Sprintf("sandbox://%s-%s-%d", w.uid, name, restarts)
		})
		stopProbes := w.startProbes(run, i)
		code := w.k.runProgram(run.ctx, run.killed, w.k.programs.lookup(c.Image), c)
		stopProbes()
		run.end()
		w.log.Info("container exited", "container", name, "code", code, "restarts", restarts)
		w.update(i, func(s *corev1.ContainerStatus) {
			s.State = terminatedState(code, started, now())
			s.Ready, s.Started = false, new(false)
		})
		if ctx.Err() != nil || !(restartable(policy, code) || (run.unhealthy() && policy != corev1.RestartPolicyNever)) {
			return
		}
		// Like the kubelet, forget old crashes once a run lasted long.
		if time.Since(started.Time) > 2*w.k.opts.Backoff.Max {
			exp = 0
		}
		delay := w.k.opts.Backoff.delay(exp)
		w.update(i, func(s *corev1.ContainerStatus) {
			s.LastTerminationState = s.State
			s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s", delay, name)}}
		})
		if !sleep(ctx, delay) {
			// Deleted while backing off: report the last run as the final state.
			w.update(i, func(s *corev1.ContainerStatus) {
				s.State, s.LastTerminationState = s.LastTerminationState, corev1.ContainerState{}
			})
			return
		}
		restarts++
		exp++
	}
}

// restartable tells whether a container that exited with code runs again.
func restartable(policy corev1.RestartPolicy, code int) bool {
	return policy == corev1.RestartPolicyAlways || policy == "" ||
		(policy == corev1.RestartPolicyOnFailure && code != 0)
}

// container builds run number restarts of container i: env, volumes and
// args are resolved afresh each time, as the kubelet does per container.
// On error, reason is the waiting reason the kubelet shows: volumes that
// cannot be mounted keep a container in ContainerCreating, a bad env
// gives CreateContainerConfigError.
func (w *podWorker) container(ctx context.Context, i, restarts int, killed <-chan struct{}) (c *Container, reason string, err error) {
	// Programs get their own copy: the lister's objects are shared.
	pod := w.spec
	if cur, err := w.k.pods.Pods(pod.Namespace).Get(pod.Name); err == nil && cur.UID == w.uid {
		pod = cur
	}
	pod = pod.DeepCopy()
	spec := &pod.Spec.Containers[i]
	env, err := containerEnv(ctx, w.k.client, pod, spec, w.ip, w.k.opts.APIServer)
	if err != nil {
		return nil, "CreateContainerConfigError", err
	}
	volumes, err := w.k.podVolumes(ctx, pod, w.ip)
	if err != nil {
		return nil, "ContainerCreating", err
	}
	mounts, err := containerMounts(spec, volumes, env)
	if err != nil {
		return nil, "ContainerCreating", err
	}
	expandAll := func(in []string) []string {
		var out []string
		for _, a := range in {
			out = append(out, expand(a, env))
		}
		return out
	}
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	dir := filepath.Join(w.k.podDir(pod.UID), "containers", fmt.Sprintf("%s-%d", spec.Name, restarts))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "ContainerCreating", fmt.Errorf("creating container folder: %w", err)
	}
	return &Container{Pod: pod, Name: spec.Name, Image: spec.Image,
		Args:    append(expandAll(spec.Command), expandAll(spec.Args)...),
		Command: expandAll(spec.Command), CommandArgs: expandAll(spec.Args), Env: env,
		Hostname: hostname, PodIP: w.ip, Mounts: mounts, Dir: dir, Stdout: w.logs[i], Restarts: restarts,
		Dial: w.k.dns.Dial, Hosts: func() ([]byte, <-chan struct{}) {
			changed := w.k.dns.Changed()
			return w.k.Hosts(pod.Namespace, hostname, w.ip), changed
		}, Killed: killed}, "", nil
}

// writeStatus merges the worker's state into the pod's status in the API.
func (w *podWorker) writeStatus(ctx context.Context) error {
	w.mu.Lock()
	st := podState{podIP: w.state.podIP, startTime: w.state.startTime, final: w.state.final,
		containers: make([]corev1.ContainerStatus, len(w.state.containers))}
	for i := range w.state.containers {
		w.state.containers[i].DeepCopyInto(&st.containers[i])
	}
	w.dirty = false
	w.mu.Unlock()

	pods := w.k.client.CoreV1().Pods(w.spec.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		pod, err := pods.Get(ctx, w.spec.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && pod.UID != w.uid) {
			return nil
		}
		if err != nil {
			return err
		}
		status := podStatus(pod.Status, st, now())
		if equality.Semantic.DeepEqual(status, pod.Status) {
			return nil
		}
		pod.Status = status
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		w.mu.Lock()
		w.dirty = true
		w.mu.Unlock()
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}

// deletePod removes the pod object once its containers stopped, as the
// kubelet's status manager does: grace period 0, only this UID.
func (w *podWorker) deletePod(ctx context.Context) error {
	err := w.k.client.CoreV1().Pods(w.spec.Namespace).Delete(ctx, w.spec.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &w.uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// now is the current time at the precision the API stores, so statuses
// compare equal after a round trip.
func now() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

// sleep waits for d and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
