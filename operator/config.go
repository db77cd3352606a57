// Package operator turns each CrawlJob into crawler pods, their PVCs and a
// per-crawl Redis pod, and each ProfileJob into one browser pod. It is a
// plain client-go controller in the sample-controller shape: informers feed
// one rate-limited workqueue, handlers only enqueue the owning CrawlJob, and
// one sync per CrawlJob reads as named steps. Desired children and the
// status are computed by pure functions (desired.go, status.go); a
// per-crawl poller reads the crawl's Redis on a short timer so a crawler's
// change reaches the status within a second, without ever blocking a worker.
//
// The crawl document in MongoDB is the source of truth for the crawl state;
// the operator moves it with compare-and-set transitions through the
// CrawlStore it is given.
package operator

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/trawlerhq/trawler/k8s"
)

// Config holds everything the operator needs besides its clients. Zero
// values are replaced by the defaults of DefaultConfig in New.
type Config struct {
	// Namespace is the crawler namespace: CrawlJobs, ProfileJobs, their
	// pods, PVCs and ConfigMaps all live there.
	Namespace string
	// ClusterDomain is the cluster DNS suffix used in Redis URLs.
	ClusterDomain string
	// MaxCrawlScale is the largest allowed spec.scale; PriorityClasses
	// crawl-instance-0 .. MaxCrawlScale-1 exist for it.
	MaxCrawlScale int

	CrawlerImage      string
	CrawlerPullPolicy string
	RedisImage        string
	RedisPullPolicy   string

	// Crawler resources follow upstream's formula: base plus the extra per
	// browser for every browser beyond the first. CrawlerCPU or
	// CrawlerMemory, when set, replace the computed value.
	CrawlerBrowsers         int
	CrawlerCPUBase          resource.Quantity
	CrawlerMemoryBase       resource.Quantity
	CrawlerExtraCPU         resource.Quantity
	CrawlerExtraMemory      resource.Quantity
	CrawlerCPU              *resource.Quantity
	CrawlerMemory           *resource.Quantity
	RedisCPU                resource.Quantity
	RedisMemory             resource.Quantity
	CrawlerStorage          resource.Quantity
	RedisStorage            resource.Quantity
	StorageClass            string
	CrawlerLivenessPort     int
	CrawlerNodeType         string
	RedisNodeType           string
	SocksProxyHost          string
	SocksProxyPort          int
	TerminationGraceSeconds int64

	// SharedCrawlerConfigMap is envFrom'd into crawler pods; it carries
	// CRAWL_ARGS (ending in --restartsOnError).
	SharedCrawlerConfigMap string
	// RedisConfConfigMap holds redis.conf for the Redis pods.
	RedisConfConfigMap string

	// RedisDialer, when set, dials every crawl Redis (tests resolve the
	// sandbox's cluster DNS with it). Nil in production.
	RedisDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// RedisPollInterval is how often a running crawl's Redis is read.
	RedisPollInterval time.Duration
	// RedisTimeout bounds every Redis round trip.
	RedisTimeout time.Duration
	// RedisUnreachableGrace is how long a running crawl's Redis may be
	// unreachable before the crawl shows waiting_capacity.
	RedisUnreachableGrace time.Duration
	// StoreTimeout bounds every MongoDB call.
	StoreTimeout time.Duration
	// MetricsInterval is how often pod usage is read from metrics.k8s.io
	// (one List for the namespace) when the cluster serves it. Unlike the
	// other durations, 0 is not defaulted: it turns usage off.
	MetricsInterval time.Duration

	// Resync is the informers' resync period, a safety net only.
	Resync time.Duration
	// Workers is the number of CrawlJob sync workers.
	Workers int
	// KubeQPS and KubeBurst rate-limit the operator's API clients (see
	// RestConfig); client-go's defaults (5/10) would make creating a
	// hundred crawls take a minute.
	KubeQPS   float32
	KubeBurst int

	// DefaultTTL keeps a finished CrawlJob this long unless its spec says.
	DefaultTTL time.Duration
	// RedisIdle pauses a crawl's Redis pod after no crawler has been
	// active this long.
	RedisIdle time.Duration
	// StartingTimeout turns starting into waiting_capacity when no crawler
	// runs this long after creation.
	StartingTimeout time.Duration
	// StuckPodTimeout is how long after its grace period ended a
	// terminating pod is force-deleted (a lost node never confirms).
	StuckPodTimeout time.Duration
	// LogFailedCrawlLines, when > 0, logs that many lines of each pod's
	// default container when a crawl fails.
	LogFailedCrawlLines int
}

