// Package operator turns each CrawlJob into crawler pods, their PVCs and a
// per-crawl Redis pod, and each ProfileJob into one browser pod. It is a
// plain client-go controller in the sample-controller shape: informers feed
// two rate-limited workqueues (CrawlJobs and ProfileJobs), handlers only
// enqueue the owning job, and one sync per CrawlJob (sync.go) reads as
// named steps. What a CrawlJob should have and show is decided by pure
// functions: decide.go (state, scale, what to assert in Redis), desired.go
// (the child pods and PVCs) and status.go (pod views, conditions); apply.go
// converges the children. A per-crawl poller (poller.go) reads the crawl's
// Redis on a short timer so a crawler's change reaches the status within a
// second, without ever blocking a worker; finish.go runs the post-crawl
// tasks.
//
// The crawl document in MongoDB is the source of truth for the crawl state;
// the operator moves it with compare-and-set transitions through the
// CrawlStore it is given.
package operator

import (
	"context"
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
	qty := func(v *resource.Quantity, def resource.Quantity) {
		if v.IsZero() {
			*v = def
		}
	}
	setIfZero(&c.Namespace, d.Namespace)
	setIfZero(&c.ClusterDomain, d.ClusterDomain)
	setIfZero(&c.CrawlerImage, d.CrawlerImage)
	setIfZero(&c.CrawlerPullPolicy, d.CrawlerPullPolicy)
	setIfZero(&c.RedisImage, d.RedisImage)
	setIfZero(&c.RedisPullPolicy, d.RedisPullPolicy)
	setIfZero(&c.SharedCrawlerConfigMap, d.SharedCrawlerConfigMap)
	setIfZero(&c.RedisConfConfigMap, d.RedisConfConfigMap)
	setUnlessPositive(&c.MaxCrawlScale, d.MaxCrawlScale)
	setUnlessPositive(&c.CrawlerBrowsers, d.CrawlerBrowsers)
	setUnlessPositive(&c.Workers, d.Workers)
	setUnlessPositive(&c.KubeQPS, d.KubeQPS)
	setUnlessPositive(&c.KubeBurst, d.KubeBurst)
	setUnlessPositive(&c.TerminationGraceSeconds, d.TerminationGraceSeconds)
	qty(&c.CrawlerCPUBase, d.CrawlerCPUBase)
	qty(&c.CrawlerMemoryBase, d.CrawlerMemoryBase)
	qty(&c.RedisCPU, d.RedisCPU)
	qty(&c.RedisMemory, d.RedisMemory)
	qty(&c.CrawlerStorage, d.CrawlerStorage)
	qty(&c.RedisStorage, d.RedisStorage)
	setIfZero(&c.RedisPollInterval, d.RedisPollInterval)
	setIfZero(&c.RedisTimeout, d.RedisTimeout)
	setIfZero(&c.RedisUnreachableGrace, d.RedisUnreachableGrace)
	setIfZero(&c.StoreTimeout, d.StoreTimeout)
	setIfZero(&c.Resync, d.Resync)
	setIfZero(&c.DefaultTTL, d.DefaultTTL)
	setIfZero(&c.RedisIdle, d.RedisIdle)
	setIfZero(&c.StartingTimeout, d.StartingTimeout)
	setIfZero(&c.StuckPodTimeout, d.StuckPodTimeout)
	return c
}

// setIfZero sets *v to def when it holds its zero value.
func setIfZero[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// setUnlessPositive sets *v to def unless it is positive.
func setUnlessPositive[T ~int | ~int64 | ~float32](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
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

// RestConfig returns a copy of base with the operator's client rate
// limits, for building the clients given to New.
func RestConfig(base *rest.Config, cfg Config) *rest.Config {
	cfg = cfg.withDefaults()
	rc := rest.CopyConfig(base)
	rc.QPS, rc.Burst = cfg.KubeQPS, cfg.KubeBurst
	rc.RateLimiter = nil
	return rc
}
