package operator

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/store"
)

func newTestProgressStore(st CrawlStore) *progressStore {
	return newProgressStore(st, 5*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestProgressStoreBatchesTheLatest: many crawls' progress goes in one
// write, each crawl's latest stats and pods, merged field by field.
func TestProgressStoreBatchesTheLatest(t *testing.T) {
	m := newMemStore()
	for _, id := range []string{"a", "b", "c"} {
		m.addCrawl(id)
	}
	ps := newTestProgressStore(m)
	pods := map[string]store.PodStatus{"0": {Phase: "Running"}}
	ps.add(store.CrawlProgress{CrawlID: "a", Stats: &store.CrawlStats{Done: 1}, Pods: pods})
	ps.add(store.CrawlProgress{CrawlID: "a", Stats: &store.CrawlStats{Done: 2}})
	ps.add(store.CrawlProgress{CrawlID: "b", Stats: &store.CrawlStats{Done: 5}})
	ps.add(store.CrawlProgress{CrawlID: "c", Pods: pods})
	if err := ps.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := m.callCount("RecordCrawlsProgress"); n != 1 {
		t.Fatalf("%d writes, want 1", n)
	}
	if a := m.get("a"); a.Stats.Done != 2 || a.Pods["0"].Phase != "Running" {
		t.Errorf("a: stats %+v pods %+v", a.Stats, a.Pods)
	}
	if b, c := m.get("b"), m.get("c"); b.Stats.Done != 5 || c.Stats != nil || len(c.Pods) != 1 {
		t.Errorf("b stats %+v, c stats %+v pods %+v", b.Stats, c.Stats, c.Pods)
	}
	if err := ps.flush(context.Background()); err != nil || m.callCount("RecordCrawlsProgress") != 1 {
		t.Errorf("an empty flush wrote (%v)", err)
	}
}

// TestProgressStoreKeepsAFailedBatch: a failed batch is written later,
// under what came meanwhile, without the stats of a crawl that ended.
func TestProgressStoreKeepsAFailedBatch(t *testing.T) {
	m := newMemStore()
	for _, id := range []string{"a", "b", "end"} {
		m.addCrawl(id)
	}
	ps := newTestProgressStore(m)
	pods := map[string]store.PodStatus{"0": {Phase: "Running"}}
	ps.add(store.CrawlProgress{CrawlID: "a", Stats: &store.CrawlStats{Done: 1}, Pods: pods})
	ps.add(store.CrawlProgress{CrawlID: "b", Stats: &store.CrawlStats{Done: 1}})
	ps.add(store.CrawlProgress{CrawlID: "end", Stats: &store.CrawlStats{Done: 1}, Pods: pods})
	m.setDown(true)
	if err := ps.flush(context.Background()); err == nil {
		t.Fatal("no error from a store that is down")
	}
	ps.add(store.CrawlProgress{CrawlID: "a", Stats: &store.CrawlStats{Done: 7}})
	if err := ps.settle(context.Background(), "end"); err != nil {
		t.Fatal(err)
	}
	m.setDown(false)
	if err := ps.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a := m.get("a"); a.Stats.Done != 7 || a.Pods["0"].Phase != "Running" {
		t.Errorf("a: stats %+v pods %+v", a.Stats, a.Pods)
	}
	if b := m.get("b"); b.Stats == nil || b.Stats.Done != 1 {
		t.Errorf("b: stats %+v", b.Stats)
	}
	if e := m.get("end"); e.Stats != nil || e.Pods["0"].Phase != "Running" {
		t.Errorf("end: stats %+v (settled) pods %+v", e.Stats, e.Pods)
	}
}

// blockingStore holds RecordCrawlsProgress until released.
type blockingStore struct {
	*memStore
	entered chan []store.CrawlProgress
	release chan error
}

func (b *blockingStore) RecordCrawlsProgress(ctx context.Context, p []store.CrawlProgress) (int64, error) {
	b.entered <- p
	if err := <-b.release; err != nil {
		return 0, err
	}
	return b.memStore.RecordCrawlsProgress(ctx, p)
}

// TestProgressStoreSettleWaitsForTheBatchInFlight: the final state of a
// crawl is recorded only once no batch with its stats can land after it,
// and a batch that then fails does not bring the stats back.
func TestProgressStoreSettleWaitsForTheBatchInFlight(t *testing.T) {
	m := newMemStore()
	m.addCrawl("a")
	b := &blockingStore{memStore: m, entered: make(chan []store.CrawlProgress), release: make(chan error)}
	ps := newTestProgressStore(b)
	ps.add(store.CrawlProgress{CrawlID: "a", Stats: &store.CrawlStats{Done: 1}})
	flushed := make(chan error, 1)
	go func() { flushed <- ps.flush(context.Background()) }()
	<-b.entered
	// settle would wait for the batch: with its context done, it says so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ps.settle(ctx, "a"); err == nil {
		t.Fatal("settled while a batch with the crawl's stats was in flight")
	}
	b.release <- errDown
	if err := <-flushed; err == nil {
		t.Fatal("the batch did not fail")
	}
	if err := ps.settle(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ps.mu.Lock()
	_, pending := ps.pending["a"]
	ps.mu.Unlock()
	if pending {
		t.Error("the failed batch brought back the stats of a settled crawl")
	}
}
