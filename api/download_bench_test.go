package api

import (
	"bufio"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
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

	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		debug.FreeOSMemory()
		idle := procStatus(b, "VmRSS")
		resetPeakRSS(b)
		b.StartTimer()
		start := time.Now()
		n := getBody(b, url, e.tokens[asViewer])
		took := time.Since(start)
		b.StopTimer()
		if n < benchDownloadCrawls*benchDownloadSize {
			b.Fatalf("downloaded %d bytes", n)
		}
		above := procStatus(b, "VmHWM") - idle
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

// procStatus reads a size field (kB) of /proc/self/status, in bytes.
func procStatus(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// resetPeakRSS starts VmHWM over from the current RSS (Linux 4.0+).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
}
