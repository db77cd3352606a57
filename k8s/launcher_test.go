package k8s

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	trawlerfake "github.com/trawlerhq/trawler/k8s/generated/clientset/versioned/fake"
)

const testNS = "crawlers"

var testNow = time.Date(2026, 11, 30, 7, 0, 0, 123000000, time.UTC)

func newFakeLauncher() (*Launcher, *kubefake.Clientset, *trawlerfake.Clientset) {
	kube := kubefake.NewClientset()
	trawler := trawlerfake.NewSimpleClientset()
	l := NewLauncher(kube, trawler, testNS)
	l.clock = clocktesting.NewFakePassiveClock(testNow)
	return l, kube, trawler
}

func testRequest(id string) CrawlRequest {
	return CrawlRequest{
		Spec: trawlerv1.CrawlJobSpec{
			ID: id, CID: "cid-1", OID: "oid-1", UserID: "user-1", Scale: 2, Manual: true,
			StorageName: "default", StoragePath: "oid-1/", StoreFilename: "@ts.wacz",
		},
		ConfigJSON: []byte(`{"seeds":[{"url":"https://example.com/"}]}`),
	}
}

func TestLaunchCrawlCreatesConfigMapThenOwningCrawlJob(t *testing.T) {
	ctx := context.Background()
	l, kube, trawler := newFakeLauncher()
	// The operator may sync the CrawlJob the moment it exists, so the
	// ConfigMap must be there first.
	configMapFirst := false
	trawler.PrependReactor("create", "crawljobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		_, err := kube.CoreV1().ConfigMaps(testNS).Get(ctx, "crawl-config-c1", metav1.GetOptions{})
		configMapFirst = err == nil
		return false, nil, nil
	})
	if err := l.LaunchCrawl(ctx, testRequest("c1")); err != nil {
		t.Fatal(err)
	}
	if !configMapFirst {
		t.Error("crawl job created before its config map")
	}

	cm, err := kube.CoreV1().ConfigMaps(testNS).Get(ctx, "crawl-config-c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data[ConfigMapKey]; got != `{"seeds":[{"url":"https://example.com/"}]}` {
		t.Errorf("config = %q", got)
	}
	cj, err := trawler.TrawlerV1().CrawlJobs(testNS).Get(ctx, "crawljob-c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"crawl": "c1", "role": "job", "btrix.org": "oid-1",
		"btrix.user": "user-1", "btrix.crawlconfig": "cid-1"}
	for k, v := range wantLabels {
		if cj.Labels[k] != v {
			t.Errorf("crawljob label %s = %q, want %q", k, cj.Labels[k], v)
		}
	}
	if cm.Labels[LabelCrawl] != "c1" || cm.Labels[LabelRole] != "" {
		t.Errorf("config map labels = %v, want crawl=c1 and no role", cm.Labels)
	}
	if len(cj.Finalizers) != 1 || cj.Finalizers[0] != Finalizer {
		t.Errorf("finalizers = %v", cj.Finalizers)
	}
	if cj.Spec.ConfigMap != "crawl-config-c1" || cj.Spec.Scale != 2 || !cj.Spec.Manual {
		t.Errorf("spec = %+v", cj.Spec)
	}
	refs := cm.OwnerReferences
	if len(refs) != 1 || refs[0].Kind != "CrawlJob" || refs[0].APIVersion != "trawler.dev/v1" ||
		refs[0].Name != "crawljob-c1" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references = %+v", refs)
	}

}

func TestLaunchCrawlTwiceIsFine(t *testing.T) {
	ctx := context.Background()
	l, _, trawler := newFakeLauncher()
	for range 2 {
		if err := l.LaunchCrawl(ctx, testRequest("c1")); err != nil {
			t.Fatal(err)
		}
	}
	list, err := trawler.TrawlerV1().CrawlJobs(testNS).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("crawljobs = %d, %v; want 1", len(list.Items), err)
	}
}

