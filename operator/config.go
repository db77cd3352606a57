// Package operator turns each CrawlJob into crawler pods, their PVCs and a
// per-crawl Redis pod, and each ProfileJob into one browser pod. It is a
// plain client-go controller in the sample-controller shape: informers feed
// rate-limited workqueues (CrawlJobs and ProfileJobs, and a lane of its own
// for CrawlJobs whose progress alone changed, progressqueue.go), handlers
// only enqueue the owning job, and one sync per CrawlJob (sync.go) reads as
// named steps. What a CrawlJob should have and show is worked out by pure
// functions. decide (decide.go) returns a plan (plan.go): the state
// transitions to ask the store for, the children to have, what to assert
// in Redis, when to look again and the few facts only it knows; its rules
// are in admission.go (spec problems, the org concurrency gate),
// activity.go, scale.go, running.go, crashloop.go, teardown.go and
// protocolv1.go (what only crawlers of the 1.x protocol get: the fast
// cancel and the lines about their exits).
// desired.go renders the child pods and PVCs, and status.go's crawlStatus
// assembles the status, once per sync, from the job, the plan and what
// the pass observed, and says how urgently it must be written. apply.go
// converges the children and statuswrite.go writes the status as a merge
// patch of what changed (statuspatch.go), a state change at once and
// progress at most once per stats interval and within one global budget,
// and hands the crawl document's progress to a writer that batches every
// crawl's (progressstore.go). A pass waits for the store's answer to its
// state transitions only briefly (transitions.go), so a slow database
// never holds the workers. A per-crawl poller
// (poller.go) reads the crawl's Redis on a short timer so a crawler's
// change reaches the status within a second, without ever blocking a
// worker. backgroundtasks.go runs what a sync starts and does not wait
// for: the post-crawl tasks (posttasks.go), the crawlStarted webhook
// notice (startednotice.go) and the report of why the operator failed a
// crawl, with its crawler pods' last log lines (crawllogs.go).
// podusage.go reads the pods' usage, release.go ends a finished job,
// deps.go names what the operator consumes. execquota.go counts the
// crawler pods' seconds for the execution-time quotas, and autopause.go
// charges them and pauses a crawl whose org is over a quota.
//
// The crawl document in MongoDB is the source of truth for the crawl state;
// the operator moves it with compare-and-set transitions through the
// CrawlStore it is given.
package operator

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trawlerhq/trawler/k8s"
)

// Config holds everything the operator needs besides its clients. main
// fills it from the settings table (config.go), the one home of the
// defaults; New rejects a config that leaves a required field unset.
type Config struct {
	// Namespace is the crawler namespace: CrawlJobs, ProfileJobs, their
	// pods, PVCs and ConfigMaps all live there.
	Namespace string
	// ClusterDomain is the cluster DNS suffix used in Redis URLs.
	ClusterDomain string
	// MaxCrawlScale is the largest allowed spec.scale; PriorityClasses
	// crawl-instance-0 .. MaxCrawlScale-1 exist for it.
	MaxCrawlScale int

	// CrawlerChannels are the crawler images crawls choose by
	// spec.crawlerChannel. CrawlerImage runs the profile browsers, and
	// the crawls when there are no channels; CrawlerPullPolicy is the pull
	// policy of channels that set none.
	CrawlerChannels   k8s.CrawlerChannels
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
	TerminationGraceSeconds int64

	// CrawlerProxies are the configured proxies crawls and profile
	// browsers choose by spec.proxyId, read anew when they change (nil:
	// none). ProxyMatchHosts says that the chart configured matchHosts, so
	// every crawler gets the proxies' mounts and host-proxies.json.
	CrawlerProxies  *k8s.ProxySource
	ProxyMatchHosts bool

	// SocksProxyHost, when set, sends crawler and profile browsers through
	// this SOCKS5 proxy, at SocksProxyPort (0: 9050, Tor's).
	SocksProxyHost string
	SocksProxyPort int

	// RedisDialer, when set, dials every crawl Redis (tests resolve the
	// sandbox's cluster DNS with it). Nil in production.
	RedisDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// RedisHook, when set, is added to every crawl Redis client
	// (crawlredis.NewMetrics).
	RedisHook redis.Hook
	// RedisPollInterval is how often a running crawl's Redis is read
	// while it changes.
	RedisPollInterval time.Duration
	// RedisIdlePollInterval is the slowest a crawl's Redis is read: a
	// crawl whose Redis shows nothing new for a second is read less and
	// less often, down to this pace; a pod event or a control wakes it.
	// Zero reads it at RedisPollInterval always.
	RedisIdlePollInterval time.Duration
	// StatsInterval is the least time between two writes of a crawl's
	// progress alone (pages, size, the pod view) to its status and its
	// document; a state change is written at once.
	StatsInterval time.Duration
	// RedisTimeout bounds every Redis round trip.
	RedisTimeout time.Duration
	// RedisUnreachableGrace is how long a running crawl's Redis may be
	// unreachable before the crawl shows waiting_capacity.
	RedisUnreachableGrace time.Duration
	// StoreTimeout bounds every MongoDB call.
	StoreTimeout time.Duration
	// MetricsInterval is how often pod usage is read from metrics.k8s.io
	// (one List for the namespace) when the cluster serves it; 0 turns
	// usage off.
	MetricsInterval time.Duration

	// Resync is the informers' resync period, a safety net only.
	Resync time.Duration
	// Workers is the number of CrawlJob sync workers for state work.
	Workers int
	// ProgressWorkers is the number of CrawlJob sync workers for progress
	// alone (progressqueue.go).
	ProgressWorkers int
	// ProgressQPS is the global budget of progress syncs per second, each
	// making at most one status write, shared fairly by every crawl.
	ProgressQPS float64

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
	// CrashLoopRestarts fails a crawl whose crawler containers restarted
	// this many times, together, without a page done in between (0: never).
	// A crawler that exits with the crawler's fatal code fails it at once.
	// Neither applies to a crawl asked to stop (see crashLoop).
	CrashLoopRestarts int
	// PausedCrawlLimit ends a crawl paused this long without a resume as
	// stopped_pause_expired; zero is upstream's default, a week.
	PausedCrawlLimit time.Duration
	// ExecAccountingInterval is how often a running crawl's crawler-pod
	// seconds are counted and charged to its org (upstream's 60 s); the
	// quotas' automatic pauses are checked at the same pace.
	ExecAccountingInterval time.Duration
	// ExecIdleAccountingInterval is how often the org of an idle running
	// crawl (its Redis showed nothing new since its last count) is read
	// again, when it had no quota to enforce at the last read: no storage
	// or execution-time quota, not read-only. Such a crawl is not counted
	// while it stays idle, so idling writes nothing; the count that comes
	// (it changes, a crawler exits, a cancel, a new month, a quota on its
	// org) covers every second since the last. What waits is the number
	// shown. Zero, or less than ExecAccountingInterval, counts every crawl
	// at that pace.
	ExecIdleAccountingInterval time.Duration
	// MaxCrawlerRestarts fails a crawl once its crawler containers have
	// restarted this many times in all, however much they got done in
	// between (0: never).
	MaxCrawlerRestarts int
}

