package store

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestPushCrawlFilesReplayOutlastingAScan: a record retried after a
// timeout finds its files already there. It must answer without the org's
// scan: on a loaded database the scan outlasts the call's time, and a
// record that waited for it failed on every retry, so the crawl's end was
// never recorded. Here every scan of the crawls is held until its
// context ends.
func TestPushCrawlFilesReplayOutlastingAScan(t *testing.T) {
	uri := serverURI(t)
	bg := context.Background()
	db := fmt.Sprintf("replay%d", os.Getpid())
	m, ids := openCrashFixture(t, uri, db)
	t.Cleanup(func() { _ = m.db.Drop(bg); _ = m.Close(bg) })
	file := CrawlFile{Filename: "oid/c2-late.wacz", Size: 7}
	if _, err := m.PushCrawlFiles(bg, ids.crawl, []CrawlFile{file}); err != nil {
		t.Fatal(err)
	}

	slow := stallingAggregates(t, uri, db, collCrawls)
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	res, err := slow.PushCrawlFiles(ctx, ids.crawl, []CrawlFile{file})
	if err != nil {
		t.Fatalf("the replayed record failed: %v", err)
	}
	if res.Added != 0 {
		t.Fatalf("the replay added %d files, want 0", res.Added)
	}
	if !slow.orgBytes.due(ids.org, time.Now()) {
		t.Fatal("after the replay the org's bytesStored is not due a recomputation")
	}
}
