package crawlersim

import (
	"fmt"
	"maps"
)

// noiseLine is one of the non-fatal lines real crawls log about pages
// that still load and count as done (sim.noise picks the pages): the
// message, level and context are the crawler's own.
type noiseLine struct {
	level, context, message string
	details                 func(p *params, pageURL string) map[string]any
}

// noiseLines are chosen from by URL hash. Only the error line reaches
// <id>:e; the warnings are for the log files alone, as in a real crawl.
var noiseLines = []noiseLine{
	// The behaviours outlast --behaviorTimeout: the crawler's timed run
	// gives up on them at error level, and the page still counts.
	{levelError, "behavior", "Behaviors timed out", func(p *params, _ string) map[string]any {
		return map[string]any{"seconds": p.behaviorTimeout}
	}},
	// A script of the page answers 404: the browser's console error, which
	// the crawler relays as a warning.
	{levelWarn, "jsError", "Failed to load resource: the server responded with a status of 404 (Not Found)", func(_ *params, u string) map[string]any {
		return map[string]any{"location": map[string]any{"url": originOf(u) + staticPrefix + "missing.js", "lineNumber": 0, "columnNumber": 0}}
	}},
	// The load event never comes within --pageLoadTimeout, but the content
	// did load: the page is kept and its behaviours are skipped.
	{levelWarn, "general", "Page Loading Slowly, skipping behaviors", func(p *params, _ string) map[string]any {
		return map[string]any{"msg": fmt.Sprintf("Navigation timeout of %.0f ms exceeded", p.pageLoadTimeout*1000)}
	}},
}

// withDetails is a page's log details plus more, in a map of its own.
func withDetails(page, more map[string]any) map[string]any {
	out := maps.Clone(page)
	maps.Copy(out, more)
	return out
}
