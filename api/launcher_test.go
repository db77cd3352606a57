package api

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/sandbox"
)

// TestWithRealLauncher wires the API to k8s.Launcher on the sandbox's
// real kube-apiserver: starting, stopping, scaling, restarting (exclusion)
// and canceling a crawl show up on its CrawlJob and ConfigMap.
func TestWithRealLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx := context.Background()
	dir := t.TempDir()
	cluster, err := sandbox.StartCluster(ctx, dir, sandbox.ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()
	if err := k8s.InstallCRDs(ctx, cluster.Config); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cluster.Config)
	trawler := versioned.NewForConfigOrDie(cluster.Config)
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crawlers-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	e := newEnv(t)
	cfg := testConfig()
	cfg.CrawlerNamespace = ns.Name
	deps := e.deps()
	deps.Launcher = k8s.NewLauncher(kube, trawler, ns.Name)
	e.srv = New(cfg, deps)

	cid, id := e.startCrawl(asCrawler, "real")
	jobs := trawler.TrawlerV1().CrawlJobs(ns.Name)
	cj, err := jobs.Get(ctx, k8s.CrawlJobName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cj.Spec.ID != id || cj.Spec.CID != cid || cj.Spec.Scale != 1 || !cj.Spec.Manual || cj.Spec.StoragePath != e.org.String()+"/" {
		t.Fatalf("CrawlJob spec: %+v", cj.Spec)
	}
	cm, err := kube.CoreV1().ConfigMaps(ns.Name).Get(ctx, cj.Spec.ConfigMap, metav1.GetOptions{})
	if err != nil || cm.Data[k8s.ConfigMapKey] == "" {
		t.Fatalf("config map: %v %v", err, cm)
	}

	e.setState(id, "running")
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/scale"), map[string]any{"scale": 2}, 200)
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/exclusions?regex=/private/"), nil, 200)
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/stop"), nil, 200)
	cj, err = jobs.Get(ctx, k8s.CrawlJobName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cj.Spec.Scale != 2 || !cj.Spec.Stopping || cj.Spec.RestartTime == "" {
		t.Fatalf("CrawlJob after scale/exclusion/stop: %+v", cj.Spec)
	}
	cm, _ = kube.CoreV1().ConfigMaps(ns.Name).Get(ctx, cj.Spec.ConfigMap, metav1.GetOptions{})
	if got := cm.Data[k8s.ConfigMapKey]; !strings.Contains(got, `"exclude":["/private/"]`) {
		t.Fatalf("crawl config after exclusion: %s", got)
	}

	// Cancel deletes the CrawlJob (its finalizer holds it for the
	// operator); once it is gone, a cancel of the still-running document
	// marks it canceled.
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/cancel"), nil, 200)
	cj, err = jobs.Get(ctx, k8s.CrawlJobName(id), metav1.GetOptions{})
	if err != nil || cj.DeletionTimestamp == nil {
		t.Fatalf("CrawlJob not being deleted: %v %v", err, cj)
	}
	cj.Finalizers = nil
	if _, err := jobs.Update(ctx, cj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := jobs.Get(ctx, k8s.CrawlJobName(id), metav1.GetOptions{}); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("CrawlJob still there")
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/"+id+"/cancel"), nil, 200)
	if c := e.mustJSON(asViewer, "GET", e.orgPath("/crawls/"+id), nil, 200); c["state"] != "canceled" {
		t.Fatalf("crawl after its CrawlJob went: %v", c["state"])
	}
}
