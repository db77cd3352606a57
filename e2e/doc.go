// Package e2e holds trawler's end-to-end tests of the dashboard: `trawler
// dev` (the real binary, its sandbox cluster, operator, crawler simulator,
// MongoDB-wire server and Redis) driven by headless Chromium, and /metrics
// scraped after a crawl. It has no code besides its tests. The other
// end-to-end tests are in its subfolders: crawls/ (crawling through the
// API) and release/ (the Helm chart and compose setup); e2etest/ is what
// they all share.
//
// The tests share one stack and one browser for the package; with
// TRAWLER_E2E_URL set they use that running `make dev` instead of starting
// one. Screenshots
// go to $TRAWLER_ARTIFACTS/e2e (default: the system temp folder's
// trawler-artifacts/e2e); the tests print the folder.
package e2e
