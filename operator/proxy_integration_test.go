package operator_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// TestCrawlGoesThroughItsProxy: on the sandbox's kube-apiserver, the
// crawler pods of a crawl with an SSH proxy carry --proxyServer, both
// --sshProxy…File flags and --proxyServerConfig, the proxies and
// force-user-and-group-name Secret volumes and their mounts; the kubelet
// mounts the Secrets the chart renders and the crawl runs to the end.
// Crawls without a proxy, or whose proxy left the configuration, get
// none of it (spec §5.5, §5.6, §8.5 item 5).
func TestCrawlGoesThroughItsProxy(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	ctx := t.Context()
	for name, data := range map[string]map[string]string{
		k8s.ProxiesSecretName:           {"p1-private-key": "PRIVATE", "p1-known-hosts": "HOST"},
		k8s.ForceUserAndGroupSecretName: {"passwd": "crawler:x:201407:201407::/tmp:/bin/sh\n", "group": "crawler:x:201407:\n"},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
		if _, err := h.kube.CoreV1().Secrets(h.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := json.Marshal(k8s.CrawlerProxies{{ID: "p1", URL: "ssh://proxy@p1.example.net:2222", Label: "P1",
		SSHPrivateKey: "PRIVATE", SSHHostPublicKey: "HOST"}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "crawler_proxies.json")
	if err := os.WriteFile(file, list, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := h.config()
	cfg.CrawlerProxies = k8s.NewProxyFile(file, "")
	h.startOperator(cfg)

	seed := "https://example.com/?sim-pages=6&sim-page-ms=100"
	withProxy := func(id string) func(*trawlerv1.CrawlJobSpec) {
		return func(s *trawlerv1.CrawlJobSpec) { s.ProxyID = id }
	}
	proxied := h.startCrawl(crawlOpts{scale: 2, seed: seed, spec: withProxy("p1")})
	plain := h.startCrawl(crawlOpts{seed: seed})
	removed := h.startCrawl(crawlOpts{seed: seed, spec: withProxy("gone")})

	wantFlags := []string{"--proxyServer", "ssh://proxy@p1.example.net:2222",
		"--sshProxyPrivateKeyFile", "/tmp/proxies/p1-private-key",
		"--sshProxyKnownHostsFile", "/tmp/proxies/p1-known-hosts",
		"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}
	for id, pods := range map[string]int{proxied: 2, plain: 1, removed: 1} {
		var crawlers []corev1.Pod
		h.waitFor("crawler pods of "+id, 60*time.Second, func() bool {
			crawlers = crawlers[:0]
			for _, p := range h.pods(id) {
				if p.Labels[k8s.LabelRole] == k8s.RoleCrawler {
					crawlers = append(crawlers, p)
				}
			}
			return len(crawlers) == pods
		})
		for _, p := range crawlers {
			checkProxyPod(t, &p, id == proxied, wantFlags)
		}
	}
	for _, id := range []string{proxied, plain, removed} {
		if got := h.waitState(id, 120*time.Second, store.StateComplete, store.StateFailed, store.StateCanceled); got != store.StateComplete {
			t.Errorf("crawl %s ended %s", id, got)
		}
	}
}

// checkProxyPod checks the proxy's flags, volumes and mounts on a crawler
// pod as the kube-apiserver has it: all of them when proxied, else none.
func checkProxyPod(t *testing.T, p *corev1.Pod, proxied bool, wantFlags []string) {
	t.Helper()
	c := p.Spec.Containers[0]
	line := append(slices.Clone(c.Command), c.Args...)
	hasFlags := len(line) >= len(wantFlags) && slices.Equal(line[len(line)-len(wantFlags):], wantFlags)
	if proxied != hasFlags || !proxied && slices.ContainsFunc(line, func(s string) bool { return strings.HasPrefix(s, "--proxy") }) {
		t.Errorf("%s: command line %q, proxied %v", p.Name, line, proxied)
	}
	volumes := map[string]*corev1.SecretVolumeSource{}
	for _, v := range p.Spec.Volumes {
		volumes[v.Name] = v.Secret
	}
	for name, secret := range map[string]string{"proxies": k8s.ProxiesSecretName, "force-user-and-group-name": k8s.ForceUserAndGroupSecretName} {
		v, ok := volumes[name]
		switch {
		case ok != proxied:
			t.Errorf("%s: volume %s present %v, proxied %v", p.Name, name, ok, proxied)
		case ok && (v == nil || v.SecretName != secret || v.DefaultMode == nil || *v.DefaultMode != 0o600):
			t.Errorf("%s: volume %s is %+v", p.Name, name, v)
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	for path, want := range map[string]corev1.VolumeMount{
		"/tmp/proxies/": {Name: "proxies", MountPath: "/tmp/proxies/", ReadOnly: true},
		"/etc/passwd":   {Name: "force-user-and-group-name", MountPath: "/etc/passwd", SubPath: "passwd"},
		"/etc/group":    {Name: "force-user-and-group-name", MountPath: "/etc/group", SubPath: "group"},
	} {
		m, ok := mounts[path]
		if ok != proxied || ok && m != want {
			t.Errorf("%s: mount %s = %+v (present %v), proxied %v", p.Name, path, m, ok, proxied)
		}
	}
}
