package operator

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/crawlredis"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/store"
)

// BenchmarkRecord100Files measures the operator recording 100 crawls-done
// messages of a crawl: read from a real redis-server, each file written
// once to the crawl document and the org's bytesStored recomputed, on the
// MongoDB-wire server, then the messages removed. Run by `make bench`.
func BenchmarkRecord100Files(b *testing.B) {
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
	st, err := store.Open(ctx, m.URI(), "bench_files")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close(ctx)
	org := &store.Org{ID: uuid.New(), Name: "bench"}
	if err := st.CreateOrg(ctx, org); err != nil {
		b.Fatal(err)
	}
	cfg := testConfig()
	cfg.RedisDialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, r.Addr())
	}
	const files = 100
	var total time.Duration
	for i := range b.N {
		id := fmt.Sprintf("bench-%d", i)
		if err := st.AddCrawl(ctx, &store.Crawl{ID: id, OID: org.ID, State: store.StateRunning, Started: time.Now()}); err != nil {
			b.Fatal(err)
		}
		client, err := newRedisClient(cfg, id)
		if err != nil {
			b.Fatal(err)
		}
		for f := range files {
			client.RPush(ctx, crawlredis.CrawlsDone, doneMsg(fmt.Sprintf("http://s3:9000/bucket/%s/%s-%03d.wacz", org.ID, id, f), 1000))
		}
		in := newIngester(newJob(1, func(cj *trawlerv1.CrawlJob) {
			cj.Spec.ID, cj.Spec.OID, cj.Spec.StoragePath = id, org.ID.String(), org.ID.String()+"/"
		}), st, 10*time.Second, slog.Default())
		start := time.Now()
		for {
			s, err := readAndControl(ctx, client, id, redisControl{})
			if err != nil {
				b.Fatal(err)
			}
			if s.DoneLen == 0 {
				break
			}
			if _, err := in.files(ctx, client, s); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(start)
		client.Close()
		c, err := st.GetCrawlByID(ctx, id)
		if err != nil || c.FileCount != files {
			b.Fatalf("recorded %d files, %v", c.FileCount, err)
		}
	}
	o, _ := st.GetOrg(ctx, org.ID)
	if o.BytesStored != int64(b.N*files*1000) {
		b.Fatalf("bytesStored %d", o.BytesStored)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/100-files")
}
