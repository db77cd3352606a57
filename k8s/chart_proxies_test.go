package k8s_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/sandbox"
)

// TestChartProxies: proxies render upstream's objects (the proxies Secret
// with the SSH key files and host-proxies.json in the crawler namespace,
// force-user-and-group-name, the has-proxy-match-hosts marker and
// ops-proxy-configs, whose crawler_proxies.json trawler reads from the
// mount the Deployment has), and the settings reach trawler; without
// proxies none of the objects exist.
func TestChartProxies(t *testing.T) {
	objects := renderChart(t, "")
	for _, key := range []string{"Secret/proxies", "Secret/ops-proxy-configs", "Secret/force-user-and-group-name", "ConfigMap/has-proxy-match-hosts"} {
		if _, ok := objects[key]; ok {
			t.Errorf("%s rendered without proxies", key)
		}
	}
	env := objects["ConfigMap/trawler-env-config"].Data
	if env["TRAWLER_CRAWLER_PROXIES_FILE"] != "/ops-proxy-configs/crawler_proxies.json" || env["TRAWLER_CRAWLER_DEFAULT_PROXY"] != "" ||
		env["TRAWLER_CRAWLER_PROXY_MATCH_HOSTS"] != "false" {
		t.Errorf("proxy settings without proxies: %v", env)
	}
	deployment := objects["Deployment/trawler"].text
	for _, want := range []string{"mountPath: /ops-proxy-configs/", "secretName: ops-proxy-configs", "optional: true"} {
		if !strings.Contains(deployment, want) {
			t.Errorf("the Deployment lacks %q", want)
		}
	}

	objects = renderChart(t, `crawler_namespace: crawlers
proxies:
  - {id: p1, url: "ssh://proxy@p1.example.net:2222", label: P1, country_code: de, ssh_private_key: "PRIVATE\n", ssh_host_public_key: "p1.example.net ssh-ed25519 AAAA"}
  - {id: s1, url: "socks5://s1.example.net:1080", label: S1, shared: true}
proxies_match_hosts:
  'example\.org': p1
default_proxy: s1
`)
	secret := objects["Secret/proxies"]
	if !strings.Contains(secret.text, "namespace: crawlers") {
		t.Errorf("the proxies Secret is not in the crawler namespace:\n%s", secret.text)
	}
	var hostProxies any
	if err := json.Unmarshal([]byte(secret.StringData["host-proxies.json"]), &hostProxies); err != nil {
		t.Fatalf("host-proxies.json: %v", err)
	}
	wantHostProxies := map[string]any{"matchHosts": map[string]any{`example\.org`: "p1"}, "proxies": map[string]any{
		"p1": map[string]any{"url": "ssh://proxy@p1.example.net:2222",
			"privateKeyFile": "/tmp/proxies/p1-private-key", "publicHostsFile": "/tmp/proxies/p1-known-hosts"}}}
	if d := cmp.Diff(wantHostProxies, hostProxies); d != "" {
		t.Errorf("host-proxies.json (-want +got):\n%s", d)
	}
	if secret.StringData["p1-private-key"] != "PRIVATE\n" || secret.StringData["p1-known-hosts"] != "p1.example.net ssh-ed25519 AAAA" ||
		len(secret.StringData) != 3 {
		t.Errorf("proxies Secret keys: %v", secret.StringData)
	}
	if users := objects["Secret/force-user-and-group-name"]; !strings.Contains(users.text, "namespace: crawlers") ||
		!strings.Contains(users.StringData["passwd"], ":201407:201407:") || !strings.Contains(users.StringData["group"], ":201407:") {
		t.Errorf("force-user-and-group-name:\n%s", users.text)
	}
	if marker, ok := objects["ConfigMap/has-proxy-match-hosts"]; !ok || !strings.Contains(marker.text, "role: has-proxy-match-hosts") {
		t.Errorf("has-proxy-match-hosts: %v\n%s", ok, marker.text)
	}
	ops := objects["Secret/ops-proxy-configs"]
	if strings.Contains(ops.text, "namespace: crawlers") {
		t.Error("ops-proxy-configs is not in the release namespace")
	}
	list, err := k8s.ParseCrawlerProxies([]byte(ops.StringData["crawler_proxies.json"]))
	if err != nil {
		t.Fatal(err)
	}
	if err := list.Validate("s1"); err != nil || len(list) != 2 || !list[0].HasPrivateKey() || !list[1].Shared {
		t.Errorf("crawler_proxies.json %+v: %v", list, err)
	}
	if _, err := strconv.ParseInt(ops.StringData["crawler_proxies_last_update"], 10, 64); err != nil {
		t.Errorf("crawler_proxies_last_update: %v", err)
	}
	env = objects["ConfigMap/trawler-env-config"].Data
	if env["TRAWLER_CRAWLER_DEFAULT_PROXY"] != "s1" || env["TRAWLER_CRAWLER_PROXY_MATCH_HOSTS"] != "true" {
		t.Errorf("proxy settings: default %q, match hosts %q", env["TRAWLER_CRAWLER_DEFAULT_PROXY"], env["TRAWLER_CRAWLER_PROXY_MATCH_HOSTS"])
	}

	helm, err := sandbox.Bin("helm")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ values, want string }{
		"unknownProxy": {"proxies: [{id: p1, url: 'socks5://h:1', label: P1}]\nproxies_match_hosts: {x: p2}", "p2, which is not in proxies"},
		"noProxies":    {"proxies_match_hosts: {x: p1}", "proxies_match_hosts is set but proxies is empty"},
		"badID":        {"proxies: [{id: P_1, url: 'socks5://h:1', label: P1}]", "proxies"},
		"badURL":       {"proxies: [{id: p1, url: 'ftp://h', label: P1}]", "proxies"},
		"unknownKey":   {"proxies: [{id: p1, url: 'socks5://h:1', label: P1, key: x}]", "proxies"},
	} {
		file := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(file, []byte(tc.values), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(helm, "template", "t", filepath.Join("..", "deploy", "helm", "trawler"),
			"--namespace", "trawler", "--values", file).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: helm template accepted %s: %v\n%.300s", name, tc.values, err, out)
		}
	}
}
