package crawls

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
)

// sharedProxies is the shared stack's proxy list: p1, an SSH proxy with
// both key files.
const sharedProxies = `[{"id": "p1", "url": "ssh://proxy@p1.example.net:2222", "label": "Proxy 1",
	"ssh_private_key": "PRIVATE", "ssh_host_public_key": "HOST"}]`

// TestCrawlerProxies: an org lists no proxy and may not name p1 until
// the superuser allows it; then a workflow through p1 runs on crawler
// pods with upstream's proxy flags, volumes and mounts, to the end; once
// p1 leaves the mounted configuration, the next run is 400
// proxy_not_found (spec §5.3-5.6, §8.5 items 3, 4, 5 and 8).
func TestCrawlerProxies(t *testing.T) {
	stack := sharedStack(t)
	c := newClient(t, stack)
	c.inNewOrg("Proxies")
	ns := stack.Config.GetString("crawler_namespace")
	// The chart renders these Secrets in the crawler namespace.
	for name, data := range map[string]map[string]string{
		k8s.ProxiesSecretName:           {"p1-private-key": "PRIVATE", "p1-known-hosts": "HOST"},
		k8s.ForceUserAndGroupSecretName: {"passwd": "crawler:x:201407:201407::/tmp:/bin/sh\n", "group": "crawler:x:201407:\n"},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
		if _, err := stack.Env.Client.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	if got := c.Object("GET", c.Org("/crawlconfigs/crawler-proxies"), nil, 200); len(got["servers"].([]any)) != 0 {
		t.Fatalf("proxies of a new org: %v", got)
	}
	body, _ := json.Marshal(map[string]any{"name": "via p1", "runNow": true, "proxyId": "p1",
		"config": map[string]any{"seeds": []any{map[string]any{"url": "https://example.com/?sim-pages=8&sim-page-ms=1000"}}}})
	wantDetail := func(what string, code int, data []byte, status int, detail string) {
		t.Helper()
		var out struct{ Detail string }
		if err := json.Unmarshal(data, &out); err != nil || code != status || out.Detail != detail {
			t.Fatalf("%s: %d %s, want %d %s", what, code, data, status, detail)
		}
	}
	code, data := c.Send("POST", c.Org("/crawlconfigs/"), bytes.NewReader(body), "application/json")
	wantDetail("a proxy the org may not use", code, data, 400, "proxy_not_found")

	c.Object("POST", c.Org("/proxies"), map[string]any{"allowSharedProxies": false, "allowedProxies": []string{"p1"}}, 200)
	servers := c.Object("GET", c.Org("/crawlconfigs/crawler-proxies"), nil, 200)["servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["id"] != "p1" || servers[0].(map[string]any)["has_private_key"] != true {
		t.Fatalf("proxies once allowed: %v", servers)
	}
	var out map[string]any
	code, data = c.Send("POST", c.Org("/crawlconfigs/"), bytes.NewReader(body), "application/json")
	if err := json.Unmarshal(data, &out); err != nil || code != 200 {
		t.Fatalf("workflow via p1: %d %s", code, data)
	}
	cid, id := out["id"].(string), out["run_now_job"].(string)

	var pod *corev1.Pod
	e2etest.WaitFor(t, time.Minute, "the crawler pod of "+id, func() (bool, error) {
		p, err := stack.Env.Client.CoreV1().Pods(ns).Get(t.Context(), k8s.CrawlerName(id, 0), metav1.GetOptions{})
		pod = p
		return err == nil, nil
	})
	ctr := pod.Spec.Containers[0]
	line := append(slices.Clone(ctr.Command), ctr.Args...)
	wantFlags := []string{"--proxyServer", "ssh://proxy@p1.example.net:2222",
		"--sshProxyPrivateKeyFile", "/tmp/proxies/p1-private-key",
		"--sshProxyKnownHostsFile", "/tmp/proxies/p1-known-hosts",
		"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}
	if len(line) < len(wantFlags) || !slices.Equal(line[len(line)-len(wantFlags):], wantFlags) {
		t.Errorf("crawler command line %q, want it to end with %q", line, wantFlags)
	}
	secrets := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && v.Secret.DefaultMode != nil && *v.Secret.DefaultMode == 0o600 {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	if secrets["proxies"] != "proxies" || secrets["force-user-and-group-name"] != "force-user-and-group-name" {
		t.Errorf("secret volumes (mode 0600) %v", secrets)
	}
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.MountPath] = m.Name + ":" + m.SubPath
	}
	if mounts["/tmp/proxies/"] != "proxies:" || mounts["/etc/passwd"] != "force-user-and-group-name:passwd" ||
		mounts["/etc/group"] != "force-user-and-group-name:group" {
		t.Errorf("mounts %v", mounts)
	}
	if crawl := c.waitCrawl(id); crawl["state"] != "complete" {
		t.Fatalf("crawl via p1 ended %v", crawl["state"])
	}

	// The chart's upgrade rewrites the mounted file: p1 is gone.
	if err := os.WriteFile(shared.proxiesFile, []byte(`[]`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(shared.proxiesFile, []byte(sharedProxies), 0o600) })
	code, data = c.Send("POST", c.Org("/crawlconfigs/"+cid+"/run"), nil, "")
	wantDetail("a run through a removed proxy", code, data, 400, "proxy_not_found")
}
