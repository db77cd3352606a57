package k8s_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

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
		"name: shared-crawler-config-v1", `--writePagesToRedis --logErrorsToRedis --logBehaviorsToRedis --restartsOnError"`,
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

// TestChartEmailAndWebhooks: the app_origin, email and webhooks values
// reach trawler as its TRAWLER_* variables, the SMTP password through the
// Secret only.
func TestChartEmailAndWebhooks(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		config       map[string]string
		password     string // "" = no TRAWLER_EMAIL_PASSWORD in the Secret
	}{
		{"defaults", "", map[string]string{
			"TRAWLER_API_APP_ORIGIN":  "",
			"TRAWLER_EMAIL_SMTP_HOST": "", "TRAWLER_EMAIL_SMTP_PORT": "587", "TRAWLER_EMAIL_SENDER": "",
			"TRAWLER_EMAIL_REPLY_TO": "", "TRAWLER_EMAIL_USE_TLS": "false",
			"TRAWLER_WEBHOOKS_MAX_ATTEMPTS": "12", "TRAWLER_WEBHOOKS_RETRY_DELAY": "1m",
			"TRAWLER_WEBHOOKS_MAX_RETRY_DELAY": "8h", "TRAWLER_WEBHOOKS_TIMEOUT": "15s",
			"TRAWLER_WEBHOOKS_POLL_INTERVAL": "10s", "TRAWLER_WEBHOOKS_WORKERS": "8",
		}, ""},
		{"set", `app_origin: https://crawls.example.org
email: {smtp_host: smtp.example.org, smtp_port: 2525, sender: crawls@example.org,
  password: "sm7p-pa55", reply_to: "Crawls <noreply@example.org>", use_tls: true}
webhooks: {max_attempts: 3, retry_delay: 30s, max_retry_delay: 1h, timeout: 5s, poll_interval: 1m, workers: 2}
`, map[string]string{
			"TRAWLER_API_APP_ORIGIN":  "https://crawls.example.org",
			"TRAWLER_EMAIL_SMTP_HOST": "smtp.example.org", "TRAWLER_EMAIL_SMTP_PORT": "2525", "TRAWLER_EMAIL_USE_TLS": "true",
			"TRAWLER_EMAIL_SENDER": "crawls@example.org", "TRAWLER_EMAIL_REPLY_TO": "Crawls <noreply@example.org>",
			"TRAWLER_WEBHOOKS_MAX_ATTEMPTS": "3", "TRAWLER_WEBHOOKS_RETRY_DELAY": "30s",
			"TRAWLER_WEBHOOKS_MAX_RETRY_DELAY": "1h", "TRAWLER_WEBHOOKS_TIMEOUT": "5s",
			"TRAWLER_WEBHOOKS_POLL_INTERVAL": "1m", "TRAWLER_WEBHOOKS_WORKERS": "2",
		}, "sm7p-pa55"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := renderChart(t, tc.values)
			config := objects["ConfigMap/trawler-env-config"].Data
			for key, want := range tc.config {
				if got, ok := config[key]; !ok || got != want {
					t.Errorf("ConfigMap %s = %q (set: %v), want %q", key, got, ok, want)
				}
			}
			if _, ok := config["TRAWLER_EMAIL_PASSWORD"]; ok {
				t.Error("the SMTP password is in the ConfigMap")
			}
			got, ok := objects["Secret/trawler-secrets"].StringData["TRAWLER_EMAIL_PASSWORD"]
			if tc.password == "" && ok {
				t.Errorf("the Secret has TRAWLER_EMAIL_PASSWORD %q though none is set", got)
			}
			if tc.password != "" && got != tc.password {
				t.Errorf("the Secret's TRAWLER_EMAIL_PASSWORD = %q, want %q", got, tc.password)
			}
			for key, o := range objects {
				if tc.password != "" && key != "Secret/trawler-secrets" && strings.Contains(o.text, tc.password) {
					t.Errorf("%s holds the SMTP password", key)
				}
			}
		})
	}
}

// renderedObject is what these tests read of one object helm rendered.
type renderedObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Data       map[string]string `json:"data"`
	StringData map[string]string `json:"stringData"`
	text       string
}

// renderChart renders the chart with helm template and the given values
// file content ("" = defaults), keyed by kind/name.
func renderChart(t *testing.T, values string) map[string]renderedObject {
	t.Helper()
	helm, err := sandbox.Bin("helm")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(helm, "template", "t", filepath.Join("..", "deploy", "helm", "trawler"),
		"--namespace", "trawler", "--values", file).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	objects := map[string]renderedObject{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o renderedObject
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered document: %v\n%s", err, doc)
		}
		if o.Kind == "" {
			continue
		}
		o.text = doc
		objects[o.Kind+"/"+o.Metadata.Name] = o
	}
	return objects
}
