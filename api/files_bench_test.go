package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// BenchmarkReplayPresign measures replay.json of crawls with many files
// against the raw MongoDB read of the crawl document: links signed on
// every call (a running crawl, whose links are not cached), links served
// from the cache, and 1000 files signed at once. Target: 100 files within
// 50 ms on top of the read. Run by `make bench`; it reports means over
// several requests, so -benchtime 1x is enough.
func BenchmarkReplayPresign(b *testing.B) {
	e := newStorageEnv(b, startS3(b), time.Hour)
	ts := httptest.NewServer(e.srv.Handler())
	defer ts.Close()
	user := e.mustJSON(asCrawler, "GET", "/api/users/me", nil, 200)["id"].(string)
	cid := e.createWorkflow(asCrawler, workflowBody("bench", false))["id"].(string)
	crawlOf := func(files int, finished bool) string {
		id := fmt.Sprintf("bench-%d-%v", files, finished)
		c := &store.Crawl{ID: id, OID: e.org, CID: uuid.MustParse(cid), UserID: uuid.MustParse(user),
			State: store.StateRunning, Started: time.Now().UTC().Truncate(time.Second), FileCount: files, FileSize: int64(files)}
		for i := range files {
			c.Files = append(c.Files, store.CrawlFile{Filename: fmt.Sprintf("%s/%s-%04d.wacz", e.org, id, i),
				Hash: "h", Size: 1, DefStorageName: ptr("default")})
		}
		if err := e.store.AddCrawl(context.Background(), c); err != nil {
			b.Fatal(err)
		}
		if finished {
			e.setState(id, store.StateComplete)
		}
		return id
	}
	const rounds = 20
	mean := func(b *testing.B, name string, f func()) float64 {
		f() // warm up (and fill the cache where there is one)
		start := time.Now()
		for range rounds {
			f()
		}
		ms := float64(time.Since(start).Microseconds()) / 1000 / rounds
		b.ReportMetric(ms, name+"-ms/op")
		return ms
	}
	replay := func(id string) func() {
		url := ts.URL + e.orgPath("/crawls/"+id+"/replay.json")
		return func() {
			if err := getOK(http.DefaultClient, url, e.tokens[asViewer]); err != nil {
				b.Fatal(err)
			}
		}
	}
	read := func(id string) func() {
		return func() {
			if _, err := e.store.GetCrawl(context.Background(), e.org, id); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("presign-only", func(b *testing.B) {
		ctx := context.Background()
		mean(b, "1000-links", func() {
			for i := range 1000 {
				if _, err := e.bucket.PresignGet(ctx, fmt.Sprintf("%s/f-%d.wacz", e.org, i), time.Hour); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			running, done := crawlOf(n, false), crawlOf(n, true)
			raw := mean(b, "mongo-read", read(running))
			signed := mean(b, "replay-signed", replay(running))
			mean(b, "replay-cached", replay(done))
			b.ReportMetric(signed-raw, "signing-overhead-ms/op")
		})
	}
}
