package crawlersim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// idlePoll is how long an idle worker waits while pages are pending on
// some instance.
const idlePoll = 500 * time.Millisecond

// runWorkers runs the page workers until all of them leave their loops.
// An exception in one worker ends the crawl at once, as a throw out of the
// crawl does; the others are cut off when the process exits.
func (p *process) runWorkers() error {
	offset := p.workerOffset()
	errc := make(chan error, p.p.workers)
	for i := range p.p.workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			errc <- p.workerLoop(offset + i)
		}()
	}
	for range p.p.workers {
		if err := <-errc; err != nil {
			return err
		}
	}
	return nil
}

// workerOffset numbers workers from index × workers when the hostname ends
// in <crawlId>-<index>, as the crawler does for its log and screencast ids.
func (p *process) workerOffset() int {
	h, tail := p.opts.Hostname, p.p.crawlID+"-"
	i := strings.LastIndex(h, tail)
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(h[i+len(tail):])
	if err != nil {
		return 0
	}
	return n * p.p.workers
}

// isCrawlRunning is checked before every page: not interrupted, not
// stopped globally or for this instance.
func (p *process) isCrawlRunning() (bool, error) {
	if interrupted, _, _ := p.flags(); interrupted {
		return false, nil
	}
	if err := p.checkCanceled(); err != nil {
		return false, err
	}
	stopped, err := p.state.isStopped()
	if err != nil || stopped {
		return false, err
	}
	paused, err := p.checkPaused()
	return !paused, err
}

func (p *process) workerLoop(id int) error {
	st := p.state
	for {
		if p.isFrozen() {
			return p.freeze()
		}
		running, err := p.isCrawlRunning()
		if err != nil || !running {
			return err
		}
		entry, err := st.next()
		if err != nil {
			return err
		}
		if entry != "" {
			if err := p.crawlPage(id, entry); err != nil {
				return err
			}
			continue
		}
		pending, requeued, dropped, err := st.numPending()
		if err != nil {
			return err
		}
		for _, u := range requeued {
			p.log.info("state", "Requeued: "+u, map[string]any{"url": u})
		}
		for _, u := range dropped {
			p.log.info("state", "Not requeuing anymore: "+u, map[string]any{"url": u})
		}
		if pending > 0 {
			p.log.debugf("worker", "No crawl tasks, but pending tasks remain, waiting", map[string]any{"pending": pending, "workerid": id})
			if err := p.sleep(idlePoll); err != nil {
				return err
			}
			continue
		}
		if n, err := st.queueSize(); err != nil || n == 0 {
			return err
		}
	}
}

// crawlPage "loads" one page: mark it started, spend its time, log what
// it logs, queue its in-scope links, record it, mark it finished or
// failed (with its error lines), check limits.
func (p *process) crawlPage(worker int, raw string) error {
	var e struct {
		URL       string `json:"url"`
		SeedID    int    `json:"seedId"`
		Depth     int    `json:"depth"`
		ExtraHops int    `json:"extraHops"`
	}
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return fmt.Errorf("decoding queue entry %q: %w", raw, err)
	}
	st, sim := p.state, &p.p.sim
	n := int(p.pagesStarted.Add(1))
	details := map[string]any{"url": e.URL, "workerid": worker, "page": n}
	started := isoTime(p.opts.Now())
	if err := st.markStarted(e.URL, started); err != nil {
		return err
	}
	p.log.info("worker", "Starting page", details)
	seed := p.p.seeds[0]
	if e.SeedID >= 0 && e.SeedID < len(p.p.seeds) {
		seed = p.p.seeds[e.SeedID]
	}
	page := seed.load(e.URL, sim)
	crashed := false
	if p.faultsActive() {
		switch n {
		case sim.hangAtPage:
			return p.freeze()
		case sim.fatalAtPage:
			return p.fatal("Simulated fatal error (--sim.fatalAtPage)", details)
		case sim.browserCrashAtPage:
			p.log.error("general", "Browser disconnected (crashed?), interrupting crawl", details)
			p.mu.Lock()
			p.interruptLocked()
			p.mu.Unlock()
			crashed = true
		}
	}
	took := page.duration
	if page.hangs {
		took = time.Duration(p.p.maxPageTime * float64(time.Second))
	}
	if err := p.sleep(took); err != nil {
		return err
	}
	outcome, errLines := p.pageLines(e.URL, page, crashed, details)
	if p.faultsActive() && n == sim.exitAtPage {
		// Dies with the page loaded and logged but not recorded: the
		// restarted crawler crawls it again.
		p.exit(sim.exitCode)
		return errExited
	}
	switch outcome {
	case pageFailed:
		if err := st.markFailed(e.URL, errLines); err != nil {
			return err
		}
	case pageErrorStatus:
		// The error page is the response the browser got: it is archived,
		// and the crawler follows none of its links.
		pg := warcPage{url: e.URL, title: errorTitle(page.status), date: p.opts.Now(), status: page.status}
		if err := p.arch.record(worker, pg); err != nil {
			return err
		}
		if err := st.markFailed(e.URL, errLines); err != nil {
			return err
		}
	default:
		if err := p.queueLinks(seed, e.SeedID, page.links, e.Depth, e.ExtraHops); err != nil {
			return err
		}
		pg := warcPage{url: e.URL, title: titleOf(e.URL), links: page.links, date: p.opts.Now(), bytes: page.bytes}
		if err := p.arch.record(worker, pg); err != nil {
			return err
		}
		if err := st.markFinished(e.URL, errLines); err != nil {
			return err
		}
		p.log.info("worker", "Page finished", details)
	}
	if err := p.pushPage(newPageRecord(e.URL, started, e.Depth, outcome, page.status, p.waczFilename())); err != nil {
		return err
	}
	if err := p.checkLimits(); err != nil {
		return err
	}
	if p.faultsActive() && n == sim.throwAtPage {
		return fmt.Errorf("simulated exception after page %d (--sim.throwAtPage)", n)
	}
	return nil
}

