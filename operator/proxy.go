package operator

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/k8s"
)

// Volumes of the proxy files in crawler and profile browser pods.
const (
	proxiesVolume           = "proxies"
	forceUserAndGroupVolume = "force-user-and-group-name"
)

// proxySecretMode keeps the SSH key files private to the crawler's user,
// as ssh insists.
const proxySecretMode int32 = 0o600

// proxy returns the configured proxy id names, and false when id is ""
// or names none any more: a crawl whose proxy was removed meanwhile runs
// without it rather than failing (spec §5.5). A proxy file that became
// invalid keeps the list read last; the API reports the error.
func (c Config) proxy(id string) (*k8s.CrawlerProxy, bool) {
	if id == "" {
		return nil, false
	}
	list, _ := c.CrawlerProxies.Proxies()
	p, ok := list.Lookup(id)
	if !ok {
		return nil, false
	}
	return &p, true
}

// applyProxy sends the pod's first container through proxy (nil: none),
// as upstream's crawler template does (spec §5.5, §5.6). Pods get the
// proxies' files when they have a proxy, or when the chart matches hosts
// to proxies (matchHosts): the proxies Secret at /tmp/proxies/, and the
// passwd and group files that ssh needs; the flags go at the end of the
// command line (its Args when the container has them, else its Command):
// --proxyServer, the SSH key files the proxy has, and always
// --proxyServerConfig, which the crawler ignores when the file is absent.
func applyProxy(pod *corev1.Pod, proxy *k8s.CrawlerProxy, matchHosts bool) {
	if proxy == nil && !matchHosts {
		return
	}
	var flags []string
	if proxy != nil {
		flags = append(flags, "--proxyServer", proxy.URL)
		if proxy.HasPrivateKey() {
			flags = append(flags, "--sshProxyPrivateKeyFile", k8s.ProxyPrivateKeyFile(proxy.ID))
		}
		if proxy.HasHostPublicKey() {
			flags = append(flags, "--sshProxyKnownHostsFile", k8s.ProxyKnownHostsFile(proxy.ID))
		}
	}
	flags = append(flags, "--proxyServerConfig", k8s.HostProxiesFile)

	c := &pod.Spec.Containers[0]
	if len(c.Args) > 0 {
		c.Args = append(c.Args, flags...)
	} else {
		c.Command = append(c.Command, flags...)
	}
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: proxiesVolume, MountPath: k8s.ProxiesMountPath, ReadOnly: true},
		corev1.VolumeMount{Name: forceUserAndGroupVolume, MountPath: "/etc/passwd", SubPath: "passwd"},
		corev1.VolumeMount{Name: forceUserAndGroupVolume, MountPath: "/etc/group", SubPath: "group"},
	)
	mode := proxySecretMode
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: proxiesVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: k8s.ProxiesSecretName, DefaultMode: &mode}}},
		corev1.Volume{Name: forceUserAndGroupVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: k8s.ForceUserAndGroupSecretName, DefaultMode: &mode}}},
	)
}
