package operator

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/crawlredis"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/store"
)

// countingPages counts the store's page writes.
type countingPages struct {
	CrawlStore
	writes atomic.Int64
}

func (c *countingPages) AddPages(ctx context.Context, pages []store.Page) (int, error) {
	c.writes.Add(1)
	return c.CrawlStore.AddPages(ctx, pages)
}

// BenchmarkIngestPages feeds 10 crawls 100 pages a second each (1,000
// pages/s across crawls, LPUSHed into a real redis-server as crawlers do)
// for pagesSeconds, while each crawl's ingester polls at the poll
// interval and stores what it finds on the MongoDB-wire server. It checks
// that each poll that found pages wrote them with one store write, and
// reports the writes per batch and how far behind the ingest fell.
func BenchmarkIngestPages(b *testing.B) {
	if testing.Short() {
		b.Skip("needs redis-server and mongotestd")
	}
	ctx := context.Background()
	r, err := sandbox.StartRedis(ctx, b.TempDir())
	if err != nil {
		b.Skip(err)
	}
	defer r.Stop(5 * time.Second)
	m, err := sandbox.StartMongo(ctx, b.TempDir())
	if err != nil {
		b.Skip(err)
	}
	defer m.Stop(5 * time.Second)
	mongo, err := store.Open(ctx, m.URI(), "bench_pages")
	if err != nil {
		b.Fatal(err)
	}
	defer mongo.Close(ctx)
	if err := mongo.EnsureIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	st := &countingPages{CrawlStore: mongo}
	cfg := testConfig()
	cfg.RedisDialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, r.Addr())
	}
	const (
		crawls       = 10
		perSecond    = 100 // per crawl
		pagesSeconds = 5
		interval     = 250 * time.Millisecond
	)
	oid := uuid.New()
	for range b.N {
		st.writes.Store(0)
		var batches atomic.Int64
		run := uuid.NewString()[:8]
		done := make(chan time.Duration, crawls)
		start := time.Now()
		for i := range crawls {
			id := fmt.Sprintf("pages-%s-%d", run, i)
			client, err := newRedisClient(cfg, id)
			if err != nil {
				b.Fatal(err)
			}
			in := newIngester(newJob(1, func(cj *trawlerv1.CrawlJob) { cj.Spec.ID, cj.Spec.OID = id, oid.String() }),
				st, 10*time.Second, slog.Default())
			go func() {
				defer client.Close()
				// The crawler: perSecond pages a second, each LPUSHed.
				go func() {
					tick := time.NewTicker(time.Second / perSecond)
					defer tick.Stop()
					for n := range perSecond * pagesSeconds {
						<-tick.C
						client.LPush(ctx, crawlredis.Keys(id).Pages(),
							fmt.Sprintf(`{"id":%q,"url":"https://example.com/%d","title":"p","loadState":4,"ts":%q}`,
								uuid.New(), n, time.Now().UTC().Format(time.RFC3339Nano)))
					}
				}()
				stored := 0
				for stored < perSecond*pagesSeconds {
					time.Sleep(interval)
					s, err := readAndControl(ctx, client, id, redisControl{})
					if err != nil {
						b.Error(err)
						return
					}
					if len(s.Pages) > 0 {
						batches.Add(1)
					}
					if err := in.pages(ctx, client, s); err != nil {
						b.Error(err)
						return
					}
					stored += len(s.Pages)
				}
				done <- time.Since(start)
			}()
		}
		var last time.Duration
		for range crawls {
			last = max(last, <-done)
		}
		if w, n := st.writes.Load(), batches.Load(); w > n {
			b.Fatalf("%d page writes for %d batches", w, n)
		}
		b.ReportMetric(float64(st.writes.Load())/float64(batches.Load()), "writes/batch")
		b.ReportMetric(float64(crawls*perSecond*pagesSeconds)/last.Seconds(), "pages/s")
		b.ReportMetric(float64(last-pagesSeconds*time.Second)/float64(time.Millisecond), "ms-behind")
	}
}
