package k8s

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestCrawlArgsMatchTheChart(t *testing.T) {
	args := CrawlArgs(CrawlArgsOptions{Workers: 2, HealthCheckPort: 6065, Extra: "--sim.pages 5"})
	// The same run of flags the chart renders (TestChartRendersWithHelm).
	for _, want := range []string{
		"--workers 2 --sizeLimit 10000000000 --timeLimit 18000 --maxPageLimit 0 --healthCheckPort 6065",
		"--diskUtilization 90 --logging stats,behaviors,debug --text false --generateWACZ",
		"--collection thecrawl --screencastPort 9037 --logErrorsToRedis --sim.pages 5 --restartsOnError",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("CRAWL_ARGS %q lacks %q", args, want)
		}
	}
	if !strings.HasSuffix(args, " --restartsOnError") {
		t.Errorf("CRAWL_ARGS %q must end with --restartsOnError", args)
	}
}

func TestEnsureCrawlerSupportIsIdempotent(t *testing.T) {
	kube := fake.NewClientset()
	s := CrawlerSupport{CrawlArgs: "--workers 1", StorageName: "default", Storage: map[string]string{"STORE_PATH": "x"}}
	for range 2 {
		if err := EnsureCrawlerSupport(context.Background(), kube, "crawlers", s); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := kube.CoreV1().ConfigMaps("crawlers").Get(context.Background(), SharedCrawlerConfigName, metav1.GetOptions{})
	if err != nil || cm.Data["CRAWL_ARGS"] != "--workers 1" {
		t.Fatalf("shared crawler config: %v, %v", cm, err)
	}
	for _, name := range []string{SharedRedisConfName} {
		if _, err := kube.CoreV1().ConfigMaps("crawlers").Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := kube.CoreV1().Secrets("crawlers").Get(context.Background(), "storage-default", metav1.GetOptions{}); err != nil {
		t.Errorf("storage secret: %v", err)
	}
}
