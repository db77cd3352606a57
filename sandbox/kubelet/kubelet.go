// Package kubelet is the sandbox's simulated kubelet. It registers fake
// Nodes with the real control plane, so the real kube-scheduler binds (and
// preempts) pods onto them, and drives the pods bound there through the
// real lifecycle via pods/status: Pending (ContainerCreating), Running,
// Succeeded or Failed, restarts under restartPolicy with a back-off, and
// graceful deletion. What a container runs is a Go Program picked by
// image. It also plays the PV controller: every PVC gets a PV backed by a
// local folder and both are Bound.
//
// Every pod gets its own loopback address (127.x.y.z), so programs can
// listen on their containers' real ports; Service names resolve to the
// ready pods behind them (DNS for programs in this process, Hosts for
// processes). HTTP and TCP readiness and liveness probes run against the
// pod's address.
//
// Not simulated: init containers, startup and exec probes, resource
// limits, image pulls, and the kubelet's HTTP endpoint. Without that
// endpoint the apiserver cannot serve pods/log, exec or port-forward; read
// container logs with Kubelet.Logs (or the files under Options.Dir/logs)
// instead.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Options configure a Kubelet. Zero values get the defaults noted.
type Options struct {
	// Dir holds PVC folders, pod volumes and container log files. Required.
	Dir string
	// Nodes are the nodes to register.
	Nodes Nodes
	// Programs maps images to programs (see Kubelet.Register).
	Programs map[string]Program
	// DNS is handed to programs as Container.Dial; default
	// NewDNS("cluster.local").
	DNS *DNS
	// Backoff paces container restarts; default 10s doubling up to 5m, as
	// the kubelet does. Tests use milliseconds.
	Backoff Backoff
	// Heartbeat is how often node leases and Ready conditions are renewed;
	// default 10s.
	Heartbeat time.Duration
	// StopGrace is how long Stop lets programs run after cancelling them
	// before it kills them; default 5s.
	StopGrace time.Duration
	// LogLimit is how many bytes of each container's log Logs keeps;
	// default 1 MiB.
	LogLimit int
	// APIServer is the apiserver's URL as pods reach it; when set, every
	// container gets KUBERNETES_SERVICE_HOST and _PORT pointing there, as
	// a kubelet gives them the kubernetes Service's address.
	APIServer string
	// Logger receives the kubelet's own log; default: discarded.
	Logger *slog.Logger
}

// Nodes describes the identical nodes a Kubelet registers.
type Nodes struct {
	Count  int               // default 1
	Prefix string            // names are Prefix + index; default "sandbox-node-"
	CPU    resource.Quantity // allocatable CPU; default 8
	Memory resource.Quantity // allocatable memory; default 32Gi
	Pods   int               // allocatable pods; default 110
	Labels map[string]string // extra node labels
}

// Backoff is the container restart delay: Initial·2^n, at most Max.
type Backoff struct {
	Initial, Max time.Duration
}

func (b Backoff) delay(n int) time.Duration {
	d := b.Initial
	for range n {
		if d >= b.Max/2 {
			return b.Max
		}
		d *= 2
	}
	return min(d, b.Max)
}

