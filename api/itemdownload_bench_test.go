package api

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// BenchmarkItemDownload20Files downloads one crawl of 20 WACZ files of
// 50 MB each over real HTTP, the multi-WACZ streamed from the S3 server,
// and reports the throughput, the bytes allocated per download and this
// process's peak RSS above its idle RSS (server, S3 client and HTTP client
// all count). Memory must stay flat: the goal is the collection download's,
// under 64 MiB above idle for a 1000 MB download. Run by `make bench`.
func BenchmarkItemDownload20Files(b *testing.B) {
	e := newStorageEnv(b, startS3(b), time.Hour)
	body := make([]byte, benchDownloadSize)
	rand.Read(body)
	id, keys := e.finishedCrawlWithFiles(slices.Repeat([][]byte{body}, benchDownloadCrawls)...)
	b.Cleanup(func() { _ = e.bucket.Delete(context.Background(), keys...) })
	body = nil
	ts := httptest.NewServer(e.srv.Handler())
	defer ts.Close()
	url := ts.URL + e.orgPath("/crawls/"+id+"/download")
	const total = benchDownloadCrawls * benchDownloadSize

	b.SetBytes(total)
	b.ReportAllocs()
	benchFlatDownload(b, url, e.tokens[asViewer], total)
}
