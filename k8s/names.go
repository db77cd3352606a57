// Package k8s holds trawler's Kubernetes vocabulary: the CrawlJob and
// ProfileJob resources (in apis/trawler/v1, with generated clients,
// listers and informers), the names, labels and annotations shared by the
// API and the operator, and the CRD manifests.
package k8s

import (
	"fmt"
	"strconv"
	"strings"
)

// Labels put on CrawlJobs and on every child the operator creates. The
// operator's informers select on them, so they are defined once here.
const (
	// LabelCrawl holds the crawl id on a CrawlJob and all its children.
	LabelCrawl = "crawl"
	// LabelRole tells what an object is: RoleJob, RoleCrawler, RoleRedis or
	// RoleBrowser.
	LabelRole = "role"
	// LabelOrg holds the organisation id; the org concurrency limit selects
	// on it.
	LabelOrg = "btrix.org"
	// LabelUser holds the id of the user who started the crawl.
	LabelUser = "btrix.user"
	// LabelCrawlConfig holds the workflow id.
	LabelCrawlConfig = "btrix.crawlconfig"
	// LabelBrowser holds the profile browser id on a ProfileJob and its pod.
	LabelBrowser = "browser"
	// LabelProfile is "1" on ProfileJobs, as upstream marks them.
	LabelProfile = "btrix.profile"
	// LabelBaseProfile holds the id of the profile a browser was launched
	// from, when it was; the API reads it back when the profile is saved.
	LabelBaseProfile = "btrix.baseprofile"
	// LabelInstance holds the crawler instance index on crawler pods and PVCs.
	LabelInstance = "trawler.dev/instance"
)

// Values of LabelRole.
const (
	RoleJob     = "job"
	RoleCrawler = "crawler"
	RoleRedis   = "redis"
	RoleBrowser = "browser"
)

// Finalizer is put on every CrawlJob at creation so the operator can tear
// its children down in order and record the final state before it goes.
const Finalizer = "trawler.dev/crawljob-finalizer"

// ConfigMapKey is the key of the crawl config JSON in a crawl's ConfigMap;
// the crawler mounts it at /tmp/crawl-config.json.
const ConfigMapKey = "crawl-config.json"

// CrawlJobName is the name of the CrawlJob of a crawl.
func CrawlJobName(crawlID string) string { return "crawljob-" + crawlID }

// CrawlConfigMapName is the name of the ConfigMap holding a crawl's config.
func CrawlConfigMapName(crawlID string) string { return "crawl-config-" + crawlID }

// CrawlerName is the name of crawler instance i of a crawl. It is both the
// pod and its PVC name, and the pod's hostname, which the crawler uses as
// its instance id in Redis.
func CrawlerName(crawlID string, i int) string {
	return fmt.Sprintf("crawl-%s-%d", crawlID, i)
}

// RedisName is the name of a crawl's Redis pod and PVC, and its hostname.
func RedisName(crawlID string) string { return "redis-" + crawlID }

// Subdomains of crawl pods: the headless Services (the Helm chart creates
// them) that give pods stable DNS names through hostname + subdomain.
const (
	CrawlerSubdomain = "crawler"
	RedisSubdomain   = "redis"
	BrowserSubdomain = "browser"
)

// RedisURL is the URL of a crawl's Redis, by which crawlers, the operator
// and the API all reach it: its pod's DNS name in the crawler namespace.
func RedisURL(crawlID, namespace, clusterDomain string) string {
	return fmt.Sprintf("redis://%s.%s.%s.svc.%s/0", RedisName(crawlID), RedisSubdomain, namespace, clusterDomain)
}

// ProfileJobName is the name of the ProfileJob of a profile browser.
func ProfileJobName(browserID string) string { return "profilejob-" + browserID }

// BrowserPodName is the name of a profile browser's pod.
func BrowserPodName(browserID string) string { return "browser-" + browserID }

// BrowserAPIPort is the port of the profile browser's HTTP API
// (browsertrix-crawler's create-login-profile --interactive).
const BrowserAPIPort = 9223

// BrowserURL is the base URL of a profile browser pod's HTTP API, by its
// pod's DNS name in the crawler namespace.
func BrowserURL(browserID, namespace, clusterDomain string) string {
	return fmt.Sprintf("http://%s.%s.%s.svc.%s:%d", BrowserPodName(browserID), BrowserSubdomain, namespace, clusterDomain, BrowserAPIPort)
}

// CrawlerIndex returns the instance index of a crawler pod or PVC name of
// the given crawl, and false if the name is not one.
func CrawlerIndex(crawlID, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "crawl-"+crawlID+"-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return 0, false
	}
	return i, true
}

// PriorityClassName is the PriorityClass of crawler instance i: instance 0
// of any crawl outranks instance 1 of another, and so on.
func PriorityClassName(i int) string { return fmt.Sprintf("crawl-instance-%d", i) }