// validate reports the required fields that are unset.
func (c Config) validate() error {
	var missing []string
	check := func(unset bool, name string) {
		if unset {
			missing = append(missing, name)
		}
	}
	check(c.Namespace == "", "Namespace")
	check(c.ClusterDomain == "", "ClusterDomain")
	check(c.MaxCrawlScale <= 0, "MaxCrawlScale")
	check(c.CrawlerImage == "", "CrawlerImage")
	check(c.RedisImage == "", "RedisImage")
	check(c.CrawlerBrowsers <= 0, "CrawlerBrowsers")
	check(c.CrawlerCPU == nil && c.CrawlerCPUBase.IsZero(), "CrawlerCPUBase")
	check(c.CrawlerMemory == nil && c.CrawlerMemoryBase.IsZero(), "CrawlerMemoryBase")
	check(c.RedisMemory.IsZero(), "RedisMemory")
	check(c.CrawlerStorage.IsZero(), "CrawlerStorage")
	check(c.RedisStorage.IsZero(), "RedisStorage")
	check(c.TerminationGraceSeconds <= 0, "TerminationGraceSeconds")
	check(c.Workers <= 0, "Workers")
	check(c.ProgressWorkers <= 0, "ProgressWorkers")
	check(c.ProgressQPS <= 0, "ProgressQPS")
	check(c.SocksProxyPort < 0 || c.SocksProxyPort > 65535, "SocksProxyPort (0..65535)")
	check(c.CrashLoopRestarts < 0, "CrashLoopRestarts (>= 0)")
	check(c.MaxCrawlerRestarts < 0, "MaxCrawlerRestarts (>= 0)")
	check(c.ExecIdleAccountingInterval < 0, "ExecIdleAccountingInterval (>= 0)")
	for _, d := range []struct {
		v    time.Duration
		name string
	}{{c.RedisPollInterval, "RedisPollInterval"}, {c.StatsInterval, "StatsInterval"}, {c.RedisTimeout, "RedisTimeout"},
		{c.RedisUnreachableGrace, "RedisUnreachableGrace"}, {c.StoreTimeout, "StoreTimeout"},
		{c.Resync, "Resync"}, {c.DefaultTTL, "DefaultTTL"}, {c.RedisIdle, "RedisIdle"},
		{c.StartingTimeout, "StartingTimeout"}, {c.StuckPodTimeout, "StuckPodTimeout"},
		{c.ExecAccountingInterval, "ExecAccountingInterval"}} {
		check(d.v <= 0, d.name)
	}
	if len(missing) > 0 {
		return fmt.Errorf("operator: config lacks %s", strings.Join(missing, ", "))
	}
	return nil
}

// defaultSocksPort is the port of the SOCKS proxy when only its host is
// configured (Tor's).
const defaultSocksPort = 9050

// socksProxy returns the SOCKS proxy's host and port, and false when none
// is configured.
func (c Config) socksProxy() (string, string, bool) {
	if c.SocksProxyHost == "" {
		return "", "", false
	}
	port := c.SocksProxyPort
	if port == 0 {
		port = defaultSocksPort
	}
	return c.SocksProxyHost, strconv.Itoa(port), true
}

// crawlerChannel resolves a crawl's channel: its image, pull policy (the
// channel's, else CrawlerPullPolicy) and protocol. A channel no longer
// configured (removed since the crawl started) runs the default channel,
// so a configuration change never strands a crawl; without any channels
// it is CrawlerImage, speaking 0.11.
func (c Config) crawlerChannel(channel string) k8s.CrawlerChannel {
	ch, ok := c.CrawlerChannels.Lookup(channel)
	if !ok {
		ch, ok = c.CrawlerChannels.Lookup(k8s.DefaultChannel)
	}
	if !ok {
		return k8s.CrawlerChannel{ID: k8s.DefaultChannel, Image: c.CrawlerImage,
			ImagePullPolicy: c.CrawlerPullPolicy, Protocol: k8s.ProtocolV011}
	}
	if ch.ImagePullPolicy == "" {
		ch.ImagePullPolicy = c.CrawlerPullPolicy
	}
	if ch.Protocol == "" {
		ch.Protocol = k8s.ProtocolV011
	}
	return ch
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
