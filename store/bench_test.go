package store_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// BenchmarkListCrawls lists an org's crawls (10,000 in the store, or
// $STORE_BENCH_CRAWLS) from 16 concurrent callers, through the store and,
// for comparison, as the same count + find issued directly through the
// driver (decoded to raw BSON). Page sizes: the API's default (1000) and a
// UI-sized page (50). FerretDB scans and decodes every document for each
// count and find, so keep -benchtime small there:
//
//	go test ./store/ -run '^$' -bench ListCrawls -benchtime 32x
//	MONGO_URI=mongodb://localhost:27017 go test ./store/ -run '^$' -bench ListCrawls
func BenchmarkListCrawls(b *testing.B) {
	const clients = 16
	crawls := 10_000
	if n, err := strconv.Atoi(os.Getenv("STORE_BENCH_CRAWLS")); err == nil && n > 0 {
		crawls = n
	}
	m := mongotest.Open(b)
	ctx := context.Background()
	oid, cid := uuid.New(), uuid.New()
	t0 := time.Now()
	if _, err := m.SeedCrawls(ctx, oid, cid, uuid.New(), crawls); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d crawls in %v", crawls, time.Since(t0).Round(time.Millisecond))

	for _, pageSize := range []int{1000, 50} {
		b.Run(fmt.Sprintf("store/pageSize=%d", pageSize), func(b *testing.B) {
			f := store.CrawlFilter{Paging: store.Paging{Page: 1, PageSize: pageSize}}
			mongotest.BenchConcurrent(b, clients, func(ctx context.Context) error {
				items, total, err := m.ListCrawls(ctx, oid, f)
				if err == nil && (len(items) != min(pageSize, crawls) || total != int64(crawls)) {
					err = fmt.Errorf("got %d items of %d", len(items), total)
				}
				return err
			})
		})
		b.Run(fmt.Sprintf("driver/pageSize=%d", pageSize), func(b *testing.B) {
			coll := m.Raw().Collection("crawls")
			filter := bson.M{"type": bson.M{"$in": bson.A{store.TypeCrawl, nil}}, "oid": oid}
			opts := options.Find().SetProjection(bson.M{"files": 0, "errors": 0}).SetLimit(int64(pageSize))
			mongotest.BenchConcurrent(b, clients, func(ctx context.Context) error {
				if _, err := coll.CountDocuments(ctx, filter); err != nil {
					return err
				}
				cur, err := coll.Find(ctx, filter, opts)
				if err != nil {
					return err
				}
				var docs []bson.Raw
				return cur.All(ctx, &docs)
			})
		})
	}
}

// BenchmarkRecomputeOrgBytesStored recomputes the bytesStored of an org
// with 10,000 crawls (or $STORE_BENCH_CRAWLS), one call at a time: the
// cost each crawl end paid the database when every end recomputed it.
//
//	go test ./store/ -run '^$' -bench RecomputeOrgBytes -benchtime 10x
func BenchmarkRecomputeOrgBytesStored(b *testing.B) {
	crawls := 10_000
	if n, err := strconv.Atoi(os.Getenv("STORE_BENCH_CRAWLS")); err == nil && n > 0 {
		crawls = n
	}
	m := mongotest.Open(b)
	ctx := context.Background()
	oid := uuid.New()
	if err := m.CreateOrg(ctx, &store.Org{ID: oid, Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	if _, err := m.SeedCrawls(ctx, oid, uuid.New(), uuid.New(), crawls); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := m.RecomputeOrgBytesStored(ctx, oid); err != nil {
			b.Fatal(err)
		}
	}
}
