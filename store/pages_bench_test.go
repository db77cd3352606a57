package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// BenchmarkListPages lists the pages of a 100,000-page crawl, filtered
// (depth 3, not seeds: a tenth of them) and sorted by url, a page of 100
// with its total, through the store and as the same count and find sent
// straight through the driver (decoded to raw BSON), alternately, so both
// see the same load. It fails when the store's p99 is above 1.5 times the
// driver's. $PAGES_SAMPLES (default 20) sets the samples each way: on
// the sandbox's FerretDB each list takes seconds.
//
//	go test ./store/ -run '^$' -bench ListPages -benchtime 1x -timeout 60m
func BenchmarkListPages(b *testing.B) {
	const pages = 100_000
	samples := 20
	if n, err := strconv.Atoi(os.Getenv("PAGES_SAMPLES")); err == nil && n > 0 {
		samples = n
	}
	m := mongotest.Open(b)
	ctx := context.Background()
	oid, crawlID := uuid.New(), "manual-20261202000000-bench"
	t0 := time.Now()
	base := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	batch := make([]store.Page, 0, 1000)
	for i := range pages {
		title, status, depth := fmt.Sprintf("Page %d", i), 200, i%10
		batch = append(batch, store.Page{ID: uuid.New(), OID: oid, CrawlID: crawlID,
			URL: fmt.Sprintf("https://example.com/%07d", (i*7919)%pages), Title: &title, Status: &status, Depth: &depth,
			TS: base.Add(time.Duration(i) * time.Millisecond), IsSeed: i == 0})
		if len(batch) == cap(batch) || i == pages-1 {
			if _, err := m.AddPages(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.Logf("seeded %d pages in %v", pages, time.Since(t0).Round(time.Millisecond))

	isSeed, depth := false, 3
	q := store.PageQuery{OID: &oid, CrawlIDs: []string{crawlID}, IsSeed: &isSeed, Depth: &depth,
		SortBy: "url", SortDirection: 1, Paging: store.Paging{Page: 2, PageSize: 100}}
	coll := m.Raw().Collection("pages")
	filter := bson.M{"crawl_id": crawlID, "oid": oid, "isSeed": false, "depth": 3}
	// The find the store sends for q.
	opts := options.Find().SetSort(bson.D{{Key: "url", Value: 1}}).SetSkip(100).SetLimit(100)
	viaStore := func() error {
		items, total, err := m.ListPages(ctx, q)
		if err == nil && (len(items) != 100 || total != pages/10) {
			err = fmt.Errorf("got %d items of %d", len(items), total)
		}
		return err
	}
	viaDriver := func() error {
		total, err := coll.CountDocuments(ctx, filter)
		if err != nil {
			return err
		}
		cur, err := coll.Find(ctx, filter, opts)
		if err != nil {
			return err
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			return err
		}
		if len(docs) != 100 || total != pages/10 {
			return fmt.Errorf("driver got %d docs of %d", len(docs), total)
		}
		return nil
	}
	timed := func(f func() error) time.Duration {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// One untimed list each way first: the first after the seeding
	// also waits for the server to settle its writes.
	timed(viaStore)
	timed(viaDriver)
	b.ResetTimer()
	for range b.N {
		var st, dr []time.Duration
		for range samples {
			st, dr = append(st, timed(viaStore)), append(dr, timed(viaDriver))
		}
		b.Logf("store %v\ndriver %v", st, dr)
		ps, pd := p99(st), p99(dr)
		b.ReportMetric(float64(ps.Microseconds())/1000, "store-p99-ms")
		b.ReportMetric(float64(pd.Microseconds())/1000, "driver-p99-ms")
		b.ReportMetric(float64(ps)/float64(pd), "p99-ratio")
		if float64(ps) > 1.5*float64(pd) {
			b.Errorf("store p99 %v > 1.5 × driver p99 %v", ps, pd)
		}
	}
}

// p99 is the 99th percentile of ds (nearest rank).
func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}
