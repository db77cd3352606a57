package api

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox/rsstest"
)

const (
	benchDownloadCrawls = 20
	benchDownloadSize   = 50 << 20
	// benchDownloadRSS is the goal for the process's peak RSS above idle.
	benchDownloadRSS = 64 << 20
)

// BenchmarkCollectionDownload downloads a collection of 20 crawls of one
// 50 MB WACZ each over real HTTP, the zip streamed from the S3 server,
// and reports the throughput and this process's peak RSS above its idle
// RSS (server, S3 client and HTTP client all count; goal: under 64 MiB).
// Run by `make bench`.
func BenchmarkCollectionDownload(b *testing.B) {
	e := newStorageEnv(b, startS3(b), time.Hour)
	body := make([]byte, benchDownloadSize)
	rand.Read(body)
	ids := make([]string, benchDownloadCrawls)
	var keys []string
	for i := range ids {
		var k []string
		ids[i], k = e.finishedCrawlWithFiles(body)
		keys = append(keys, k...)
	}
	b.Cleanup(func() { _ = e.bucket.Delete(context.Background(), keys...) })
	body = nil
	coll := e.mustJSON(asCrawler, "POST", e.orgPath("/collections"), map[string]any{"name": "bench", "crawlIds": ids}, 200)["id"].(string)
	ts := httptest.NewServer(e.srv.Handler())
	defer ts.Close()
	url := ts.URL + e.orgPath("/collections/"+coll+"/download")

	benchFlatDownload(b, url, e.tokens[asViewer], benchDownloadCrawls*benchDownloadSize)
}

// benchFlatDownload downloads url b.N times, reporting throughput and the
// peak RSS above idle of each download, and fails a download that comes
// short or lifts the RSS past benchDownloadRSS: downloads must stream.
func benchFlatDownload(b *testing.B, url, token string, total int64) {
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		idle := rsstest.Idle(b)
		b.StartTimer()
		start := time.Now()
		n := getBody(b, url, token)
		took := time.Since(start)
		b.StopTimer()
		if n < total {
			b.Fatalf("downloaded %d bytes of %d", n, total)
		}
		above := rsstest.Peak(b) - idle
		b.ReportMetric(float64(n)/(1<<20)/took.Seconds(), "MiB/s")
		b.ReportMetric(float64(above)/(1<<20), "peak-RSS-above-idle-MiB")
		b.ReportMetric(float64(idle)/(1<<20), "idle-RSS-MiB")
		if above > benchDownloadRSS {
			b.Errorf("peak RSS %d MiB above idle, goal < %d MiB", above>>20, benchDownloadRSS>>20)
		}
		b.StartTimer()
	}
}

// getBody downloads url and returns its length, keeping none of it.
func getBody(b *testing.B, url, token string) int64 {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("download: %d", resp.StatusCode)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return n
}
