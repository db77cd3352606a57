package k8s_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/sandbox"
)

// helm comes with the sandbox's binaries (make testbin).
func TestChartRendersWithHelm(t *testing.T) {
	chartDir := filepath.Join("..", "deploy", "helm", "trawler")
	helm, err := sandbox.Bin("helm")
	if err != nil {
		t.Fatal(err)
	}
	// Lint with the optional parts on too, so their templates are checked.
	production := filepath.Join(t.TempDir(), "production.yaml")
	if err := os.WriteFile(production, []byte(`trawler_num_replicas: 1
install_crds: true
mongo_local: false
mongo_uri: mongodb://mongo.example:27017/
s3_local: false
storages:
  - {name: default, access_key: a, secret_key: s, bucket_name: crawls, endpoint_url: "https://s3.example/"}
ingress: {enabled: true, host: trawler.example, tls_secret: trawler-tls}
metrics: {service_port: true, service_monitor: {enabled: true, labels: {release: prometheus}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--values", production}} {
		out, err := exec.Command(helm, append([]string{"lint", "--strict", chartDir}, extra...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "0 chart(s) failed") || strings.Contains(string(out), "[WARNING]") {
			t.Fatalf("helm lint %v: %v\n%s", extra, err, out)
		}
	}
	out, err := exec.Command(helm, "template", "t", chartDir, "--namespace", "trawler").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	text := string(out)
	for _, want := range []string{
		"kind: Deployment", "name: crawl-instance-2", "value: -2", "name: shared-crawler-config",
		"name: shared-redis-conf", "name: storage-default", "clusterIP: None",
		"kind: PodDisruptionBudget", "name: trawler-mongo", "name: trawler-s3", "kind: Lease",
		`STORE_ENDPOINT_URL: "http://trawler-s3.trawler.svc.cluster.local:7070/btrix-data/"`,
		"mongodb://root:", "@trawler-mongo.trawler.svc.cluster.local:27017/?authSource=admin",
		`--diskUtilization 90 --logging stats,behaviors,debug --text false --generateWACZ`,
		`--logErrorsToRedis --restartsOnError"`, `--sizeLimit 10000000000 --timeLimit 18000`,
		`TRAWLER_METRICS_LISTEN: ":9090"`, "containerPort: 9090",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered chart lacks %q", want)
		}
	}
	// Off by default: the Service has the API port only, and no
	// ServiceMonitor is asked of a cluster that may not know the kind.
	if strings.Contains(text, "kind: ServiceMonitor") || strings.Contains(text, "port: 9090") {
		t.Error("the default chart exposes the metrics port or a ServiceMonitor")
	}
	out, err = exec.Command(helm, "template", "t", chartDir, "--namespace", "trawler", "--values", production).Output()
	if err != nil {
		t.Fatalf("helm template with metrics: %v", err)
	}
	for _, want := range []string{"kind: ServiceMonitor", "- port: metrics", "release: prometheus",
		"- name: metrics\n      port: 9090\n      targetPort: metrics"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("chart with metrics on lacks %q", want)
		}
	}
	if strings.Contains(text, "crawl-instance-3") {
		t.Error("more PriorityClasses than max_crawl_scale")
	}
}
