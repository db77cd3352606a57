// Package v1 holds the trawler.dev/v1 custom resources: CrawlJob, which asks
// the operator to run one crawl, and ProfileJob, which asks it to run one
// interactive profile browser.
//
// +k8s:deepcopy-gen=package
// +groupName=trawler.dev
package v1
