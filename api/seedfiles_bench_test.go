package api

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox/rsstest"
)

const (
	// benchSeedURLs lines of 25 bytes make a seed file of exactly the
	// 25 MB upstream allows.
	benchSeedURLs = 1_000_000
	// benchSeedFileRSS is the goal for the process's peak RSS above idle.
	benchSeedFileRSS = 32 << 20
)

// seedLines generates the bench's seed file as it is read, so that the
// client holds none of it.
type seedLines struct {
	next int
	buf  []byte
}

func (s *seedLines) Read(p []byte) (int, error) {
	for len(s.buf) < len(p) && s.next < benchSeedURLs {
		s.buf = fmt.Appendf(s.buf, "https://e.example/%06d\n", s.next)
		s.next++
	}
	if len(s.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.buf)
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	return n, nil
}

// BenchmarkSeedFileUpload uploads a 25 MB seed file of 1,000,000 URLs
// over real HTTP, checked while it streams to the S3 server, and reports
// the time and this process's peak RSS above idle (server, S3 client and
// HTTP client all count; goal: at most 32 MiB). Run by `make bench`.
func BenchmarkSeedFileUpload(b *testing.B) {
	e := newStorageEnv(b, startS3(b), time.Hour)
	ts := httptest.NewServer(e.srv.Handler())
	defer ts.Close()
	url := ts.URL + e.orgPath("/files/seedFile?filename=seeds.txt")
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		idle := rsstest.Idle(b)
		b.StartTimer()
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPut, url, &seedLines{})
		req.Header.Set("Authorization", "Bearer "+e.tokens[asCrawler])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		b.StopTimer()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"added":true`) {
			b.Fatalf("upload: %d %s", resp.StatusCode, body)
		}
		above := rsstest.Peak(b) - idle
		b.ReportMetric(took.Seconds(), "s/upload")
		b.ReportMetric(float64(above)/(1<<20), "peak-RSS-above-idle-MiB")
		b.ReportMetric(float64(idle)/(1<<20), "idle-RSS-MiB")
		if above > benchSeedFileRSS {
			b.Errorf("peak RSS %d MiB above idle, goal at most %d MiB", above>>20, benchSeedFileRSS>>20)
		}
		if o := e.orgDoc(); o.BytesStoredSeedFiles != 25_000_000 {
			b.Fatalf("stored %d bytes of seed files, want 25000000", o.BytesStoredSeedFiles)
		}
		b.StartTimer()
	}
}
