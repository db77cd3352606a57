package k8s_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/k8s/generated/informers/externalversions"
	"github.com/trawlerhq/trawler/sandbox"
)

// One control plane serves every test of the package: starting one costs
// seconds, and each test works in its own namespace.
var shared struct {
	once    sync.Once
	dir     string
	cluster *sandbox.Cluster
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cluster != nil {
		shared.cluster.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// env is what a test needs from the cluster, with the CRDs installed.
type env struct {
	cfg     *rest.Config
	kube    kubernetes.Interface
	trawler versioned.Interface
	ns      string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "k8s-test-")
		if shared.err != nil {
			return
		}
		shared.cluster, shared.err = sandbox.StartCluster(ctx, shared.dir, sandbox.ClusterOptions{})
		if shared.err == nil {
			shared.err = k8s.InstallCRDs(ctx, shared.cluster.Config)
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the control plane: %v", shared.err)
	}
	cfg := rest.CopyConfig(shared.cluster.Config)
	e := &env{cfg: cfg, kube: kubernetes.NewForConfigOrDie(cfg), trawler: versioned.NewForConfigOrDie(cfg)}
	ns, err := e.kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.ns = ns.Name
	return e
}

func request(id string) k8s.CrawlRequest {
	return k8s.CrawlRequest{
		Spec: trawlerv1.CrawlJobSpec{ID: id, CID: "cid-1", OID: "oid-1", UserID: "user-1",
			Scale: 1, Manual: true, StorageName: "default"},
		ConfigJSON: []byte(`{"seeds":[{"url":"https://example.com/"}]}`),
	}
}

func TestInstallCRDs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Again, as a second replica or a restart would: an update, not an error.
	if err := k8s.InstallCRDs(ctx, e.cfg); err != nil {
		t.Fatal(err)
	}
	ext := apiextensionsclient.NewForConfigOrDie(e.cfg)
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "crawljobs.trawler.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil || v.Subresources.Scale == nil ||
		v.Subresources.Scale.SpecReplicasPath != ".spec.scale" {
		t.Errorf("subresources = %+v", v.Subresources)
	}
	if !slices.Contains(crd.Spec.Names.ShortNames, "cjs") {
		t.Errorf("short names = %v", crd.Spec.Names.ShortNames)
	}
	established := false
	for _, c := range crd.Status.Conditions {
		established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
	}
	if !established {
		t.Errorf("conditions = %+v", crd.Status.Conditions)
	}
}

