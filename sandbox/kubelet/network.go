package kubelet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// nodeIP is the address of every node: the host's loopback.
const nodeIP = "127.0.0.1"

// allocatePodIP picks an unused loopback address for a new pod. All of
// 127.0.0.0/8 reaches the host, so each pod can listen on its containers'
// real ports without clashing with other pods, other sandboxes on the same
// machine (the pick is random over four million addresses) or services
// bound to 127.0.0.1.
func (k *Kubelet) allocatePodIP() string {
	k.ipMu.Lock()
	defer k.ipMu.Unlock()
	for {
		ip := net.IPv4(127, byte(64+rand.IntN(190)), byte(rand.IntN(256)), byte(1+rand.IntN(254))).String()
		if !k.podIPs[ip] {
			k.podIPs[ip] = true
			return ip
		}
	}
}

func (k *Kubelet) releasePodIP(ip string) {
	k.ipMu.Lock()
	defer k.ipMu.Unlock()
	delete(k.podIPs, ip)
}

// serviceAddr plays kube-proxy for an in-process dial of a Service name
// (<svc>.<ns>.svc[.<domain>]) and port: it picks a ready pod behind the
// Service and returns its IP and the target container port.
func (k *Kubelet) serviceAddr(host string, port int) (string, bool) {
	svc := k.serviceByName(host)
	if svc == nil {
		return "", false
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if int(svc.Spec.Ports[i].Port) == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return "", false
	}
	pods := k.endpoints(svc)
	if len(pods) == 0 {
		return "", false
	}
	pod := pods[rand.IntN(len(pods))]
	target, ok := targetPort(pod, sp.TargetPort, port)
	if !ok {
		return "", false
	}
	return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(target)), true
}

// clusterAddr resolves a cluster DNS name and port for an in-process
// dial: a Service name (see serviceAddr), or the name a pod with a
// hostname and subdomain has in a cluster,
// <hostname>.<subdomain>.<ns>.svc[.<domain>], which gives the pod's own
// address (profile browsers are called that way).
func (k *Kubelet) clusterAddr(host string, port int) (string, bool) {
	if addr, ok := k.serviceAddr(host, port); ok {
		return addr, true
	}
	return k.podAddr(host, port)
}

// podAddr finds the running pod a pod DNS name names.
func (k *Kubelet) podAddr(host string, port int) (string, bool) {
	host = strings.TrimSuffix(normalize(host), "."+k.dns.domain)
	rest, ok := strings.CutSuffix(host, ".svc")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 || k.pods == nil {
		return "", false
	}
	pods, err := k.pods.Pods(parts[2]).List(labels.Everything())
	if err != nil {
		return "", false
	}
	for _, p := range pods {
		if p.Spec.Hostname == parts[0] && p.Spec.Subdomain == parts[1] && p.Status.PodIP != "" &&
			p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)), true
		}
	}
	return "", false
}

// serviceByName finds the Service a cluster DNS name names.
func (k *Kubelet) serviceByName(host string) *corev1.Service {
	host = normalize(host)
	host = strings.TrimSuffix(host, "."+k.dns.domain)
	rest, ok := strings.CutSuffix(host, ".svc")
	if !ok {
		return nil
	}
	name, ns, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(ns, ".") || k.services == nil {
		return nil
	}
	svc, err := k.services.Services(ns).Get(name)
	if err != nil {
		return nil
	}
	return svc
}

// endpoints lists the pods a Service sends traffic to: those it selects
// that have an IP, are not being deleted and are Ready (any, with
// publishNotReadyAddresses), sorted by name.
func (k *Kubelet) endpoints(svc *corev1.Service) []*corev1.Pod {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	pods, err := k.pods.Pods(svc.Namespace).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if svc.Spec.PublishNotReadyAddresses || podReady(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort resolves a Service port's targetPort on one pod: a number, a
// container port name, or (unset) the Service port itself.
func targetPort(pod *corev1.Pod, target intstr.IntOrString, port int) (int, bool) {
	switch {
	case target.Type == intstr.String && target.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == target.StrVal {
					return int(p.ContainerPort), true
				}
			}
		}
		return 0, false
	case target.IntValue() != 0:
		return target.IntValue(), true
	}
	return port, true
}

// Hosts renders an /etc/hosts file for a container of a pod in namespace:
// its own name, every registered name and every Service with endpoints,
// under all the names cluster DNS would answer (the short ones only for
// Services of the pod's namespace). It is how processes run by the
// kubelet, which use the system resolver rather than Container.Dial, find
// cluster names. A Service name maps to its pods' IPs, so a client must
// use a Service port equal to its target port.
func (k *Kubelet) Hosts(namespace, hostname, podIP string) []byte {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n")
	if podIP != "" && hostname != "" {
		fmt.Fprintf(&b, "%s\t%s\n", podIP, hostname)
	}
	for _, r := range k.dns.records() {
		if host, _, err := net.SplitHostPort(r.addr); err == nil {
			fmt.Fprintf(&b, "%s\t%s\n", host, r.name)
		}
	}
	if k.services == nil {
		return []byte(b.String())
	}
	services, err := k.services.List(labels.Everything())
	if err != nil {
		return []byte(b.String())
	}
	slices.SortFunc(services, func(a, b *corev1.Service) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, svc := range services {
		names := []string{svc.Name + "." + svc.Namespace + ".svc." + k.dns.domain, svc.Name + "." + svc.Namespace + ".svc"}
		if svc.Namespace == namespace {
			names = append(names, svc.Name+"."+svc.Namespace, svc.Name)
		}
		for _, p := range k.endpoints(svc) {
			fmt.Fprintf(&b, "%s\t%s\n", p.Status.PodIP, strings.Join(names, " "))
		}
	}
	return []byte(b.String())
}
