package k8s

import (
	"errors"

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
