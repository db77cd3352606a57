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

// TestCrawlArgsV1: the 1.x crawlers' CRAWL_ARGS are today's chart's: no
// --workers (the operator passes it per pod), pages, errors and
// behaviour lines to Redis, --restartsOnError last.
func TestCrawlArgsV1(t *testing.T) {
	args := CrawlArgsV1(CrawlArgsOptions{Workers: 2, MaxPageLimit: 7, HealthCheckPort: 6065, Extra: "--sim.pages 5"})
	want := "--sizeLimit 10000000000 --timeLimit 18000 --maxPageLimit 7 --healthCheckPort 6065 " +
		"--diskUtilization 90 --logging stats,behaviors,debug --text false --generateWACZ --collection thecrawl " +
		"--screencastPort 9037 --writePagesToRedis --logErrorsToRedis --logBehaviorsToRedis --sim.pages 5 --restartsOnError"
	if args != want {
		t.Errorf("CRAWL_ARGS\n %s\nwant\n %s", args, want)
	}
	if got := SharedCrawlerConfig(ProtocolV1); got != SharedCrawlerConfigV1Name {
		t.Errorf("1.x reads %s", got)
	}
	if got := SharedCrawlerConfig(ProtocolV011); got != SharedCrawlerConfigName {
		t.Errorf("0.11 reads %s", got)
	}
}

func TestEnsureCrawlerSupportIsIdempotent(t *testing.T) {
	kube := fake.NewClientset()
	s := CrawlerSupport{CrawlArgs: "--workers 1", CrawlArgsV1: "--writePagesToRedis", StorageName: "default", Storage: map[string]string{"STORE_PATH": "x"}}
	for range 2 {
		if err := EnsureCrawlerSupport(context.Background(), kube, "crawlers", s); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := kube.CoreV1().ConfigMaps("crawlers").Get(context.Background(), SharedCrawlerConfigName, metav1.GetOptions{})
	if err != nil || cm.Data["CRAWL_ARGS"] != "--workers 1" {
		t.Fatalf("shared crawler config: %v, %v", cm, err)
	}
	cm, err = kube.CoreV1().ConfigMaps("crawlers").Get(context.Background(), SharedCrawlerConfigV1Name, metav1.GetOptions{})
	if err != nil || cm.Data["CRAWL_ARGS"] != "--writePagesToRedis" {
		t.Fatalf("1.x shared crawler config: %v, %v", cm, err)
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