func TestLaunchCrawlRemovesConfigMapWhenCrawlJobFails(t *testing.T) {
	ctx := context.Background()
	l, kube, trawler := newFakeLauncher()
	trawler.PrependReactor("create", "crawljobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(trawlerv1.Resource("crawljobs"), "crawljob-c1", errors.New("no"))
	})
	err := l.LaunchCrawl(ctx, testRequest("c1"))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want the forbidden error wrapped", err)
	}
	_, err = kube.CoreV1().ConfigMaps(testNS).Get(ctx, "crawl-config-c1", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("config map left behind: %v", err)
	}
}

func TestLaunchCrawlNeedsID(t *testing.T) {
	l, _, _ := newFakeLauncher()
	if err := l.LaunchCrawl(context.Background(), testRequest("")); err == nil {
		t.Fatal("launch with empty id succeeded")
	}
}

func TestCrawlJobPatches(t *testing.T) {
	ctx := context.Background()
	l, kube, trawler := newFakeLauncher()
	if err := l.LaunchCrawl(ctx, testRequest("c1")); err != nil {
		t.Fatal(err)
	}
	if err := l.StopCrawl(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if err := l.ScaleCrawl(ctx, "c1", 3); err != nil {
		t.Fatal(err)
	}
	if err := l.RestartCrawl(ctx, "c1", []byte(`{"seeds":[]}`)); err != nil {
		t.Fatal(err)
	}
	cj, err := trawler.TrawlerV1().CrawlJobs(testNS).Get(ctx, "crawljob-c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !cj.Spec.Stopping || cj.Spec.Scale != 3 || cj.Spec.RestartTime != "2026-11-30T07:00:00.123Z" {
		t.Errorf("spec = %+v", cj.Spec)
	}
	if cj.Spec.OID != "oid-1" || cj.Spec.ConfigMap != "crawl-config-c1" {
		t.Errorf("patches changed other fields: %+v", cj.Spec)
	}
	cm, err := kube.CoreV1().ConfigMaps(testNS).Get(ctx, "crawl-config-c1", metav1.GetOptions{})
	if err != nil || cm.Data[ConfigMapKey] != `{"seeds":[]}` {
		t.Errorf("config map after restart = %v, %v", cm.Data, err)
	}
	if len(cm.OwnerReferences) != 1 {
		t.Errorf("restart lost the owner reference: %+v", cm.OwnerReferences)
	}

	if err := l.CancelCrawl(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	del := trawler.Actions()[len(trawler.Actions())-1].(k8stesting.DeleteAction)
	if p := del.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
		t.Errorf("propagation = %v, want Background", p)
	}
}

func TestMissingCrawlJobErrors(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newFakeLauncher()
	for name, call := range map[string]func() error{
		"stop":    func() error { return l.StopCrawl(ctx, "gone") },
		"scale":   func() error { return l.ScaleCrawl(ctx, "gone", 2) },
		"restart": func() error { return l.RestartCrawl(ctx, "gone", []byte(`{}`)) },
		"cancel":  func() error { return l.CancelCrawl(ctx, "gone") },
	} {
		if err := call(); !errors.Is(err, ErrCrawlJobNotFound) {
			t.Errorf("%s: err = %v, want ErrCrawlJobNotFound", name, err)
		}
	}
}

func TestProfileBrowserLifecycle(t *testing.T) {
	ctx := context.Background()
	l, _, trawler := newFakeLauncher()
	req := ProfileRequest{
		Spec:          trawlerv1.ProfileJobSpec{ID: "prf-0123456789", OID: "oid-1", UserID: "user-1", StartURL: "https://example.com/"},
		BaseProfileID: "profile-1",
	}
	if err := l.LaunchProfileBrowser(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := l.LaunchProfileBrowser(ctx, req); err != nil {
		t.Fatalf("second launch: %v", err)
	}
	pj, err := l.GetProfileBrowser(ctx, "prf-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"browser": "prf-0123456789", "role": "job", "btrix.profile": "1",
		"btrix.org": "oid-1", "btrix.user": "user-1", "btrix.baseprofile": "profile-1"}
	for k, v := range want {
		if pj.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pj.Labels[k], v)
		}
	}
	if pj.Spec.ExpireTime == nil || !pj.Spec.ExpireTime.Time.Equal(testNow.Add(ProfileBrowserTTL)) {
		t.Errorf("expireTime = %v, want launch + %v", pj.Spec.ExpireTime, ProfileBrowserTTL)
	}

	l.clock = clocktesting.NewFakePassiveClock(testNow.Add(time.Minute))
	if err := l.PingProfileBrowser(ctx, "prf-0123456789"); err != nil {
		t.Fatal(err)
	}
	pj, err = trawler.TrawlerV1().ProfileJobs(testNS).Get(ctx, "profilejob-prf-0123456789", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// metav1.Time has second precision on the wire.
	if want := testNow.Add(time.Minute + ProfileBrowserTTL).Truncate(time.Second); !pj.Spec.ExpireTime.Time.Equal(want) {
		t.Errorf("expireTime after ping = %v, want %v", pj.Spec.ExpireTime, want)
	}

	if err := l.DeleteProfileBrowser(ctx, "prf-0123456789"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"get":    func() error { _, err := l.GetProfileBrowser(ctx, "prf-0123456789"); return err }(),
		"ping":   l.PingProfileBrowser(ctx, "prf-0123456789"),
		"delete": l.DeleteProfileBrowser(ctx, "prf-0123456789"),
	} {
		if !errors.Is(err, ErrProfileJobNotFound) {
			t.Errorf("%s after delete: err = %v, want ErrProfileJobNotFound", name, err)
		}
	}
}

// The generated fake clientset is what the operator's sync tests are
// built on; its status subresource must work.
func TestFakeClientsetStatusUpdate(t *testing.T) {
	ctx := context.Background()
	cs := trawlerfake.NewSimpleClientset(&trawlerv1.CrawlJob{
		ObjectMeta: metav1.ObjectMeta{Name: "crawljob-c1", Namespace: testNS},
		Spec:       trawlerv1.CrawlJobSpec{ID: "c1", Scale: 1},
	})
	cj, err := cs.TrawlerV1().CrawlJobs(testNS).Get(ctx, "crawljob-c1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cj.Status.State = "running"
	cj.Status.Pods = map[string]trawlerv1.PodStatus{"0": {Phase: string(corev1.PodRunning)}}
	if _, err := cs.TrawlerV1().CrawlJobs(testNS).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.TrawlerV1().CrawlJobs(testNS).Get(ctx, "crawljob-c1", metav1.GetOptions{})
	if err != nil || got.Status.State != "running" || got.Status.Pods["0"].Phase != "Running" {
		t.Fatalf("status = %+v, %v", got.Status, err)
	}
}

// Kubernetes refuses a ConfigMap over 1 MiB; the launcher says so before
// creating anything, in terms the API can map.
func TestLaunchRefusesAConfigTooLargeForAConfigMap(t *testing.T) {
	ctx := context.Background()
	l, kube, trawler := newFakeLauncher()
	req := testRequest("big")
	req.ConfigJSON = make([]byte, MaxConfigMapBytes)
	if err := l.LaunchCrawl(ctx, req); !errors.Is(err, ErrConfigTooLarge) {
		t.Fatalf("launch: %v, want ErrConfigTooLarge", err)
	}
	if err := l.RestartCrawl(ctx, "big", req.ConfigJSON); !errors.Is(err, ErrConfigTooLarge) {
		t.Fatalf("restart: %v, want ErrConfigTooLarge", err)
	}
	if len(kube.Actions()) != 0 || len(trawler.Actions()) != 0 {
		t.Fatalf("calls made: %v %v", kube.Actions(), trawler.Actions())
	}
	if err := CheckCrawlConfigSize(make([]byte, MaxConfigMapBytes-len(ConfigMapKey))); err != nil {
		t.Fatalf("a config that fits: %v", err)
	}
}
