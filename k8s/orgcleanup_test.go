package k8s_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// TestDeleteOrgObjects deletes an org's CrawlJobs (with their
// finalizers: they go once the operator lets them), ProfileJobs,
// ConfigMaps and storage Secret on the real control plane, counting the
// jobs until none are left, and leaves another org's alone.
func TestDeleteOrgObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	l := k8s.NewLauncher(e.kube, e.trawler, e.ns)
	for _, id := range []string{"a", "b"} {
		if err := l.LaunchCrawl(ctx, request(id)); err != nil {
			t.Fatal(err)
		}
	}
	other := request("other")
	other.Spec.OID = "oid-2"
	if err := l.LaunchCrawl(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := l.LaunchProfileBrowser(ctx, k8s.ProfileRequest{Spec: trawlerv1.ProfileJobSpec{ID: "prf-0123456789", OID: "oid-1", UserID: "u", StartURL: "https://example.com/"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.ApplyStorageSecret(ctx, k8s.StorageSecretName("oid-1"), map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}

	left, err := l.DeleteOrgObjects(ctx, "oid-1")
	if err != nil || left != 3 {
		t.Fatalf("first call: %d left, %v; want 3 (two crawl jobs held by their finalizer, one profile job)", left, err)
	}
	cms, err := e.kube.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{LabelSelector: k8s.LabelOrg + "=oid-1"})
	if err != nil || len(cms.Items) != 0 {
		t.Errorf("the org's config maps: %d, %v", len(cms.Items), err)
	}
	if _, err := e.kube.CoreV1().Secrets(e.ns).Get(ctx, k8s.StorageSecretName("oid-1"), metav1.GetOptions{}); err == nil {
		t.Error("the org's storage secret remains")
	}
	// What the operator does once it tore a crawl down: it lets it go.
	for _, id := range []string{"a", "b"} {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := e.trawler.TrawlerV1().CrawlJobs(e.ns).Patch(ctx, k8s.CrawlJobName(id), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if left, err := l.DeleteOrgObjects(ctx, "oid-1"); err != nil || left != 0 {
		t.Fatalf("after the operator let go: %d left, %v", left, err)
	}
	if _, err := e.trawler.TrawlerV1().CrawlJobs(e.ns).Get(ctx, k8s.CrawlJobName("other"), metav1.GetOptions{}); err != nil {
		t.Errorf("the other org's crawl job: %v", err)
	}
	if _, err := e.kube.CoreV1().ConfigMaps(e.ns).Get(ctx, k8s.CrawlConfigMapName("other"), metav1.GetOptions{}); err != nil {
		t.Errorf("the other org's config map: %v", err)
	}
}
