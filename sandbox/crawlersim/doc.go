// Package crawlersim simulates a browsertrix-crawler 0.11.x container
// without a browser. It reads what the real crawler reads (the `crawl`
// command line, CRAWL_ARGS, the mounted crawl config, CRAWL_ID,
// WEBHOOK_URL, STORE_*, its hostname) and speaks the crawler's Redis
// protocol: the same keys, JSON shapes, atomic queue scripts, statuses,
// exit codes and signal semantics (docs: shared/spec/crawler-protocol.md).
// Pages come from a deterministic synthetic web (see web.go) and leave
// real WARC/1.1 records on the pod volume: a request and a response for
// each page and, once per collection, for the stylesheet and the image
// every page embeds from its origin (static.go), so that each WACZ
// replays on its own. The post-crawl step packages them into a WACZ
// 1.1.1 (WARCs, a CDXJ index keyed as Python's surt keys URLs, pages,
// crawl logs, datapackage.json and its digest) and PUTs it to
// STORE_ENDPOINT_URL + STORE_PATH + the interpolated STORE_FILENAME with
// the STORE_* keys, then sends the crawls-done message with its real
// sha256 and size.
//
// Run is the crawler as a Go function; Program adapts it to the sandbox
// kubelet.
//
// # Simulator options
//
// Options travel as --sim.* flags, normally through CRAWL_ARGS (Browsertrix
// appends its crawler_extra_args there). The first five can be set per
// seed with query parameters of the seed URL, with exactly these names:
// sim-pages, sim-links, sim-page-ms, sim-fail, sim-bytes, e.g.
// https://example.com/?sim-pages=50&sim-fail=0.1. "Page N" counts the
// pages this process started, from 1. Durations accept Go syntax or
// seconds, and all of them (including the crawler's own polls, limits and
// TTLs) are multiplied by sim.timeScale.
//
//	option                 default  meaning
//	sim.pages              20       pages in each seed's synthetic site (seed query: sim-pages)
//	sim.links              3        child links per page (seed query: sim-links)
//	sim.pageMs             100      milliseconds per page before scaling (seed query: sim-page-ms)
//	sim.fail               0        fraction of pages that fail, chosen by URL hash (seed query: sim-fail)
//	sim.bytes              50000    archive bytes per successful page (seed query: sim-bytes)
//	sim.timeScale          1        multiplies every duration
//	sim.pageJitter         0.3      page time varies by up to ± this fraction, fixed per URL
//	sim.outlinks           1        links per page that leave the seed's prefix
//	sim.bootDelay          1s       bootstrap time before connecting to Redis
//	sim.pendingWait        0.5s     time in pending-wait (skipped when interrupted)
//	sim.waczTime           0.5s     time in generate-wacz
//	sim.uploadTime         0.5s     time in uploading-wacz
//	sim.failWindow         60s      TTL of <id>:status:failcount:<uid>
//	sim.failUrlRx          ""       pages whose URL matches fail
//	sim.hangUrlRx          ""       pages whose URL matches take maxPageTime and fail
//	sim.upload             s3       s3: PUT the WACZ, then send crawls-done; webhook: send only; none: act as if STORE_ENDPOINT_URL were unset
//	sim.faultRuns          0        faults below apply only while the restart count is below this (0: always)
//	sim.fatalAtStart       false    exit 17 right after parsing arguments
//	sim.redisUnreachable   false    never connect to Redis (waits forever)
//	sim.ignoreSigterm      false    only log signals
//	sim.exitAtPage         0        die during page N with sim.exitCode, lock left held, no status write
//	sim.exitCode           1        exit code for sim.exitAtPage
//	sim.throwAtPage        0        throw after page N: failing/failed, exit 9
//	sim.fatalAtPage        0        logger.fatal during page N: exit 17
//	sim.browserCrashAtPage 0        browser disconnects during page N: page fails, interrupted, exit 11
//	sim.hangAtPage         0        freeze during page N: signals unanswered, only a kill ends it
//
// # Browser profiles
//
// --profile @<key> is downloaded from STORE_ENDPOINT_URL + STORE_PATH +
// <key> when the browser would launch (after the seeds are queued); a
// profile that is missing or not a profile archive makes the crawl fail as
// the crawler's does. A container whose command is create-login-profile
// is the profile browser of a ProfileJob: it serves the backend's calls
// on port 9223 of the pod and saves the origins it visited as a profile
// tar.gz (profilebrowser.go).
//
// # What is not simulated
//
// The /healthz server, the screencast port, --diskUtilization (the sandbox
// disk is the host's), saved-state YAML files, sitemaps, WACZ signing,
// and any page resource but the HTML, a stylesheet and an image (the same
// two for every page of an origin). A page adds exactly sim.bytes to its
// WARC file (the padding is random text in an HTML comment), or the least
// its records take when that is more: about 1 kB, 3 kB for the first page
// of an origin.
package crawlersim
