package operator

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// testProxies: an SSH proxy with both key files, one with the private key
// only, and a SOCKS proxy.
var testProxies = k8s.CrawlerProxies{
	{ID: "p1", URL: "ssh://proxy@p1.example.net:2222", Label: "P1", SSHPrivateKey: "KEY", SSHHostPublicKey: "HOST"},
	{ID: "p2", URL: "ssh://proxy@p2.example.net", Label: "P2", SSHPrivateKey: "KEY"},
	{ID: "socks", URL: "socks5://s.example.net:1080", Label: "SOCKS", Shared: true},
}

// proxyMounts and proxyVolumes are what every pod with proxy files gets
// (spec §5.6).
var (
	proxyMounts = []corev1.VolumeMount{
		{Name: "proxies", MountPath: "/tmp/proxies/", ReadOnly: true},
		{Name: "force-user-and-group-name", MountPath: "/etc/passwd", SubPath: "passwd"},
		{Name: "force-user-and-group-name", MountPath: "/etc/group", SubPath: "group"},
	}
	proxyVolumes = func() []corev1.Volume {
		mode := int32(0o600)
		return []corev1.Volume{
			{Name: "proxies", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "proxies", DefaultMode: &mode}}},
			{Name: "force-user-and-group-name", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "force-user-and-group-name", DefaultMode: &mode}}},
		}
	}()
)

// podDiff is what a proxy adds to a pod: the flags at the end of its
// command line, and the volumes and mounts after the pod's own.
type podDiff struct {
	Flags   []string
	Mounts  []corev1.VolumeMount
	Volumes []corev1.Volume
}

// diffPods returns what got adds to base, failing when it changed
// anything else.
func diffPods(t *testing.T, base, got *corev1.Pod) podDiff {
	t.Helper()
	bc, gc := base.Spec.Containers[0], got.Spec.Containers[0]
	var d podDiff
	switch {
	case len(gc.Args) > len(bc.Args):
		d.Flags = gc.Args[len(bc.Args):]
		gc.Args = gc.Args[:len(bc.Args)]
	case len(gc.Command) > len(bc.Command):
		d.Flags = gc.Command[len(bc.Command):]
		gc.Command = gc.Command[:len(bc.Command)]
	}
	d.Mounts = gc.VolumeMounts[len(bc.VolumeMounts):]
	gc.VolumeMounts = gc.VolumeMounts[:len(bc.VolumeMounts)]
	d.Volumes = got.Spec.Volumes[len(base.Spec.Volumes):]
	rest := got.DeepCopy()
	rest.Spec.Containers[0] = gc
	rest.Spec.Volumes = rest.Spec.Volumes[:len(base.Spec.Volumes)]
	if diff := cmp.Diff(base, rest, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the proxy changed more than flags, volumes and mounts (-without +with):\n%s", diff)
	}
	return d
}

// TestCrawlerPodProxy: the crawler pod of a job with a proxy gets
// upstream's flags, in upstream's order, the proxies and
// force-user-and-group-name Secret volumes (mode 0600) and their mounts;
// no proxy gets none of it, unless hosts are matched, which adds
// --proxyServerConfig and the files alone; a proxy no longer configured
// is left out (spec §5.5, §5.6, §8.5 item 5).
func TestCrawlerPodProxy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		proxyID    string
		matchHosts bool
		want       podDiff
	}{
		{name: "none"},
		{name: "removed", proxyID: "gone"},
		{name: "ssh with both keys", proxyID: "p1", want: podDiff{Flags: []string{
			"--proxyServer", "ssh://proxy@p1.example.net:2222",
			"--sshProxyPrivateKeyFile", "/tmp/proxies/p1-private-key",
			"--sshProxyKnownHostsFile", "/tmp/proxies/p1-known-hosts",
			"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}, Mounts: proxyMounts, Volumes: proxyVolumes}},
		{name: "ssh with a private key", proxyID: "p2", want: podDiff{Flags: []string{
			"--proxyServer", "ssh://proxy@p2.example.net",
			"--sshProxyPrivateKeyFile", "/tmp/proxies/p2-private-key",
			"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}, Mounts: proxyMounts, Volumes: proxyVolumes}},
		{name: "socks", proxyID: "socks", want: podDiff{Flags: []string{
			"--proxyServer", "socks5://s.example.net:1080",
			"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}, Mounts: proxyMounts, Volumes: proxyVolumes}},
		{name: "match hosts only", matchHosts: true, want: podDiff{Flags: []string{
			"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}, Mounts: proxyMounts, Volumes: proxyVolumes}},
		{name: "removed, match hosts", proxyID: "gone", matchHosts: true, want: podDiff{Flags: []string{
			"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}, Mounts: proxyMounts, Volumes: proxyVolumes}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := crawlerPod(newJob(1), testConfig(), 0)
			cfg := testConfig()
			cfg.CrawlerProxies = k8s.NewProxyList(testProxies, "")
			cfg.ProxyMatchHosts = tc.matchHosts
			got := crawlerPod(newJob(1, func(cj *trawlerv1.CrawlJob) { cj.Spec.ProxyID = tc.proxyID }), cfg, 0)
			if d := cmp.Diff(tc.want, diffPods(t, base, got), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("pod diff (-want +got):\n%s", d)
			}
		})
	}
}

// TestApplyProxyAfterArgs: a container whose command line continues in
// Args gets the flags at the end of its Args, so they stay last whatever
// the crawler protocol puts in Command.
func TestApplyProxyAfterArgs(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Command: []string{"crawl"}, Args: []string{"--config", "/tmp/config/crawl-config.json"}}}}}
	applyProxy(pod, &testProxies[2], false)
	c := pod.Spec.Containers[0]
	want := []string{"--config", "/tmp/config/crawl-config.json", "--proxyServer", "socks5://s.example.net:1080",
		"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}
	if !slices.Equal(c.Command, []string{"crawl"}) || !slices.Equal(c.Args, want) {
		t.Errorf("command %q, args %q", c.Command, c.Args)
	}
}

// TestBrowserPodProxy: a profile browser goes through its job's proxy
// the way a crawler does.
func TestBrowserPodProxy(t *testing.T) {
	pj := &trawlerv1.ProfileJob{Spec: trawlerv1.ProfileJobSpec{ID: "prf-1", OID: "org1", StartURL: "https://example.com/"}}
	base := browserPod(pj, testConfig())
	cfg := testConfig()
	cfg.CrawlerProxies = k8s.NewProxyList(testProxies, "")
	pj.Spec.ProxyID = "p1"
	want := podDiff{Flags: []string{
		"--proxyServer", "ssh://proxy@p1.example.net:2222",
		"--sshProxyPrivateKeyFile", "/tmp/proxies/p1-private-key",
		"--sshProxyKnownHostsFile", "/tmp/proxies/p1-known-hosts",
		"--proxyServerConfig", "/tmp/proxies/host-proxies.json"}, Mounts: proxyMounts, Volumes: proxyVolumes}
	if d := cmp.Diff(want, diffPods(t, base, browserPod(pj, cfg)), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("browser pod diff (-want +got):\n%s", d)
	}
}