// How a page's load ends.
type pageOutcome int

const (
	pageLoaded      pageOutcome = iota
	pageFailed                  // no response: the load failed or timed out
	pageErrorStatus             // the response is an HTTP error
)

// pageLines logs what the crawler logs when a page's load ends: why it
// failed, or a non-fatal line about a page that loaded. It returns how
// the load ended and the lines for <id>:e, which the page's mark pushes.
//
// A page that answers with an HTTP error status fails, as in crawler
// 0.11 (its loadPage treats a 4xx or 5xx response as a load error): it
// counts in <id>:d and <id>:f like any failed page.
func (p *process) pageLines(url string, page simPage, crashed bool, details map[string]any) (pageOutcome, []string) {
	var out []string
	logLine := func(level, context, message string, d map[string]any) {
		if line, ok := p.log.pageLine(level, context, message, d); ok {
			out = append(out, line)
		}
	}
	switch {
	case page.hangs:
		logLine(levelError, "general", "Page Load Timeout, skipping page", details)
		return pageFailed, out
	case crashed || page.fails:
		logLine(levelError, "general", "Page Load Error, skipping page", details)
		return pageFailed, out
	case page.status != 0:
		logLine(levelError, "general", "Non-200 Status Code, skipping page", withDetails(details, map[string]any{"statusCode": page.status}))
		return pageErrorStatus, out
	case page.noise >= 0:
		l := noiseLines[page.noise]
		logLine(l.level, l.context, l.message, withDetails(details, l.details(p.p, url)))
	}
	return pageLoaded, out
}

// queueLinks queues the in-scope links of a page at depth+1. An
// out-of-scope link allowed by extraHops carries one more hop.
func (p *process) queueLinks(seed *scopedSeed, seedID int, links []string, depth, extraHops int) error {
	for _, link := range links {
		u, oos, ok := seed.included(link, depth+1, extraHops+1)
		if !ok {
			continue
		}
		hops := extraHops
		if oos {
			hops++
		}
		if _, err := p.queueURL(seedID, u, depth+1, hops); err != nil {
			return err
		}
	}
	return nil
}

// queueURL adds a URL unless this process already hit the page limit,
// after which it queues nothing more.
func (p *process) queueURL(seedID int, url string, depth, extraHops int) (bool, error) {
	if p.limitHit.Load() {
		return false, nil
	}
	res, err := p.state.add(queueEntry{Added: isoTime(p.opts.Now()), URL: url, SeedID: seedID, Depth: depth, ExtraHops: extraHops}, p.p.pageLimit)
	if err != nil {
		return false, err
	}
	switch res {
	case addAdded:
		return true, nil
	case addLimit:
		p.limitHit.Store(true)
		p.log.debugf("crawlStatus", "Page limit reached, queueing no more pages", map[string]any{"limit": p.p.pageLimit})
	}
	return false, nil
}

// checkLimits publishes this instance's archive size and interrupts the
// session when it passed --sizeLimit or --timeLimit; such an interruption
// uploads and then wipes the local collection.
func (p *process) checkLimits() error {
	size, err := p.arch.size()
	if err != nil {
		return err
	}
	if err := p.state.setArchiveSize(size); err != nil {
		return err
	}
	var reason string
	if p.p.sizeLimit > 0 && size >= p.p.sizeLimit {
		reason = fmt.Sprintf("Size threshold reached %d >= %d, stopping", size, p.p.sizeLimit)
	}
	elapsed := time.Since(p.start).Seconds() / p.scale
	if p.p.timeLimit > 0 && elapsed >= p.p.timeLimit {
		reason = fmt.Sprintf("Time threshold reached %.0f > %.0f secs, stopping", elapsed, p.p.timeLimit)
	}
	if reason == "" {
		return nil
	}
	p.log.info("general", reason, nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.uploadAndDelete = true
	p.interruptLocked()
	return nil
}
