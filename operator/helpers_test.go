package operator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// t0 is the creation time of test jobs.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const testID = "manual-20261130120000-abcdef123456"

// testConfig is the config every test starts from: the defaults of the
// settings table in ../config.go, as main passes them. It is the one place
// tests spell them; keep it in step with the table.
func testConfig() Config {
	return Config{
		Namespace:                  "crawlers",
		ClusterDomain:              "cluster.local",
		MaxCrawlScale:              3,
		CrawlerImage:               "webrecorder/browsertrix-crawler:latest",
		CrawlerPullPolicy:          "Always",
		RedisImage:                 "redis",
		RedisPullPolicy:            "IfNotPresent",
		CrawlerBrowsers:            2,
		CrawlerCPUBase:             resource.MustParse("900m"),
		CrawlerMemoryBase:          resource.MustParse("1024Mi"),
		CrawlerExtraCPU:            resource.MustParse("300m"),
		CrawlerExtraMemory:         resource.MustParse("256Mi"),
		RedisCPU:                   resource.MustParse("5m"),
		RedisMemory:                resource.MustParse("48Mi"),
		CrawlerStorage:             resource.MustParse("22Gi"),
		RedisStorage:               resource.MustParse("3Gi"),
		CrawlerLivenessPort:        6065,
		TerminationGraceSeconds:    600,
		RedisPollInterval:          250 * time.Millisecond,
		RedisIdlePollInterval:      3 * time.Second,
		StatsInterval:              2 * time.Second,
		RedisTimeout:               2 * time.Second,
		RedisUnreachableGrace:      10 * time.Second,
		StoreTimeout:               5 * time.Second,
		MetricsInterval:            30 * time.Second,
		Resync:                     30 * time.Second,
		Workers:                    48,
		ProgressWorkers:            8,
		ProgressQPS:                500,
		DefaultTTL:                 30 * time.Second,
		RedisIdle:                  60 * time.Second,
		StartingTimeout:            60 * time.Second,
		StuckPodTimeout:            60 * time.Second,
		CrashLoopRestarts:          5,
		MaxCrawlerRestarts:         20,
		ExecAccountingInterval:     60 * time.Second,
		ExecIdleAccountingInterval: 10 * time.Minute,
	}
}

// newJob returns a CrawlJob of testID created at t0, changed by the
// given functions.
func newJob(scale int32, fns ...func(*trawlerv1.CrawlJob)) *trawlerv1.CrawlJob {
	cj := &trawlerv1.CrawlJob{
		ObjectMeta: metav1.ObjectMeta{
			Name: k8s.CrawlJobName(testID), Namespace: "crawlers", UID: types.UID("uid-" + testID),
			CreationTimestamp: metav1.NewTime(t0), Generation: 1,
			Labels: map[string]string{k8s.LabelCrawl: testID, k8s.LabelOrg: "org1"},
		},
		Spec: trawlerv1.CrawlJobSpec{
			ID: testID, CID: "cid1", OID: "org1", UserID: "user1", Scale: scale,
			ConfigMap: k8s.CrawlConfigMapName(testID), StorageName: "default",
			StoragePath: "org1/", StoreFilename: "@ts-@hostsuffix.wacz",
		},
	}
	for _, f := range fns {
		f(cj)
	}
	return cj
}

func withStatus(f func(*trawlerv1.CrawlJobStatus)) func(*trawlerv1.CrawlJob) {
	return func(cj *trawlerv1.CrawlJob) { f(&cj.Status) }
}

func mtime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

// crawlerPodIn returns crawler pod i of the test crawl in a phase.
func crawlerPodIn(i int, phase corev1.PodPhase) *corev1.Pod {
	p := crawlerPod(newJob(1), testConfig(), i)
	p.UID = types.UID(p.Name + "-uid")
	p.Status.Phase = phase
	return p
}

func redisPodIn(phase corev1.PodPhase) *corev1.Pod {
	p := redisPod(newJob(1), testConfig())
	p.UID = types.UID(p.Name + "-uid")
	p.Status.Phase = phase
	return p
}

// pods builds the observed crawler pods from phases by index.
func pods(phases ...corev1.PodPhase) map[int]*corev1.Pod {
	m := map[int]*corev1.Pod{}
	for i, ph := range phases {
		if ph != "" {
			m[i] = crawlerPodIn(i, ph)
		}
	}
	return m
}

// reachable returns a reachable Redis state with the given instance
// statuses by index ("" = no field).
func reachable(statuses ...string) *redisState {
	r := &redisState{Reachable: true, Statuses: map[string]string{}, StopOne: map[string]bool{}}
	for i, s := range statuses {
		if s != "" {
			r.Statuses[k8s.CrawlerName(testID, i)] = s
		}
	}
	return r
}

func name(i int) string { return k8s.CrawlerName(testID, i) }
