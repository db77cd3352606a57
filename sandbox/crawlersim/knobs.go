package crawlersim

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// siteKnobs shape one seed's synthetic site. Defaults come from --sim.*
// options; each seed URL may override them with its query parameters.
type siteKnobs struct {
	pages  int     // pages in the site, the seed included
	links  int     // child links per page
	pageMs float64 // unscaled milliseconds per page
	fail   float64 // fraction of pages that fail to load
	bytes  int64   // archive bytes per successful page

	httpError  float64        // fraction of pages that answer httpStatus
	httpStatus int            // HTTP error status of those pages
	statusURL  *regexp.Regexp // pages that answer urlStatus
	urlStatus  int            // HTTP error status of the statusURL pages
	noise      float64        // fraction of loaded pages that log a non-fatal line
}

// knobs are the simulator's own settings and injected faults.
type knobs struct {
	site        siteKnobs
	timeScale   float64
	pageJitter  float64
	outlinks    int
	bootDelay   time.Duration
	pendingWait time.Duration
	waczTime    time.Duration
	uploadTime  time.Duration
	failWindow  time.Duration
	failURL     *regexp.Regexp
	hangURL     *regexp.Regexp
	upload      string

	faultRuns          int
	fatalAtStart       bool
	redisUnreachable   bool
	ignoreSigterm      bool
	exitAtPage         int
	exitCode           int
	throwAtPage        int
	fatalAtPage        int
	browserCrashAtPage int
	hangAtPage         int
}

// knobDef is one --sim.* option: its name, default and meaning.
type knobDef struct {
	name, def, help string
	set             func(k *knobs, v string) error
}