// kubectl get crawljobs asks for a Table; the printer columns must resolve
// against a real object.
func TestCrawlJobTableColumns(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := k8s.NewLauncher(e.kube, e.trawler, e.ns)
	if err := l.LaunchCrawl(ctx, request("table")); err != nil {
		t.Fatal(err)
	}
	cjs := e.trawler.TrawlerV1().CrawlJobs(e.ns)
	cj, err := cjs.Get(ctx, k8s.CrawlJobName("table"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cj.Status = trawlerv1.CrawlJobStatus{State: "running", Scale: 1, PagesDone: 3, PagesFound: 10, SizeHuman: "1.2 MB"}
	if _, err := cjs.UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	raw, err := e.trawler.TrawlerV1().RESTClient().Get().Namespace(e.ns).Resource("crawljobs").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	want := []string{"Name", "State", "Scale", "Pages Done", "Pages Found", "Size", "Stopping", "Files Added", "Finished", "Age"}
	if !slices.Equal(names, want) {
		t.Errorf("columns = %q, want %q", names, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows = %d, want 1", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if cells[0] != "crawljob-table" || cells[1] != "running" || cells[2] != float64(1) ||
		cells[3] != float64(3) || cells[4] != float64(10) || cells[5] != "1.2 MB" {
		t.Errorf("row = %v", cells)
	}
}

// kubectl scale crawljob writes spec.scale through the scale subresource.
func TestCrawlJobScaleSubresource(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := k8s.NewLauncher(e.kube, e.trawler, e.ns).LaunchCrawl(ctx, request("scale")); err != nil {
		t.Fatal(err)
	}
	rc := e.trawler.TrawlerV1().RESTClient()
	var scale autoscalingv1.Scale
	if err := rc.Get().Namespace(e.ns).Resource("crawljobs").Name("crawljob-scale").SubResource("scale").
		Do(ctx).Into(&scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 1 {
		t.Errorf("scale.spec.replicas = %d, want 1", scale.Spec.Replicas)
	}
	scale.Spec.Replicas = 3
	body, _ := json.Marshal(scale)
	if err := rc.Put().Namespace(e.ns).Resource("crawljobs").Name("crawljob-scale").SubResource("scale").
		Body(body).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	cj, err := e.trawler.TrawlerV1().CrawlJobs(e.ns).Get(ctx, "crawljob-scale", metav1.GetOptions{})
	if err != nil || cj.Spec.Scale != 3 {
		t.Fatalf("spec.scale = %d, %v; want 3", cj.Spec.Scale, err)
	}
}

func TestCRDValidation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := k8s.NewLauncher(e.kube, e.trawler, e.ns)
	bad := request("Not_A_DNS_Label")
	if err := l.LaunchCrawl(ctx, bad); !apierrors.IsInvalid(err) {
		t.Errorf("launch with id %q: err = %v, want Invalid", bad.Spec.ID, err)
	}
	if err := l.LaunchCrawl(ctx, request("valid")); err != nil {
		t.Fatal(err)
	}
	if err := l.ScaleCrawl(ctx, "valid", 0); !apierrors.IsInvalid(err) {
		t.Errorf("scale 0: err = %v, want Invalid", err)
	}
}

func TestEnsurePriorityClasses(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for range 2 { // the second run finds them all
		if err := k8s.EnsurePriorityClasses(ctx, e.kube, 3); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		pc, err := e.kube.SchedulingV1().PriorityClasses().Get(ctx, k8s.PriorityClassName(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pc.Value != int32(-i) || pc.GlobalDefault || pc.Description == "" {
			t.Errorf("%s = value %d, global %v, %q", pc.Name, pc.Value, pc.GlobalDefault, pc.Description)
		}
	}
}

// waitFor polls cond for up to 30 s (garbage collection takes a few).
func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestLauncherCrawlLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := k8s.NewLauncher(e.kube, e.trawler, e.ns)
	cjs := e.trawler.TrawlerV1().CrawlJobs(e.ns)
	cms := e.kube.CoreV1().ConfigMaps(e.ns)

	for range 2 { // a retried launch completes, never fails
		if err := l.LaunchCrawl(ctx, request("life")); err != nil {
			t.Fatal(err)
		}
	}
	cj, err := cjs.Get(ctx, "crawljob-life", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"crawl": "life", "role": "job", "btrix.org": "oid-1",
		"btrix.user": "user-1", "btrix.crawlconfig": "cid-1"} {
		if cj.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cj.Labels[k], v)
		}
	}
	if !slices.Equal(cj.Finalizers, []string{k8s.Finalizer}) || cj.Spec.ConfigMap != "crawl-config-life" {
		t.Errorf("finalizers %v, configMap %q", cj.Finalizers, cj.Spec.ConfigMap)
	}
	cm, err := cms.Get(ctx, "crawl-config-life", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != cj.UID || ref.Kind != "CrawlJob" {
		t.Errorf("config map controller = %+v, want crawljob-life %s", ref, cj.UID)
	}

	if err := l.StopCrawl(ctx, "life"); err != nil {
		t.Fatal(err)
	}
	if err := l.ScaleCrawl(ctx, "life", 2); err != nil {
		t.Fatal(err)
	}
	if err := l.RestartCrawl(ctx, "life", []byte(`{"seeds":[]}`)); err != nil {
		t.Fatal(err)
	}
	cj, err = cjs.Get(ctx, "crawljob-life", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restart, err := time.Parse(time.RFC3339, cj.Spec.RestartTime)
	if !cj.Spec.Stopping || cj.Spec.Scale != 2 || err != nil || time.Since(restart) > time.Minute {
		t.Errorf("spec after patches = %+v (restartTime: %v)", cj.Spec, err)
	}
	if cm, err := cms.Get(ctx, "crawl-config-life", metav1.GetOptions{}); err != nil || cm.Data[k8s.ConfigMapKey] != `{"seeds":[]}` {
		t.Errorf("config after restart = %v, %v", cm.Data, err)
	}

	// The operator owns the status; the spec is not writable through it.
	cj.Status.State = "running"
	cj.Status.Scale = 2
	cj.Spec.Scale = 1
	if _, err := cjs.UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cj, err = cjs.Get(ctx, "crawljob-life", metav1.GetOptions{}); err != nil || cj.Status.State != "running" || cj.Spec.Scale != 2 {
		t.Fatalf("after status update: state %q, spec.scale %d, %v", cj.Status.State, cj.Spec.Scale, err)
	}

	if err := l.CancelCrawl(ctx, "life"); err != nil {
		t.Fatal(err)
	}
	// The finalizer holds the CrawlJob until the operator lets go.
	if cj, err = cjs.Get(ctx, "crawljob-life", metav1.GetOptions{}); err != nil || cj.DeletionTimestamp == nil {
		t.Fatalf("after cancel: %v, deletionTimestamp %v", err, cj.DeletionTimestamp)
	}
	if _, err := cjs.Patch(ctx, "crawljob-life", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the config map to be collected", func(ctx context.Context) (bool, error) {
		_, err := cms.Get(ctx, "crawl-config-life", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	for name, err := range map[string]error{
		"cancel":  l.CancelCrawl(ctx, "life"),
		"stop":    l.StopCrawl(ctx, "life"),
		"scale":   l.ScaleCrawl(ctx, "life", 1),
		"restart": l.RestartCrawl(ctx, "life", []byte(`{}`)),
	} {
		if !errors.Is(err, k8s.ErrCrawlJobNotFound) {
			t.Errorf("%s of a gone crawl: err = %v, want ErrCrawlJobNotFound", name, err)
		}
	}
}

func TestLauncherProfileBrowser(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := k8s.NewLauncher(e.kube, e.trawler, e.ns)
	req := k8s.ProfileRequest{Spec: trawlerv1.ProfileJobSpec{ID: "prf-0123456789", OID: "oid-1",
		UserID: "user-1", StartURL: "https://example.com/"}}
	if err := l.LaunchProfileBrowser(ctx, req); err != nil {
		t.Fatal(err)
	}
	first, err := l.GetProfileBrowser(ctx, "prf-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	if first.Labels[k8s.LabelBrowser] != "prf-0123456789" || first.Spec.ExpireTime == nil {
		t.Errorf("profile job = %+v", first)
	}
	if err := l.PingProfileBrowser(ctx, "prf-0123456789"); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteProfileBrowser(ctx, "prf-0123456789"); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteProfileBrowser(ctx, "prf-0123456789"); !errors.Is(err, k8s.ErrProfileJobNotFound) {
		t.Errorf("second delete: err = %v, want ErrProfileJobNotFound", err)
	}
}

// The operator's informer setup: namespaced, label-selected, list then
// watch.
func TestCrawlJobInformer(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := k8s.NewLauncher(e.kube, e.trawler, e.ns)
	if err := l.LaunchCrawl(ctx, request("listed")); err != nil {
		t.Fatal(err)
	}

	factory := externalversions.NewSharedInformerFactoryWithOptions(e.trawler, time.Minute,
		externalversions.WithNamespace(e.ns),
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = k8s.LabelRole + "=" + k8s.RoleJob }))
	informer := factory.Trawler().V1().CrawlJobs()
	events := make(chan string, 100)
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- "add " + obj.(*trawlerv1.CrawlJob).Name },
		UpdateFunc: func(old, obj any) {
			if cj := obj.(*trawlerv1.CrawlJob); cj.Spec.Stopping && !old.(*trawlerv1.CrawlJob).Spec.Stopping {
				events <- "stopping " + cj.Name
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			events <- "delete " + obj.(*trawlerv1.CrawlJob).Name
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	// Shutdown waits for the informers, which stop only once ctx is done.
	defer func() { cancel(); factory.Shutdown() }()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}

	expect := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event, want %q", want)
		}
	}
	expect("add crawljob-listed")
	if err := l.LaunchCrawl(ctx, request("watched")); err != nil {
		t.Fatal(err)
	}
	expect("add crawljob-watched")
	if err := l.StopCrawl(ctx, "watched"); err != nil {
		t.Fatal(err)
	}
	expect("stopping crawljob-watched")
	if err := l.CancelCrawl(ctx, "watched"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.trawler.TrawlerV1().CrawlJobs(e.ns).Patch(ctx, "crawljob-watched", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete crawljob-watched")

	got, err := informer.Lister().CrawlJobs(e.ns).Get("crawljob-listed")
	if err != nil || got.Spec.ID != "listed" {
		t.Fatalf("lister: %v, %v", got, err)
	}
	if all, err := informer.Lister().List(labels.Everything()); err != nil || len(all) != 1 {
		t.Fatalf("lister has %d crawl jobs, %v; want 1", len(all), err)
	}
}
