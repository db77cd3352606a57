package k8s

import (
	"errors"
	"fmt"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// CrawlRequest is what the API hands the launcher to start one crawl: the
// CrawlJob spec and the crawler's crawl-config.json, which the launcher
// stores in the ConfigMap the spec names.
type CrawlRequest struct {
	Spec       trawlerv1.CrawlJobSpec
	ConfigJSON []byte
}

// ErrCrawlJobNotFound is wrapped by launcher errors when the crawl's
// CrawlJob does not exist (any more), so callers can treat stop and cancel
// of a gone crawl as done.
var ErrCrawlJobNotFound = errors.New("crawljob not found")

// MaxConfigMapBytes is what Kubernetes lets a ConfigMap's data hold.
const MaxConfigMapBytes = 1 << 20

// ErrConfigTooLarge is wrapped when a crawl config does not fit the
// ConfigMap a launch creates.
var ErrConfigTooLarge = errors.New("crawl config too large")

// CheckCrawlConfigSize reports, wrapping ErrConfigTooLarge, a
// crawl-config.json that Kubernetes would refuse to store.
func CheckCrawlConfigSize(configJSON []byte) error {
	if n := len(ConfigMapKey) + len(configJSON); n > MaxConfigMapBytes {
		return fmt.Errorf("%w: the crawl config is %d bytes, more than the %d bytes a Kubernetes ConfigMap holds",
			ErrConfigTooLarge, n, MaxConfigMapBytes)
	}
	return nil
}
