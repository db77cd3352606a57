package kubelet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// containerRun is one run of a container: its context is the SIGTERM and
// killed the SIGKILL, either for the whole pod (deletion) or for this run
// alone (a failed liveness probe).
type containerRun struct {
	ctx     context.Context
	stop    context.CancelFunc
	killed  chan struct{}
	kill    func()
	done    chan struct{}
	failed  atomic.Bool // the liveness probe failed
	endOnce sync.Once
}

func newContainerRun(ctx context.Context, podKilled <-chan struct{}) *containerRun {
	r := &containerRun{killed: make(chan struct{}), done: make(chan struct{})}
	r.ctx, r.stop = context.WithCancel(ctx)
	var once sync.Once
	r.kill = func() { once.Do(func() { close(r.killed) }) }
	go func() {
		select {
		case <-podKilled:
			r.kill()
		case <-r.done:
		}
	}()
	return r
}

// end releases the run's resources once its program returned.
func (r *containerRun) end() {
	r.endOnce.Do(func() {
		r.stop()
		close(r.done)
	})
}

func (r *containerRun) unhealthy() bool { return r.failed.Load() }

// restart stops the run as the kubelet does for a failed liveness probe:
// SIGTERM, then SIGKILL after the pod's grace period.
func (r *containerRun) restart(grace time.Duration) {
	r.failed.Store(true)
	r.stop()
	go func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			r.kill()
		case <-r.done:
		}
	}()
}

// startProbes runs container i's readiness and liveness probes during run
// and returns a function that stops them and waits until they stopped, so
// no probe result lands after the container exited.
func (w *podWorker) startProbes(run *containerRun, i int) (stop func()) {
	spec := &w.spec.Spec.Containers[i]
	ctx, cancel := context.WithCancel(run.ctx)
	var wg sync.WaitGroup
	if p := spec.ReadinessProbe; p != nil {
		wg.Go(func() {
			w.probeLoop(ctx, spec, p, false, func(ok bool) {
				w.update(i, func(s *corev1.ContainerStatus) {
					if s.State.Running != nil {
						s.Ready = ok
					}
				})
			})
		})
	}
	if p := spec.LivenessProbe; p != nil {
		wg.Go(func() {
			w.probeLoop(ctx, spec, p, true, func(ok bool) {
				if !ok {
					w.log.Info("liveness probe failed; restarting container", "container", spec.Name)
					run.restart(w.gracePeriod())
					cancel()
				}
			})
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// probeLoop probes every period after the initial delay and reports each
// change of the outcome, from initial, once the success or failure
// threshold is reached, as the kubelet's prober does.
func (w *podWorker) probeLoop(ctx context.Context, c *corev1.Container, p *corev1.Probe, initial bool, report func(ok bool)) {
	period := seconds(p.PeriodSeconds, 10)
	timeout := seconds(p.TimeoutSeconds, 1)
	threshold := map[bool]int{true: int(max(p.SuccessThreshold, 1)), false: int(max(p.FailureThreshold, 3))}
	if !sleep(ctx, time.Duration(p.InitialDelaySeconds)*time.Second) {
		return
	}
	state, streak := initial, 0
	for {
		err := w.probeOnce(ctx, c, p, timeout)
		if ctx.Err() != nil {
			return
		}
		if ok := err == nil; ok == state {
			streak = 0
		} else if streak++; streak >= threshold[ok] {
			if err != nil {
				w.log.Info("probe failed", "container", c.Name, "err", err)
			}
			state, streak = ok, 0
			report(ok)
		}
		if !sleep(ctx, period) {
			return
		}
	}
}

// probeOnce runs one HTTP GET or TCP probe against the pod's address.
// Exec and gRPC probes are not simulated: they always succeed.
func (w *podWorker) probeOnce(ctx context.Context, c *corev1.Container, p *corev1.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		port, err := containerPort(c, g.Port)
		if err != nil {
			return err
		}
		host := g.Host
		if host == "" {
			host = w.ip
		}
		scheme := strings.ToLower(string(g.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		path := g.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path), nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		req.Header.Set("User-Agent", "kube-probe/1.35")
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := containerPort(c, p.TCPSocket.Port)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(w.ip, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return nil
}

// probeClient does not follow redirects beyond the kubelet's rules and
// keeps no connections, like the kubelet's prober.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// containerPort resolves a probe's port: a number or a container port name.
func containerPort(c *corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, port.StrVal)
}

func seconds(n, def int32) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

// gracePeriod is the pod's terminationGracePeriodSeconds (default 30).
func (w *podWorker) gracePeriod() time.Duration {
	if g := w.spec.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}