func (o *Options) setDefaults() error {
	if o.Dir == "" {
		return errors.New("kubelet: Options.Dir is required")
	}
	n := &o.Nodes
	n.Count = cmpOr(n.Count, 1)
	n.Prefix = cmpOr(n.Prefix, "sandbox-node-")
	n.Pods = cmpOr(n.Pods, 110)
	if n.CPU.IsZero() {
		n.CPU = resource.MustParse("8")
	}
	if n.Memory.IsZero() {
		n.Memory = resource.MustParse("32Gi")
	}
	if o.DNS == nil {
		o.DNS = NewDNS("cluster.local")
	}
	o.Backoff.Initial = cmpOr(o.Backoff.Initial, 10*time.Second)
	o.Backoff.Max = cmpOr(o.Backoff.Max, 5*time.Minute)
	o.Heartbeat = cmpOr(o.Heartbeat, 10*time.Second)
	o.StopGrace = cmpOr(o.StopGrace, 5*time.Second)
	o.LogLimit = cmpOr(o.LogLimit, 1<<20)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Kubelet is a running simulated kubelet.
type Kubelet struct {
	opts     Options
	client   kubernetes.Interface
	dns      *DNS
	log      *slog.Logger
	nodes    []string
	programs registry

	factory    informers.SharedInformerFactory
	pods       corelisters.PodLister
	claims     corelisters.PersistentVolumeClaimLister
	volumes    corelisters.PersistentVolumeLister
	services   corelisters.ServiceLister
	podQueue   workqueue.TypedRateLimitingInterface[string]
	claimQueue workqueue.TypedRateLimitingInterface[string]

	cancel  context.CancelFunc
	wg      sync.WaitGroup // informers, queue workers, heartbeat, pod workers
	running sync.WaitGroup // programs, which may outlive a killed container

	mu      sync.Mutex
	workers map[string]*podWorker // by pod key

	ipMu   sync.Mutex
	podIPs map[string]bool // in use by this kubelet's pods

	logMu   sync.Mutex
	logs    map[logKey]*containerLog
	retired []*containerLog // logs of deleted pods, oldest first
}

// claimWorkers bind PVCs in parallel; the queue never hands one key to two.
const claimWorkers = 8

// maxRetiredLogs bounds the logs kept for containers of deleted pods, so
// a long `trawler dev` session does not grow without end.
const maxRetiredLogs = 500

// Start registers the nodes, starts watching pods, PVCs and PVs, and
// returns once the caches are in sync. ctx bounds only the start; the
// kubelet runs until Stop.
func Start(ctx context.Context, client kubernetes.Interface, opts Options) (*Kubelet, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	k := &Kubelet{opts: opts, client: client, dns: opts.DNS, log: opts.Logger,
		workers: make(map[string]*podWorker), podIPs: make(map[string]bool), logs: make(map[logKey]*containerLog),
		podQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-pods"}),
		claimQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-claims"}),
	}
	for image, p := range opts.Programs {
		k.Register(image, p)
	}
	for i := range opts.Nodes.Count {
		k.nodes = append(k.nodes, fmt.Sprintf("%s%d", opts.Nodes.Prefix, i))
	}
	runCtx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	if err := k.start(ctx, runCtx); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

func (k *Kubelet) start(ctx, runCtx context.Context) error {
	for _, name := range k.nodes {
		if err := k.registerNode(ctx, name); err != nil {
			return err
		}
	}
	// Only pods bound to a node are the kubelet's business.
	podInformer := coreinformers.NewFilteredPodInformer(k.client, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		})
	factory := informers.NewSharedInformerFactory(k.client, 0)
	k.factory = factory
	claimInformer := factory.Core().V1().PersistentVolumeClaims()
	volumeInformer := factory.Core().V1().PersistentVolumes()
	serviceInformer := factory.Core().V1().Services()
	k.pods = corelisters.NewPodLister(podInformer.GetIndexer())
	k.claims, k.volumes = claimInformer.Lister(), volumeInformer.Lister()
	k.services = serviceInformer.Lister()
	k.dns.setServices(k.clusterAddr)
	touch := func(any) { k.dns.touch() }

	handlers := []struct {
		informer cache.SharedIndexInformer
		enqueue  func(any)
	}{
		{podInformer, func(obj any) { k.enqueuePod(obj); touch(obj) }},
		{claimInformer.Informer(), func(obj any) { enqueueKey(k.claimQueue, obj) }},
		{volumeInformer.Informer(), k.enqueueVolumeClaim},
		{serviceInformer.Informer(), touch},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    h.enqueue,
			UpdateFunc: func(_, obj any) { h.enqueue(obj) },
			DeleteFunc: h.enqueue,
		}); err != nil {
			return fmt.Errorf("adding event handler: %w", err)
		}
	}
	k.wg.Go(func() { podInformer.Run(runCtx.Done()) })
	factory.Start(runCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, claimInformer.Informer().HasSynced,
		volumeInformer.Informer().HasSynced, serviceInformer.Informer().HasSynced) {
		return fmt.Errorf("kubelet: waiting for caches: %w", ctx.Err())
	}
	// Binding a PVC takes four API writes; one worker binds a scale test's
	// 20,000 PVCs in half an hour on 2 cores, and pods wait for them.
	for range claimWorkers {
		k.wg.Go(func() { k.runQueue(runCtx, k.claimQueue, k.syncClaim) })
	}
	for range 2 {
		k.wg.Go(func() { k.runQueue(runCtx, k.podQueue, k.syncPod) })
	}
	k.wg.Go(func() { k.heartbeat(runCtx) })
	return nil
}

// Stop stops every program (cancel, then kill after StopGrace) and the
// kubelet's loops. It writes nothing to the API and leaves the nodes
// registered, like a kubelet that stops.
func (k *Kubelet) Stop() {
	k.cancel()
	k.podQueue.ShutDown()
	k.claimQueue.ShutDown()
	k.wg.Wait()
	if k.factory != nil {
		k.factory.Shutdown()
	}
	done := make(chan struct{})
	go func() { k.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(k.opts.StopGrace):
		k.log.Warn("programs still running after being killed; they ignore Container.Killed")
	}
}

// Register sets the program for an image (see Program). It may be called
// at any time; containers that start afterwards use it.
func (k *Kubelet) Register(image string, p Program) { k.programs.register(image, p) }

// DNS is the registry behind Container.Dial.
func (k *Kubelet) DNS() *DNS { return k.dns }

// NodeNames lists the nodes this kubelet registered.
func (k *Kubelet) NodeNames() []string { return slices.Clone(k.nodes) }