// knobTable lists every --sim.* option. The site knobs come first: the
// seed-URL query parameters of seedParams override them per seed. doc.go
// documents the same table (a test keeps them in step).
var knobTable = []knobDef{
	{"sim.pages", "20", "pages in each seed's synthetic site (seed query: sim-pages)", intKnob(func(k *knobs) *int { return &k.site.pages })},
	{"sim.links", "3", "child links per page (seed query: sim-links)", intKnob(func(k *knobs) *int { return &k.site.links })},
	{"sim.pageMs", "100", "milliseconds per page before scaling (seed query: sim-page-ms)", floatKnob(func(k *knobs) *float64 { return &k.site.pageMs })},
	{"sim.fail", "0", "fraction of pages that fail, chosen by URL hash (seed query: sim-fail)", floatKnob(func(k *knobs) *float64 { return &k.site.fail })},
	{"sim.bytes", "50000", "archive bytes per successful page (seed query: sim-bytes)", func(k *knobs, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		k.site.bytes = n
		return err
	}},
	{"sim.httpError", "0", "fraction of pages that answer with sim.httpStatus, chosen by URL hash (seed query: sim-http-error)", floatKnob(func(k *knobs) *float64 { return &k.site.httpError })},
	{"sim.httpStatus", "500", "HTTP error status (400-599) of the sim.httpError pages (seed query: sim-http-status)", statusKnob(func(k *knobs) *int { return &k.site.httpStatus })},
	{"sim.statusUrlRx", "", "pages whose URL matches answer with sim.urlStatus (seed query: sim-status-rx)", rxKnob(func(k *knobs) **regexp.Regexp { return &k.site.statusURL })},
	{"sim.urlStatus", "404", "HTTP error status (400-599) of the sim.statusUrlRx pages (seed query: sim-url-status)", statusKnob(func(k *knobs) *int { return &k.site.urlStatus })},
	{"sim.noise", "0", "fraction of loaded pages that log one of the crawler's non-fatal error or warning lines, chosen by URL hash (seed query: sim-noise)", floatKnob(func(k *knobs) *float64 { return &k.site.noise })},
	{"sim.timeScale", "1", "multiplies every duration: sim phases, page times, polls, limits, lock and failcount TTLs", floatKnob(func(k *knobs) *float64 { return &k.timeScale })},
	{"sim.pageJitter", "0.3", "page time varies by up to ± this fraction, fixed per URL", floatKnob(func(k *knobs) *float64 { return &k.pageJitter })},
	{"sim.outlinks", "1", "links per page that leave the seed's prefix (same host, subdomain, other site, in turn)", intKnob(func(k *knobs) *int { return &k.outlinks })},
	{"sim.bootDelay", "1s", "bootstrap time before connecting to Redis", durKnob(func(k *knobs) *time.Duration { return &k.bootDelay })},
	{"sim.pendingWait", "0.5s", "time in pending-wait after crawling (skipped when interrupted)", durKnob(func(k *knobs) *time.Duration { return &k.pendingWait })},
	{"sim.waczTime", "0.5s", "time spent in generate-wacz", durKnob(func(k *knobs) *time.Duration { return &k.waczTime })},
	{"sim.uploadTime", "0.5s", "time spent in uploading-wacz", durKnob(func(k *knobs) *time.Duration { return &k.uploadTime })},
	{"sim.failWindow", "60s", "TTL of <id>:status:failcount:<uid>", durKnob(func(k *knobs) *time.Duration { return &k.failWindow })},
	{"sim.failUrlRx", "", "pages whose URL matches fail", rxKnob(func(k *knobs) **regexp.Regexp { return &k.failURL })},
	{"sim.hangUrlRx", "", "pages whose URL matches take maxPageTime and fail", rxKnob(func(k *knobs) **regexp.Regexp { return &k.hangURL })},
	{"sim.upload", "s3", "s3: PUT the WACZ to STORE_ENDPOINT_URL, then push crawls-done; webhook: push only; none: act as if STORE_ENDPOINT_URL were unset", func(k *knobs, v string) error {
		if v != "s3" && v != "webhook" && v != "none" {
			return fmt.Errorf("want s3, webhook or none")
		}
		k.upload = v
		return nil
	}},
	{"sim.faultRuns", "0", "faults below apply only while the container restart count is below this (0: always)", intKnob(func(k *knobs) *int { return &k.faultRuns })},
	{"sim.fatalAtStart", "false", "exit 17 right after parsing arguments", boolKnob(func(k *knobs) *bool { return &k.fatalAtStart })},
	{"sim.redisUnreachable", "false", "never manage to connect to Redis (waits forever, like a missing Redis pod)", boolKnob(func(k *knobs) *bool { return &k.redisUnreachable })},
	{"sim.ignoreSigterm", "false", "only log signals, so the grace period runs out and the kubelet kills", boolKnob(func(k *knobs) *bool { return &k.ignoreSigterm })},
	{"sim.exitAtPage", "0", "die with sim.exitCode once the Nth page of this process loaded and logged, before it is recorded (lock left held, no status write)", intKnob(func(k *knobs) *int { return &k.exitAtPage })},
	{"sim.exitCode", "1", "exit code for sim.exitAtPage", intKnob(func(k *knobs) *int { return &k.exitCode })},
	{"sim.throwAtPage", "0", "throw from the crawl after the Nth page: failing/failed, exit 9", intKnob(func(k *knobs) *int { return &k.throwAtPage })},
	{"sim.fatalAtPage", "0", "logger.fatal during the Nth page: exit 17, no status write", intKnob(func(k *knobs) *int { return &k.fatalAtPage })},
	{"sim.browserCrashAtPage", "0", "browser disconnects during the Nth page: page fails, interrupted, exit 11", intKnob(func(k *knobs) *int { return &k.browserCrashAtPage })},
	{"sim.hangAtPage", "0", "freeze during the Nth page: no more Redis traffic, signals unanswered, only a kill ends it", intKnob(func(k *knobs) *int { return &k.hangAtPage })},
}

// parseKnobs applies the table defaults, then every sim.* option found.
// Unknown sim.* names are errors: a typo in a test should fail loudly.
func parseKnobs(opts map[string]any) (knobs, error) {
	var k knobs
	defs := make(map[string]knobDef, len(knobTable))
	for _, d := range knobTable {
		defs[d.name] = d
		if err := d.set(&k, d.def); err != nil {
			panic(fmt.Sprintf("crawlersim: bad default for %s: %v", d.name, err))
		}
	}
	for key, v := range opts {
		if !strings.HasPrefix(key, "sim.") {
			continue
		}
		d, ok := defs[key]
		if !ok {
			return k, fmt.Errorf("unknown simulator option --%s", key)
		}
		if err := d.set(&k, lastString(v)); err != nil {
			return k, fmt.Errorf("simulator option --%s=%v: %w", key, v, err)
		}
	}
	if k.timeScale <= 0 {
		return k, fmt.Errorf("simulator option --sim.timeScale must be > 0")
	}
	return k, nil
}

