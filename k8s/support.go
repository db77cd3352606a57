package k8s

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Names of the objects every crawler and Redis pod reads from the crawler
// namespace. The Helm chart creates them in a real cluster;
// EnsureCrawlerSupport creates them in the sandbox (trawler dev, tests).
const (
	// SharedCrawlerConfigName holds the CRAWL_ARGS of 0.11 crawlers,
	// SharedCrawlerConfigV1Name those of 1.x crawlers: each protocol's
	// crawler knows its own flags.
	SharedCrawlerConfigName   = "shared-crawler-config"
	SharedCrawlerConfigV1Name = "shared-crawler-config-v1"
	SharedRedisConfName       = "shared-redis-conf"
)

// SharedCrawlerConfig is the shared config whose CRAWL_ARGS the crawlers
// of a protocol get.
func SharedCrawlerConfig(protocol string) string {
	if protocol == ProtocolV1 {
		return SharedCrawlerConfigV1Name
	}
	return SharedCrawlerConfigName
}

// DefaultStorageName names the storage the Helm chart (and trawler dev)
// always creates: where crawls of orgs without their own storage go.
const DefaultStorageName = "default"

// StorageSecretName is the Secret holding a storage's STORE_* variables.
func StorageSecretName(storage string) string { return "storage-" + storage }

// CrawlArgsOptions are the chart values that shape CRAWL_ARGS.
type CrawlArgsOptions struct {
	Workers         int    // crawler_browser_instances
	MaxPageLimit    int    // max_pages_per_crawl (0 = none)
	HealthCheckPort int    // crawler_liveness_port
	Extra           string // crawler_extra_args, e.g. simulator knobs
}

// CrawlArgs renders the 0.11 crawlers' CRAWL_ARGS as the 2023 chart did,
// minus the empty user-agent flags (the crawler would take `""`
// literally). It ends with --restartsOnError, spelled as crawler 0.11
// knows it.
func CrawlArgs(o CrawlArgsOptions) string {
	args := []string{
		"--workers", strconv.Itoa(max(o.Workers, 1)),
		"--sizeLimit", "10000000000", "--timeLimit", "18000",
		"--maxPageLimit", strconv.Itoa(o.MaxPageLimit),
		"--healthCheckPort", strconv.Itoa(o.HealthCheckPort),
		"--diskUtilization", "90", "--logging", "stats,behaviors,debug", "--text", "false",
		"--generateWACZ", "--collection", "thecrawl", "--screencastPort", "9037", "--logErrorsToRedis",
	}
	if o.Extra != "" {
		args = append(args, o.Extra)
	}
	return strings.Join(append(args, "--restartsOnError"), " ")
}

// CrawlArgsV1 renders the 1.x crawlers' CRAWL_ARGS as today's chart does
// (upstream-2026 §0.4): no --workers (the operator passes it on the
// command line), pages, errors and behaviour lines written to Redis, and
// --restartsOnError last.
func CrawlArgsV1(o CrawlArgsOptions) string {
	args := []string{
		"--sizeLimit", "10000000000", "--timeLimit", "18000",
		"--maxPageLimit", strconv.Itoa(o.MaxPageLimit),
		"--healthCheckPort", strconv.Itoa(o.HealthCheckPort),
		"--diskUtilization", "90", "--logging", "stats,behaviors,debug", "--text", "false",
		"--generateWACZ", "--collection", "thecrawl", "--screencastPort", "9037",
		"--writePagesToRedis", "--logErrorsToRedis", "--logBehaviorsToRedis",
	}
	if o.Extra != "" {
		args = append(args, o.Extra)
	}
	return strings.Join(append(args, "--restartsOnError"), " ")
}

// CrawlerSupport is what EnsureCrawlerSupport creates.
type CrawlerSupport struct {
	// CrawlArgs is the 0.11 crawlers' CRAWL_ARGS (see CrawlArgs),
	// CrawlArgsV1 the 1.x crawlers' (see CrawlArgsV1).
	CrawlArgs   string
	CrawlArgsV1 string
	// StorageName and Storage are the storage secret's name suffix and
	// its STORE_* variables.
	StorageName string
	Storage     map[string]string
}

// EnsureCrawlerSupport creates, in namespace ns, the shared crawler
// configs (CRAWL_ARGS of each protocol), the Redis configuration (AOF on the PVC, so a paused Redis
// keeps the crawl state) and the storage secret. Existing objects are left
// alone.
func EnsureCrawlerSupport(ctx context.Context, kube kubernetes.Interface, ns string, s CrawlerSupport) error {
	cms := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: SharedCrawlerConfigName}, Data: map[string]string{"CRAWL_ARGS": s.CrawlArgs}},
		{ObjectMeta: metav1.ObjectMeta{Name: SharedCrawlerConfigV1Name}, Data: map[string]string{"CRAWL_ARGS": s.CrawlArgsV1}},
		{ObjectMeta: metav1.ObjectMeta{Name: SharedRedisConfName}, Data: map[string]string{"redis.conf": "appendonly yes\ndir /data\n"}},
	}
	for _, cm := range cms {
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating configmap %s: %w", cm.Name, err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: StorageSecretName(s.StorageName)}, StringData: s.Storage}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating secret %s: %w", secret.Name, err)
	}
	return nil
}
