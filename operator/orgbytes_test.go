package operator_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// heldRecompute holds every recomputation of an org's bytesStored until
// release closes, as a database would that takes seconds to scan an
// org's thousands of crawls.
type heldRecompute struct {
	operator.CrawlStore
	release chan struct{}
	asked   atomic.Int32
}

func (s *heldRecompute) RecomputeOrgBytesStored(ctx context.Context, oid uuid.UUID) error {
	s.asked.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.CrawlStore.RecomputeOrgBytesStored(ctx, oid)
}

// TestCrawlEndDoesNotWaitForOrgBytes (issue 28): a crawl's end waits for
// its files to be recorded, not for the recomputation of its org's
// bytesStored that follows (a scan of all the org's items: at 3,000
// crawls in one org its p99 was 3.5 s, and a stop waited for it, timed
// out and retried). With every recomputation held, the crawl completes
// with its files; released, the poller's recomputation counts them.
func TestCrawlEndDoesNotWaitForOrgBytes(t *testing.T) {
	h := newHarness(t)
	held := &heldRecompute{CrawlStore: h.store, release: make(chan struct{})}
	deps := h.deps()
	deps.Store = held
	h.startOperatorWith(h.config(), deps)

	id := h.startCrawl(crawlOpts{})
	h.waitState(id, 2*time.Minute, store.StateComplete)
	c := h.crawl(id)
	if c.FileCount == 0 || c.FileSize == 0 {
		t.Fatalf("complete with %d files of %d bytes", c.FileCount, c.FileSize)
	}
	if held.asked.Load() == 0 {
		t.Fatal("the org's bytesStored was never recomputed through the operator's store")
	}
	close(held.release)
	h.waitFor("the org's bytesStored counting the crawl's files", 30*time.Second, func() bool {
		org, err := h.store.GetOrg(context.Background(), h.org)
		return err == nil && org.BytesStored >= c.FileSize
	})
}