// Logs returns the kept tail of a container's log (all its restarts in
// the current or last pod of that name), or "" if there is none. The
// apiserver cannot serve pods/log because the sandbox has no kubelet
// endpoint; this is the way to read logs in tests.
func (k *Kubelet) Logs(namespace, pod, container string) string {
	k.logMu.Lock()
	l := k.logs[logKey{namespace, pod, container}]
	k.logMu.Unlock()
	if l == nil {
		return ""
	}
	return l.String()
}

// PodLogs returns the last tail lines of a container's log (all of it when
// tail <= 0), as the pods/log API's tailLines does. It lets the operator
// read logs from this kubelet, which serves no pods/log endpoint.
func (k *Kubelet) PodLogs(_ context.Context, namespace, pod, container string, tail int64) (string, error) {
	lines := strings.SplitAfter(k.Logs(namespace, pod, container), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the text after the last newline
	}
	if tail > 0 && int64(len(lines)) > tail {
		lines = lines[int64(len(lines))-tail:]
	}
	return strings.Join(lines, ""), nil
}

// containerLog returns the log of a container of pod, starting a new one
// for a new pod UID.
func (k *Kubelet) containerLog(pod *corev1.Pod, container string) *containerLog {
	k.logMu.Lock()
	defer k.logMu.Unlock()
	key := logKey{pod.Namespace, pod.Name, container}
	if l := k.logs[key]; l != nil && l.uid == string(pod.UID) {
		return l
	}
	dir := filepath.Join(k.opts.Dir, "logs", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
	l := &containerLog{key: key, uid: string(pod.UID), max: k.opts.LogLimit, path: filepath.Join(dir, container+".log"),
		warn: func(err error) { k.log.Warn("opening container log file", "err", err) }}
	k.logs[key] = l
	return l
}

// retireLogs notes the logs of a deleted pod and forgets the oldest such
// logs beyond maxRetiredLogs.
func (k *Kubelet) retireLogs(logs []*containerLog) {
	k.logMu.Lock()
	defer k.logMu.Unlock()
	k.retired = append(k.retired, logs...)
	for len(k.retired) > maxRetiredLogs {
		l := k.retired[0]
		k.retired = k.retired[1:]
		if k.logs[l.key] == l {
			delete(k.logs, l.key)
		}
	}
}

// syncPod reconciles one pod key: it starts a worker for a new pod bound
// here, tells it when the pod is being deleted, and stops it when the
// object is gone. All the work happens in the worker.
func (k *Kubelet) syncPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.workers[key]
	if old := w; old != nil && (pod == nil || pod.UID != old.uid) {
		old.vanish()
		delete(k.workers, key)
		k.wg.Go(func() {
			<-old.done
			k.releasePodIP(old.ip)
			if err := os.RemoveAll(k.podDir(old.uid)); err != nil {
				k.log.Warn("removing pod folder", "err", err)
			}
			k.retireLogs(old.logs)
		})
		w = nil
	}
	if pod == nil || !slices.Contains(k.nodes, pod.Spec.NodeName) || ctx.Err() != nil {
		return nil
	}
	if w == nil {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return nil
		}
		w = newPodWorker(k, pod)
		k.workers[key] = w
		k.wg.Go(func() { w.run(ctx) })
	}
	if pod.DeletionTimestamp != nil {
		var grace time.Duration
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		w.terminate(time.Now().Add(grace))
	}
	return nil
}

// runProgram runs p and returns its exit code, or exitKilled as soon as
// killed closes. A panicking program exits 2, like a Go binary.
func (k *Kubelet) runProgram(ctx context.Context, killed <-chan struct{}, p Program, c *Container) int {
	result := make(chan int, 1)
	k.running.Go(func() {
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(c.Stdout, "panic: %v\n", r)
				k.log.Error("program panicked", "pod", c.Pod.Namespace+"/"+c.Pod.Name, "container", c.Name, "panic", r)
				result <- 2
			}
		}()
		result <- p(ctx, c)
	})
	select {
	case code := <-result:
		return code
	case <-killed:
		return exitKilled
	}
}

func (k *Kubelet) runQueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		if err := sync(ctx, key); err != nil {
			k.log.Warn("sync failed, will retry", "key", key, "err", err)
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

func (k *Kubelet) enqueuePod(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok && !slices.Contains(k.nodes, pod.Spec.NodeName) {
		return
	}
	enqueueKey(k.podQueue, obj)
}

// enqueueVolumeClaim enqueues the PVC a provisioned PV belongs to, so a
// PV whose PVC is gone gets deleted even if the PVC's event was missed.
func (k *Kubelet) enqueueVolumeClaim(obj any) {
	if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
		k.claimQueue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
	}
}

func enqueueKey(q workqueue.TypedRateLimitingInterface[string], obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		q.Add(key)
	}
}

func (k *Kubelet) podDir(uid types.UID) string { return filepath.Join(k.opts.Dir, "pods", string(uid)) }

// VolumeDir is the local folder behind a PersistentVolume the kubelet
// provisioned, where tests can look at what a pod stored.
func (k *Kubelet) VolumeDir(pv string) string { return filepath.Join(k.opts.Dir, "volumes", pv) }
