package kubelet

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DNS is the sandbox's stand-in for cluster DNS and kube-proxy for
// programs that run in the test process. Programs register pod names
// (such as redis-x.redis.crawlers.svc.cluster.local) to the host:port they
// listen on, Service names resolve through the kubelet to a ready pod
// behind the Service, and clients connect through Dial. Processes the
// kubelet runs get the same names in their /etc/hosts (Kubelet.Hosts).
type DNS struct {
	domain string
	dialer net.Dialer

	mu      sync.RWMutex
	names   map[string]string
	changed chan struct{} // closed and replaced on every change
	// services resolves Service names; set by the kubelet that uses this DNS.
	services func(host string, port int) (string, bool)
}

// NewDNS returns an empty registry for clusterDomain (e.g. "cluster.local").
func NewDNS(clusterDomain string) *DNS {
	return &DNS{domain: normalize(clusterDomain), names: make(map[string]string), changed: make(chan struct{})}
}

// Changed returns a channel that is closed at the next change of the
// names DNS answers (a registration, or a Service or pod event).
func (d *DNS) Changed() <-chan struct{} {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.changed
}

// touch signals a change to those waiting on Changed.
func (d *DNS) touch() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.touchLocked()
}

func (d *DNS) touchLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

func (d *DNS) setServices(f func(host string, port int) (string, bool)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.services = f
}

// record is one registered name.
type record struct{ name, addr string }

// records lists the registered names, sorted.
func (d *DNS) records() []record {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]record, 0, len(d.names))
	for name, addr := range d.names {
		out = append(out, record{name, addr})
	}
	slices.SortFunc(out, func(a, b record) int { return strings.Compare(a.name, b.name) })
	return out
}

// ClusterDomain is the domain given to NewDNS.
func (d *DNS) ClusterDomain() string { return d.domain }

// PodNames returns the names a pod with a hostname and subdomain has in a
// real cluster: <hostname>.<subdomain>.<ns>.svc.<domain> and the short
// form <hostname>.<subdomain>.<ns>.svc. It returns nil when subdomain is
// empty, because such a pod has no hostname record.
func (d *DNS) PodNames(hostname, subdomain, namespace string) []string {
	if hostname == "" || subdomain == "" {
		return nil
	}
	svc := fmt.Sprintf("%s.%s.%s.svc", hostname, subdomain, namespace)
	return []string{svc + "." + d.domain, svc}
}

// Register maps name, on any port, to addr (host:port).
func (d *DNS) Register(name, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.names[normalize(name)] = addr
	d.touchLocked()
}

// Unregister removes name if it still maps to addr, so a program that
// stops late cannot remove the record of its successor.
func (d *DNS) Unregister(name, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names[normalize(name)] == addr {
		delete(d.names, normalize(name))
		d.touchLocked()
	}
}

// Resolve returns the host:port registered for name.
func (d *DNS) Resolve(name string) (string, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	addr, ok := d.names[normalize(name)]
	return addr, ok
}

// Dial connects like net.Dialer.DialContext, except that registered names
// go to their registered address whatever the port asked for, Service
// names go to a ready pod behind the Service (on the Service port's
// target port), and other names inside the cluster zone fail at once with
// a "no such host" error, as they would in a cluster.
func (d *DNS) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if target, ok := d.Resolve(host); ok {
		return d.dialer.DialContext(ctx, "tcp", target)
	}
	d.mu.RLock()
	services := d.services
	d.mu.RUnlock()
	if port, err := strconv.Atoi(portText); err == nil && services != nil {
		if target, ok := services(host, port); ok {
			return d.dialer.DialContext(ctx, "tcp", target)
		}
	}
	if d.inClusterZone(host) {
		return nil, &net.OpError{Op: "dial", Net: network,
			Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
	}
	return d.dialer.DialContext(ctx, network, addr)
}

func (d *DNS) inClusterZone(host string) bool {
	h := normalize(host)
	return strings.HasSuffix(h, ".svc") || strings.HasSuffix(h, ".svc."+d.domain)
}

func normalize(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}