// DefaultConfig returns the operator defaults (upstream chart values).
func DefaultConfig() Config {
	return Config{
		Namespace:               "crawlers",
		ClusterDomain:           "cluster.local",
		MaxCrawlScale:           3,
		CrawlerImage:            "webrecorder/browsertrix-crawler:latest",
		CrawlerPullPolicy:       "Always",
		RedisImage:              "redis",
		RedisPullPolicy:         "IfNotPresent",
		CrawlerBrowsers:         2,
		CrawlerCPUBase:          resource.MustParse("900m"),
		CrawlerMemoryBase:       resource.MustParse("1024Mi"),
		CrawlerExtraCPU:         resource.MustParse("300m"),
		CrawlerExtraMemory:      resource.MustParse("256Mi"),
		RedisCPU:                resource.MustParse("5m"),
		RedisMemory:             resource.MustParse("48Mi"),
		CrawlerStorage:          resource.MustParse("22Gi"),
		RedisStorage:            resource.MustParse("3Gi"),
		CrawlerLivenessPort:     6065,
		TerminationGraceSeconds: 600,
		SharedCrawlerConfigMap:  k8s.SharedCrawlerConfigName,
		RedisConfConfigMap:      k8s.SharedRedisConfName,
		RedisPollInterval:       300 * time.Millisecond,
		RedisTimeout:            time.Second,
		RedisUnreachableGrace:   10 * time.Second,
		StoreTimeout:            5 * time.Second,
		MetricsInterval:         30 * time.Second,
		Resync:                  10 * time.Second,
		Workers:                 16,
		KubeQPS:                 200,
		KubeBurst:               400,
		DefaultTTL:              30 * time.Second,
		RedisIdle:               60 * time.Second,
		StartingTimeout:         60 * time.Second,
		StuckPodTimeout:         60 * time.Second,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	str := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	dur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	qty := func(v *resource.Quantity, def resource.Quantity) {
		if v.IsZero() {
			*v = def
		}
	}
	str(&c.Namespace, d.Namespace)
	str(&c.ClusterDomain, d.ClusterDomain)
	str(&c.CrawlerImage, d.CrawlerImage)
	str(&c.CrawlerPullPolicy, d.CrawlerPullPolicy)
	str(&c.RedisImage, d.RedisImage)
	str(&c.RedisPullPolicy, d.RedisPullPolicy)
	str(&c.SharedCrawlerConfigMap, d.SharedCrawlerConfigMap)
	str(&c.RedisConfConfigMap, d.RedisConfConfigMap)
	if c.MaxCrawlScale <= 0 {
		c.MaxCrawlScale = d.MaxCrawlScale
	}
	if c.CrawlerBrowsers <= 0 {
		c.CrawlerBrowsers = d.CrawlerBrowsers
	}
	if c.Workers <= 0 {
		c.Workers = d.Workers
	}
	if c.KubeQPS <= 0 {
		c.KubeQPS = d.KubeQPS
	}
	if c.KubeBurst <= 0 {
		c.KubeBurst = d.KubeBurst
	}
	if c.TerminationGraceSeconds <= 0 {
		c.TerminationGraceSeconds = d.TerminationGraceSeconds
	}
	qty(&c.CrawlerCPUBase, d.CrawlerCPUBase)
	qty(&c.CrawlerMemoryBase, d.CrawlerMemoryBase)
	qty(&c.RedisCPU, d.RedisCPU)
	qty(&c.RedisMemory, d.RedisMemory)
	qty(&c.CrawlerStorage, d.CrawlerStorage)
	qty(&c.RedisStorage, d.RedisStorage)
	dur(&c.RedisPollInterval, d.RedisPollInterval)
	dur(&c.RedisTimeout, d.RedisTimeout)
	dur(&c.RedisUnreachableGrace, d.RedisUnreachableGrace)
	dur(&c.StoreTimeout, d.StoreTimeout)
	dur(&c.Resync, d.Resync)
	dur(&c.DefaultTTL, d.DefaultTTL)
	dur(&c.RedisIdle, d.RedisIdle)
	dur(&c.StartingTimeout, d.StartingTimeout)
	dur(&c.StuckPodTimeout, d.StuckPodTimeout)
	return c
}

// crawlerResources returns the crawler container's cpu and memory per
// upstream's formula: base + (browsers-1) * extra, unless overridden.
func (c Config) crawlerResources() (cpu, mem resource.Quantity) {
	n := int64(max(c.CrawlerBrowsers-1, 0))
	if c.CrawlerCPU != nil {
		cpu = c.CrawlerCPU.DeepCopy()
	} else {
		cpu = *resource.NewMilliQuantity(c.CrawlerCPUBase.MilliValue()+n*c.CrawlerExtraCPU.MilliValue(), resource.DecimalSI)
	}
	if c.CrawlerMemory != nil {
		mem = c.CrawlerMemory.DeepCopy()
	} else {
		mem = *resource.NewQuantity(c.CrawlerMemoryBase.Value()+n*c.CrawlerExtraMemory.Value(), resource.BinarySI)
	}
	return cpu, mem
}

// RedisURL is the URL of a crawl's Redis, as crawlers and the API use it.
func (c Config) RedisURL(crawlID string) string {
	return fmt.Sprintf("redis://%s.redis.%s.svc.%s/0", k8s.RedisName(crawlID), c.Namespace, c.ClusterDomain)
}

// RestConfig returns a copy of base with the operator's client rate
// limits, for building the clients given to New.
func RestConfig(base *rest.Config, cfg Config) *rest.Config {
	cfg = cfg.withDefaults()
	rc := rest.CopyConfig(base)
	rc.QPS, rc.Burst = cfg.KubeQPS, cfg.KubeBurst
	rc.RateLimiter = nil
	return rc
}
