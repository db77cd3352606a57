// Package crawls holds the end-to-end tests of crawling through the REST
// API: crawl files, uploads, collections and browser profiles on a
// development stack the package's tests share; a MongoDB outage during a
// crawl; webhook delivery across a killed process; workflow state that
// never goes back; and `trawler dev` starting and stopping cleanly. It
// has no code besides its tests.
package crawls
