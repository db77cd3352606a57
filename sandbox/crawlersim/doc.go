// Package crawlersim simulates a browsertrix-crawler container, of 0.11.x
// or of 1.x, without a browser. It reads what the real crawler reads (the
// `crawl` command line, CRAWL_ARGS, the mounted crawl config, CRAWL_ID,
// WEBHOOK_URL, STORE_*, its hostname) and speaks the crawler's Redis
// protocol: the same keys, JSON shapes, atomic queue scripts, statuses,
// exit codes and signal semantics (docs: shared/spec/crawler-protocol.md
// for 0.11, shared/spec/upstream-2026.md §0.3-0.5 and §3.1 for 1.x).
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
// # The two protocols
//
// The simulator speaks 1.x when its command line (CRAWL_ARGS included)
// carries a flag only crawler 1.x knows, --writePagesToRedis or
// --logBehaviorsToRedis: the operator passes them, in the 1.x CRAWL_ARGS,
// to crawlers of 1.x channels only. Otherwise it speaks 0.11. Both read
// the config file --config names (0.11 gets /tmp/crawl-config.json, 1.x
// /tmp/config/crawl-config.json, the ConfigMap's folder) and both do
// everything the rest of this comment says: the queue, :d, :f, :s,
// :size, :status, :stopping, :stopone, the error lines of
// --logErrorsToRedis in <id>:e, crawls-done, exit codes and signals.
// 1.x adds:
//
//   - --workers on the command line (1.x's CRAWL_ARGS leave it out);
//   - <id>:pages: with --writePagesToRedis, one JSON record per finished
//     page, LPUSHed when the page is marked finished or failed: id (a new
//     UUID), url, title, loadState (4 for a page that loaded, 0 for one
//     that failed, including one that answered an HTTP error, which the
//     simulator counts as failed in both protocols), ts (when the page
//     started), mime (text/html), status (200, or the error status; none
//     when there was no response), depth, favIconUrl (the origin's
//     /favicon.ico), seed (true at depth 0) and filename;
//   - <id>:nextWacz: at the start of each run, HSET <hostname> to the
//     name the run's WACZ will be uploaded under (STORE_FILENAME
//     interpolated then), which page records name as their filename;
//   - <id>:canceled: checked at the start, before every page and before
//     packaging; when it is "1" the process exits 0 at once, writing no
//     final status and packaging and uploading nothing (a fast cancel).
//
// The operator's own lines about crawler exits (context k8s) are the
// operator's, not the simulator's. Not simulated for 1.x: behaviour
// lines (<id>:b: no behaviours run), page retries, pause (<id>:paused)
// and seed files.
//
// # Simulator options
//
// Options travel as --sim.* flags, normally through CRAWL_ARGS (Browsertrix
// appends its crawler_extra_args there). The first ten shape the
// synthetic site and can be set per seed with the query parameter named
// in their line, e.g.
// https://example.com/?sim-pages=50&sim-fail=0.1&sim-status-rx=/sim/7$.
// "Page N" counts the pages this process started, from 1. Durations
// accept Go syntax or seconds, and all of them (including the crawler's
// own polls, limits and TTLs) are multiplied by sim.timeScale.
//
//	option                 default  meaning
//	sim.pages              20       pages in each seed's synthetic site (seed query: sim-pages)
//	sim.links              3        child links per page (seed query: sim-links)
//	sim.pageMs             100      milliseconds per page before scaling (seed query: sim-page-ms)
//	sim.fail               0        fraction of pages that fail, chosen by URL hash (seed query: sim-fail)
//	sim.bytes              50000    archive bytes per successful page (seed query: sim-bytes)
//	sim.httpError          0        fraction of pages that answer sim.httpStatus, chosen by URL hash (seed query: sim-http-error)
//	sim.httpStatus         500      HTTP error status (400-599) of those pages (seed query: sim-http-status)
//	sim.statusUrlRx        ""       pages whose URL matches answer sim.urlStatus (seed query: sim-status-rx)
//	sim.urlStatus          404      HTTP error status (400-599) of those pages (seed query: sim-url-status)
//	sim.noise              0        fraction of loaded pages that log a non-fatal error or warning line, by URL hash (seed query: sim-noise)
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
//	sim.exitAtPage         0        die with sim.exitCode once page N loaded and logged, before it is recorded: lock left held, no status write
//	sim.exitCode           1        exit code for sim.exitAtPage
//	sim.throwAtPage        0        throw after page N: failing/failed, exit 9
//	sim.fatalAtPage        0        logger.fatal during page N: exit 17
//	sim.browserCrashAtPage 0        browser disconnects during page N: page fails, interrupted, exit 11
//	sim.hangAtPage         0        freeze during page N: signals unanswered, only a kill ends it
//
// # Pages with HTTP errors, and other error lines
//
// A page that fails (sim.fail, sim.failUrlRx, sim.hangUrlRx) gets no
// response at all. A page picked by sim.httpError or sim.statusUrlRx (the
// pattern first) answers with its error status instead: its response
// record has that status and a small error page as body, it has a
// pages.jsonl line (load state 1, title "404 Not Found" and so on), and
// it counts as crawler 0.11 counts it: a failed page, in <id>:d and
// <id>:f, whose links are not followed. It logs, at error level, "Non-200
// Status Code, skipping page" with statusCode and url in its details. A
// page picked by sim.noise loads and counts as done, and logs one of the
// crawler's non-fatal lines (noise.go): "Behaviors timed out" at error
// level, or a warning about a subresource that answered 404 or about a
// slow load.
//
// A page's error lines reach <id>:e in the same Redis step that marks it
// finished or failed, so the lines of each page are there once even when
// the crawler dies half-way and crawls the page again after a restart.
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
