package operator_test

import (
	"context"
	"time"

	"github.com/trawlerhq/trawler/sandbox/crawlersim"
)

// docLagReads is how many busy crawls' documents sampleDocLag reads a
// second: enough samples for a p99 in a minute, few enough reads to leave
// the sandbox's one MongoDB writer to the operator.
const docLagReads = 10

// sampleDocLag times how far the crawl documents' page counts, which the
// API shows, trail the busy crawls until stop: every second it reads
// docLagReads busy crawls' documents, round-robin, and records as
// "doc-pages" the age of the oldest page done that a document does not
// show yet (0 when it shows the fleet's latest count). A page whose time
// the fleet no longer remembers counts as missing.
func (h *harness) sampleDocLag(ctx context.Context, fleet *crawlersim.Fleet, busy []string, stop <-chan struct{}, lat *latencies) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	next := 0
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for range min(docLagReads, len(busy)) {
			id := busy[next%len(busy)]
			next++
			done := fleet.PagesDone(id)
			c, err := h.store.GetCrawlByID(ctx, id)
			now := time.Now()
			if err != nil || c.Stats == nil {
				continue
			}
			if c.Stats.Done >= done {
				lat.add("doc-pages", 0)
				continue
			}
			if at, ok := fleet.PagesAt(id, c.Stats.Done+1); ok {
				lat.add("doc-pages", now.Sub(at))
			} else {
				lat.missing("doc-pages")
			}
		}
	}
}
