package operator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
	"github.com/trawlerhq/trawler/store"
)

// One sandbox serves every integration test of the package; each test
// gets its own namespace, database and operator.
var shared struct {
	once    sync.Once
	env     *sandbox.Env
	storage s3.Config
	err     error
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChildOperator())
	}
	code := m.Run()
	if shared.env != nil {
		shared.env.Stop()
	}
	os.Exit(code)
}

// simTimeScale speeds the simulated crawler up: 100 ms pages take 20 ms.
const simTimeScale = 0.2

func sandboxEnv(t testing.TB) *sandbox.Env {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (sandbox) skipped in -short mode")
	}
	shared.once.Do(func() {
		ctx := context.Background()
		shared.env, shared.err = sandbox.Start(ctx, sandbox.Options{
			Programs: map[string]kubelet.Program{crawlersim.Image: crawlersim.Program(func(o *crawlersim.Options) {
				o.TimeScale = simTimeScale
			})},
			RestartBackoff: kubelet.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second},
			// Room for the scale benchmark's 10,000 crawls (a crawler and
			// a Redis pod each); 8 CPUs as usual.
			Nodes:                kubelet.Nodes{Pods: 25000},
			CRDs:                 k8s.CRDs(),
			CrawlPriorityClasses: 3,
			// Crawlers upload their WACZ files, as the real ones do.
			ObjectStorage: true,
		})
		if shared.err == nil {
			shared.storage, shared.err = shared.env.CreateBucket(ctx, "default", "btrix-data")
		}
	})
	if errors.Is(shared.err, sandbox.ErrBinaryMissing) {
		t.Skipf("sandbox binaries missing (run hack/setup-testenv.sh): %v", shared.err)
	}
	if shared.err != nil {
		t.Fatalf("starting sandbox: %v", shared.err)
	}
	return shared.env
}

// harness is one test's world: a namespace with the shared crawler config
// and storage secret, a database, clients, and operators it starts.
type harness struct {
	t       testing.TB
	env     *sandbox.Env
	ns      string
	kube    kubernetes.Interface
	trawler versioned.Interface
	store   *store.Mongo
	dbName  string
	launch  *k8s.Launcher
	org     uuid.UUID
	logs    *operator.SyncBuffer
}

// besideOthers marks a test that mostly waits on timers and touches
// nothing shared (node capacity, cordons, the Mongo or Redis server): it
// runs in parallel with the other such tests. `make test` also runs the
// top-level ones in a second process, beside the sequential ones
// (OPERATOR_SECOND in the Makefile): list a new one there too.
func besideOthers(t *testing.T) { t.Parallel() }

