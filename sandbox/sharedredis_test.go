package sandbox_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// TestSharedRedis runs three Redis pod stand-ins on two servers: each
// pod's name reaches a database of its own, in this process and through
// the resolver, and stops resolving when its pod stops; a pod run again
// under its name finds its keys.
func TestSharedRedis(t *testing.T) {
	ctx := context.Background()
	shared, err := sandbox.StartSharedRedis(ctx, t.TempDir(), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(shared.Stop)
	dns := kubelet.NewDNS("cluster.local")
	program := shared.Program(dns)
	// run starts pod name's stand-in and returns its host name and a stop.
	run := func(name string) (string, func()) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "crawlers"},
			Spec: corev1.PodSpec{Hostname: name, Subdomain: "redis"}}
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan int)
		go func() { done <- program(pctx, &kubelet.Container{Pod: pod, Hostname: name, Stdout: io.Discard}) }()
		host := name + ".redis.crawlers.svc.cluster.local"
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, ok := shared.Locate(host); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never resolved", host)
			}
			time.Sleep(5 * time.Millisecond)
		}
		stop := sync.OnceFunc(func() { cancel(); <-done })
		t.Cleanup(stop)
		return host, stop
	}
	client := func(host string, dial func(context.Context, string, string) (net.Conn, error)) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: host + ":6379", Dialer: dial, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	remote := sandbox.SharedRedisDialer(shared.ResolverURL())

	hosts := map[string]func(){}
	for _, name := range []string{"redis-a", "redis-b", "redis-c"} {
		host, stop := run(name)
		hosts[host] = stop
		if err := client(host, shared.Dial).Set(ctx, "crawls-done", name, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for host := range hosts {
		for _, dial := range []func(context.Context, string, string) (net.Conn, error){shared.Dial, remote} {
			got, err := client(host, dial).Get(ctx, "crawls-done").Result()
			if want := host[:len("redis-a")]; err != nil || got != want {
				t.Errorf("%s: crawls-done = %q, %v; want %q, its own", host, got, err, want)
			}
		}
	}

	host := "redis-a.redis.crawlers.svc.cluster.local"
	hosts[host]()
	var dnsErr *net.DNSError
	if err := client(host, remote).Ping(ctx).Err(); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("a stopped pod's name: ping = %v, want no such host", err)
	}
	run("redis-a")
	if got, err := client(host, shared.Dial).Get(ctx, "crawls-done").Result(); err != nil || got != "redis-a" {
		t.Errorf("the pod run again: crawls-done = %q, %v; want its own redis-a", got, err)
	}
}
