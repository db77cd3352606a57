package kubelet

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
)

// DNS is the sandbox's stand-in for cluster DNS. Every pod runs on
// 127.0.0.1, so a name such as redis-x.redis.crawlers.svc.cluster.local
// cannot resolve to an IP; programs register it to a loopback host:port
// instead, and clients connect through Dial.
type DNS struct {
	domain string
	dialer net.Dialer

	mu    sync.RWMutex
	names map[string]string
}

// NewDNS returns an empty registry for clusterDomain (e.g. "cluster.local").
func NewDNS(clusterDomain string) *DNS {
	return &DNS{domain: normalize(clusterDomain), names: make(map[string]string)}
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
}

// Unregister removes name if it still maps to addr, so a program that
// stops late cannot remove the record of its successor.
func (d *DNS) Unregister(name, addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names[normalize(name)] == addr {
		delete(d.names, normalize(name))
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
// go to their registered address whatever the port asked for, and
// unregistered names inside the cluster zone fail at once with a "no such
// host" error, as they would in a cluster.
func (d *DNS) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if target, ok := d.Resolve(host); ok {
		return d.dialer.DialContext(ctx, "tcp", target)
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