func newHarness(t testing.TB) *harness {
	t.Helper()
	env := sandboxEnv(t)
	ctx := context.Background()
	h := &harness{t: t, env: env, kube: env.Client, trawler: versioned.NewForConfigOrDie(env.Config()),
		org: uuid.New(), logs: &operator.SyncBuffer{}}
	ns, err := h.kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "op-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.ns = ns.Name
	t.Cleanup(func() {
		if t.Failed() {
			h.dump()
		}
		_ = h.kube.CoreV1().Namespaces().Delete(context.Background(), h.ns, metav1.DeleteOptions{})
	})
	args := k8s.CrawlArgsOptions{Workers: 2, HealthCheckPort: 6065}
	err = k8s.EnsureCrawlerSupport(ctx, h.kube, h.ns, k8s.CrawlerSupport{
		CrawlArgs:   k8s.CrawlArgs(args),
		CrawlArgsV1: k8s.CrawlArgsV1(args),
		StorageName: "default",
		Storage:     shared.storage.CrawlerEnv(),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.dbName = "op_" + strings.ReplaceAll(h.ns, "-", "_")
	h.store, err = store.Open(ctx, env.MongoURI(), h.dbName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.store.Close(context.Background()) })
	if err := h.store.CreateOrg(ctx, &store.Org{ID: h.org, Name: "org " + h.ns}); err != nil {
		t.Fatal(err)
	}
	h.launch = k8s.NewLauncher(h.kube, h.trawler, h.ns)
	return h
}

// config is the operator config tests start from: small pods, short
// grace, fast timers, and the one channel default, of the simulator,
// speaking the protocol sandbox.TestCrawlerProtocol chooses.
func (h *harness) config() operator.Config {
	cfg := operator.DefaultTestConfig()
	cfg.Namespace = h.ns
	cfg.CrawlerImage = crawlersim.Image
	cfg.CrawlerChannels = k8s.CrawlerChannels{{ID: k8s.DefaultChannel, Image: crawlersim.Image, Protocol: sandbox.TestCrawlerProtocol()}}
	cfg.RedisImage = sandbox.RedisImage
	cpu, mem := resource.MustParse("100m"), resource.MustParse("64Mi")
	cfg.CrawlerCPU, cfg.CrawlerMemory = &cpu, &mem
	cfg.RedisMemory = resource.MustParse("32Mi")
	cfg.TerminationGraceSeconds = 10
	cfg.RedisDialer = h.env.Dial
	cfg.StartingTimeout = 20 * time.Second
	cfg.LogFailedCrawlLines = 20
	return cfg
}

// runningOperator is a controller running until stop is called (or the
// test ends).
type runningOperator struct {
	*operator.Controller
	cancel context.CancelFunc
	done   chan struct{}
}

// stop cancels the controller and waits until it has stopped.
func (r *runningOperator) stop() {
	r.cancel()
	<-r.done
}

func (h *harness) startOperator(cfg operator.Config) *runningOperator {
	h.t.Helper()
	return h.startOperatorWith(cfg, h.deps())
}

// startOperatorWith runs a controller built from deps, for tests that
// wrap its clients.
func (h *harness) startOperatorWith(cfg operator.Config, deps operator.Deps) *runningOperator {
	h.t.Helper()
	c, err := operator.New(cfg, deps)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningOperator{Controller: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		c.Run(ctx)
	}()
	h.t.Cleanup(r.stop)
	return r
}

// deps gives the operator a metrics client too: the sandbox serves no
// metrics.k8s.io, so every test also shows that its absence is harmless.
func (h *harness) deps() operator.Deps {
	return operator.Deps{Kube: h.kube, Trawler: h.trawler, Store: h.store, Metrics: metricsclient.NewForConfigOrDie(h.env.Config()),
		Logs: h.env.Kubelet, Log: slog.New(slog.NewTextHandler(h.logs, nil))}
}

// crawlOpts shape a launched crawl.
type crawlOpts struct {
	scale  int32
	seed   string // seed URL; default a 20-page synthetic site
	limit  int
	config string // crawl config JSON, overrides seed/limit
	spec   func(*trawlerv1.CrawlJobSpec)
	// workflow stores the crawl's workflow too, for tests of its
	// last-crawl fields.
	workflow bool
}

// startCrawl inserts the crawl document and launches its CrawlJob as the
// API does. It returns the crawl id.
func (h *harness) startCrawl(o crawlOpts) string {
	h.t.Helper()
	ctx := context.Background()
	id := fmt.Sprintf("manual-%s-%s", time.Now().UTC().Format("20060102150405"), uuid.NewString()[:12])
	if o.scale == 0 {
		o.scale = 1
	}
	if o.seed == "" {
		o.seed = "https://example.com/?sim-pages=20"
	}
	if o.config == "" {
		o.config = fmt.Sprintf(`{"seeds":[{"url":%q}],"scopeType":"prefix","limit":%d}`, o.seed, o.limit)
	}
	cid := uuid.New()
	if o.workflow {
		h.addWorkflow(cid, o.seed)
	}
	crawl := &store.Crawl{ID: id, Type: store.TypeCrawl, OID: h.org, CID: cid, UserID: uuid.New(),
		Started: time.Now().UTC(), State: store.StateStarting, Scale: int(o.scale), Manual: true}
	if err := h.store.AddCrawl(ctx, crawl); err != nil {
		h.t.Fatal(err)
	}
	ttl := int32(1)
	spec := trawlerv1.CrawlJobSpec{ID: id, CID: cid.String(), OID: h.org.String(), UserID: crawl.UserID.String(),
		Scale: o.scale, Manual: true, StorageName: "default", StoragePath: h.org.String() + "/",
		StoreFilename: "@ts-testing-@hostsuffix.wacz", TTLSecondsAfterFinished: &ttl}
	if o.spec != nil {
		o.spec(&spec)
	}
	if err := h.launch.LaunchCrawl(ctx, k8s.CrawlRequest{Spec: spec, ConfigJSON: []byte(o.config)}); err != nil {
		h.t.Fatal(err)
	}
	return id
}

// addWorkflow stores workflow cid of the test's org.
func (h *harness) addWorkflow(cid uuid.UUID, seed string) {
	h.t.Helper()
	name, user, now := "workflow "+cid.String()[:8], uuid.New(), time.Now().UTC()
	wf := &store.CrawlConfig{ID: cid, OID: h.org, Name: &name, JobType: "custom",
		Config: store.RawCrawlConfig{Seeds: []store.Seed{{URL: seed}}, ScopeType: "prefix"},
		Tags:   []string{}, Scale: 1, AutoAddCollections: []uuid.UUID{},
		Created: now, CreatedBy: user, Modified: now, ModifiedBy: user}
	if err := h.store.CreateCrawlConfig(context.Background(), wf); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) job(id string) (*trawlerv1.CrawlJob, error) {
	return h.trawler.TrawlerV1().CrawlJobs(h.ns).Get(context.Background(), k8s.CrawlJobName(id), metav1.GetOptions{})
}

func (h *harness) crawl(id string) *store.Crawl {
	h.t.Helper()
	c, err := h.store.GetCrawlByID(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func (h *harness) waitFor(what string, timeout time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPagesDone waits until the CrawlJob's status counts at least n pages
// done, so a test acts on a crawl that is really under way.
func (h *harness) waitPagesDone(id string, n int64) {
	h.t.Helper()
	h.waitFor("pages done", 30*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && j.Status.PagesDone >= n
	})
}

// waitState waits until the crawl document reaches one of states.
func (h *harness) waitState(id string, timeout time.Duration, states ...string) string {
	h.t.Helper()
	var got string
	h.waitFor(fmt.Sprintf("crawl %s in %v", id, states), timeout, func() bool {
		c, err := h.store.GetCrawlByID(context.Background(), id)
		if err != nil {
			return false
		}
		got = c.State
		for _, s := range states {
			if c.State == s {
				return true
			}
		}
		return false
	})
	return got
}

// pods lists the crawl's pods by name.
func (h *harness) pods(id string) map[string]corev1.Pod {
	h.t.Helper()
	list, err := h.kube.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{LabelSelector: k8s.LabelCrawl + "=" + id})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out
}

func (h *harness) pvcs(id string) map[string]corev1.PersistentVolumeClaim {
	h.t.Helper()
	list, err := h.kube.CoreV1().PersistentVolumeClaims(h.ns).List(context.Background(), metav1.ListOptions{LabelSelector: k8s.LabelCrawl + "=" + id})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, p := range list.Items {
		out[p.Name] = p
	}
	return out
}

// gone reports whether the CrawlJob no longer exists.
func (h *harness) gone(id string) bool {
	_, err := h.job(id)
	return err != nil
}

// dump logs what a failed test left behind.
func (h *harness) dump() {
	ctx := context.Background()
	h.t.Logf("operator log:\n%s", h.logs.String())
	if jobs, err := h.trawler.TrawlerV1().CrawlJobs(h.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, j := range jobs.Items {
			h.t.Logf("crawljob %s status %+v", j.Name, j.Status)
		}
	}
	if pods, err := h.kube.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			h.t.Logf("pod %s phase %s node %q conditions %+v containers %+v", p.Name, p.Status.Phase, p.Spec.NodeName,
				p.Status.Conditions, p.Status.ContainerStatuses)
			for _, c := range p.Spec.Containers {
				log := h.env.Kubelet.Logs(h.ns, p.Name, c.Name)
				if len(log) > 3000 {
					log = log[len(log)-3000:]
				}
				h.t.Logf("log of %s/%s:\n%s", p.Name, c.Name, log)
			}
		}
	}
}