// seedParams are the seed-URL query parameters, each setting one site
// knob the way its --sim.* option does.
var seedParams = []struct {
	name string
	set  func(k *siteKnobs, v string) error
}{
	{"sim-pages", func(k *siteKnobs, v string) (err error) { k.pages, err = strconv.Atoi(v); return }},
	{"sim-links", func(k *siteKnobs, v string) (err error) { k.links, err = strconv.Atoi(v); return }},
	{"sim-page-ms", func(k *siteKnobs, v string) (err error) { k.pageMs, err = strconv.ParseFloat(v, 64); return }},
	{"sim-fail", func(k *siteKnobs, v string) (err error) { k.fail, err = strconv.ParseFloat(v, 64); return }},
	{"sim-bytes", func(k *siteKnobs, v string) (err error) { k.bytes, err = strconv.ParseInt(v, 10, 64); return }},
	{"sim-http-error", func(k *siteKnobs, v string) (err error) { k.httpError, err = strconv.ParseFloat(v, 64); return }},
	{"sim-http-status", func(k *siteKnobs, v string) (err error) { k.httpStatus, err = parseStatus(v); return }},
	{"sim-status-rx", func(k *siteKnobs, v string) (err error) { k.statusURL, err = regexp.Compile(v); return }},
	{"sim-url-status", func(k *siteKnobs, v string) (err error) { k.urlStatus, err = parseStatus(v); return }},
	{"sim-noise", func(k *siteKnobs, v string) (err error) { k.noise, err = strconv.ParseFloat(v, 64); return }},
}

// seedKnobs overrides the site defaults with the seed URL's sim-* query
// parameters. Unusable values are reported, and then the seed keeps the
// defaults, all of them.
func seedKnobs(def siteKnobs, seedURL string) (siteKnobs, []string) {
	u, err := url.Parse(seedURL)
	if err != nil {
		return def, nil
	}
	q := u.Query()
	var bad []string
	k := def
	for _, p := range seedParams {
		if v := q.Get(p.name); v != "" {
			if err := p.set(&k, v); err != nil {
				bad = append(bad, p.name+"="+v)
			}
		}
	}
	if len(bad) > 0 {
		return def, bad
	}
	return k, nil
}

func intKnob(field func(*knobs) *int) func(*knobs, string) error {
	return func(k *knobs, v string) (err error) { *field(k), err = strconv.Atoi(v); return }
}

func floatKnob(field func(*knobs) *float64) func(*knobs, string) error {
	return func(k *knobs, v string) (err error) { *field(k), err = strconv.ParseFloat(v, 64); return }
}

// statusKnob takes an HTTP error status: the simulator's error pages
// are client or server errors, never a redirect.
func statusKnob(field func(*knobs) *int) func(*knobs, string) error {
	return func(k *knobs, v string) (err error) { *field(k), err = parseStatus(v); return }
}

func parseStatus(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("HTTP status %q: %w", v, err)
	}
	if n < 400 || n > 599 {
		return 0, fmt.Errorf("HTTP status %d is not an error status (400-599)", n)
	}
	return n, nil
}

func boolKnob(field func(*knobs) *bool) func(*knobs, string) error {
	return func(k *knobs, v string) (err error) { *field(k), err = strconv.ParseBool(v); return }
}

// durKnob accepts Go durations ("250ms") or plain seconds ("2.5"), the
// crawler's own unit for times.
func durKnob(field func(*knobs) *time.Duration) func(*knobs, string) error {
	return func(k *knobs, v string) error {
		if secs, err := strconv.ParseFloat(v, 64); err == nil {
			*field(k) = time.Duration(secs * float64(time.Second))
			return nil
		}
		d, err := time.ParseDuration(v)
		*field(k) = d
		return err
	}
}

func rxKnob(field func(*knobs) **regexp.Regexp) func(*knobs, string) error {
	return func(k *knobs, v string) error {
		if v == "" {
			*field(k) = nil
			return nil
		}
		rx, err := regexp.Compile(v)
		*field(k) = rx
		return err
	}
}
