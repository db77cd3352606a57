package store

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestAddCrawlOrderedAfterRecompute interleaves a new crawl's start with a
// recomputation of its workflow's stats that read the crawls just before
// the start: the previous crawl's post-crawl tasks racing the run route
// after a cancel. The workflow must end up pointing at the new crawl, as
// running, with the ended crawl counted; the older view must not be
// written over the newer one.
func TestAddCrawlOrderedAfterRecompute(t *testing.T) {
	m := openTestDB(t, "addorder")
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	oid, cid := uuid.New(), uuid.New()
	name := "wf"
	must(m.CreateCrawlConfig(ctx, &CrawlConfig{ID: cid, OID: oid, Name: &name,
		Config: RawCrawlConfig{Seeds: []Seed{{URL: "https://a.example/"}}}}))
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	must(m.AddCrawl(ctx, &Crawl{ID: "old", OID: oid, CID: cid, Started: t0, State: StateRunning}))
	ended := t0.Add(time.Minute)
	_, _, err := m.SetCrawlState(ctx, "old", StateCanceled, ActiveStates, CrawlStateExtra{Finished: &ended})
	must(err)

	must(recompute(ctx, m.coll(collConfigs), cid, errConfigNotFound, func(ctx context.Context) (any, error) {
		set, err := m.workflowStats(ctx, cid) // sees "old" ended, nothing running
		if err != nil {
			return nil, err
		}
		return set, m.AddCrawl(ctx, &Crawl{ID: "new", OID: oid, CID: cid, Started: ended, State: StateStarting})
	}))

	wf, err := m.GetCrawlConfig(ctx, oid, cid)
	must(err)
	s := wf.WorkflowStats
	if s.LastCrawlID == nil || *s.LastCrawlID != "new" || !s.IsCrawlRunning || *s.LastCrawlState != StateStarting ||
		s.LastCrawlTime != nil || s.CrawlCount != 1 || s.CrawlAttemptCount != 2 {
		t.Fatalf("workflow after the race: lastCrawlId %v, state %v, running %t, lastCrawlTime %v, crawlCount %d, attempts %d",
			deref(s.LastCrawlID), deref(s.LastCrawlState), s.IsCrawlRunning, s.LastCrawlTime, s.CrawlCount, s.CrawlAttemptCount)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// serverURI is the package's server (MONGO_URI, set by mongotest.Main in
// TestMain); the test is skipped without one.
func serverURI(t *testing.T) string {
	t.Helper()
	uri := os.Getenv("MONGO_URI")
	if uri == "" {
		t.Skip("no server")
	}
	return uri
}

// openTestDB opens a database of its own, named after name, on the
// package's server (MONGO_URI, set by mongotest.Main in TestMain), for
// tests that need the store's internals; it is dropped at the end.
func openTestDB(t *testing.T, name string) *Mongo {
	t.Helper()
	uri := serverURI(t)
	ctx := context.Background()
	m, err := Open(ctx, uri, fmt.Sprintf("%s%d", name, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.db.Drop(ctx); _ = m.Close(ctx) })
	return m
}
