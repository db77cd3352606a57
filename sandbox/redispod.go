package sandbox

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// RedisImage is the image name the Redis stand-in is registered under; by
// the kubelet's lookup rules it also serves "redis:7", "docker.io/library/redis"
// and any other image whose repository's last element is "redis".
const RedisImage = "redis"

// redisPort is the port Redis pods serve, as the per-crawl Redis URLs say.
const redisPort = 6379

// RedisProgram is the Redis stand-in: each run starts a real redis-server
// on the pod's address and port 6379, with its files in the pod's /data
// mount when there is one (else a temporary folder) and the append-only
// file on, so the data survives the pod being deleted and created again
// on the same PVC. While the server runs, the pod's DNS names
// (<hostname>.<subdomain>.<ns>.svc[.<domain>]) point to it in dns. The
// container's args are ignored: upstream's redis.conf sets just these
// options (appendonly yes, dir /data). The server's log is the container's.
func RedisProgram(dns *kubelet.DNS) kubelet.Program {
	return func(ctx context.Context, c *kubelet.Container) int {
		dir := c.Mounts["/data"]
		if dir == "" {
			tmp, err := os.MkdirTemp("", "sandbox-redis-")
			if err != nil {
				fmt.Fprintf(c.Stdout, "creating data folder: %v\n", err)
				return 1
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		r, err := newRedis(c.PodIP, redisPort, dir, "--appendonly", "yes", "--save", "")
		if err != nil {
			fmt.Fprintln(c.Stdout, err)
			return 1
		}
		r.Stdout = c.Stdout
		// Redis exits promptly on SIGTERM after flushing the append-only file.
		defer func() { _ = r.Stop(2 * time.Second) }()
		if err := r.Restart(ctx); err != nil {
			if ctx.Err() != nil {
				return 0
			}
			fmt.Fprintln(c.Stdout, err)
			return 1
		}
		for _, name := range dns.PodNames(c.Hostname, c.Pod.Spec.Subdomain, c.Pod.Namespace) {
			dns.Register(name, r.Addr())
			defer dns.Unregister(name, r.Addr())
		}
		select {
		case <-ctx.Done():
			return 0
		case <-r.Done():
			fmt.Fprintln(c.Stdout, "redis-server exited")
			return 1
		}
	}
}
