package s3_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox/rsstest"
)

const (
	benchObjectSize = 1 << 30
	// Goals of issue 25 for /data/: at least 0.8 of the throughput
	// straight from S3, at most 16 MiB of RSS above idle.
	benchMinRatio = 0.8
	benchMaxRSS   = 16 << 20
	// benchRounds downloads alternate between direct and proxied; the
	// median of each counts. On 2 cores the direct figure is bimodal
	// (about 1,150 or 1,550 MiB/s, as the scheduler places the client and
	// the S3 server), so the best of a few rounds measured the luckiest
	// placement rather than the proxy's cost.
	benchRounds = 7
)

// BenchmarkAccessProxy1GiB downloads one 1 GiB object over real HTTP,
// straight from the S3 server and through the access proxy (/data/) in
// the same run, and reports the throughput of each, their ratio and this
// process's peak RSS above idle during the proxied downloads (the proxy,
// its client to the storage and the downloading client all count). The
// CPU time that each download costs (this process and the S3 server)
// tells the proxy's cost apart from the machine's load, which sways the
// throughputs. Run by `make bench`.
func BenchmarkAccessProxy1GiB(b *testing.B) {
	bucket := newBucket(b)
	ctx := context.Background()
	key := "org/bench/1gib.wacz"
	if _, err := bucket.Put(ctx, key, io.LimitReader(pattern{}, benchObjectSize), benchObjectSize, "application/wacz"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bucket.Delete(context.Background(), key) })
	cfg := bucket.Config()
	cfg.AccessEndpointURL = "/data/"
	viaProxy, err := s3.New(cfg, s3.Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s3.NewAccessProxy(viaProxy, nil))
	defer srv.Close()
	direct, err := bucket.PresignGet(ctx, key, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	proxied, err := viaProxy.PresignGet(ctx, key, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	proxied = srv.URL + proxied
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()

	b.ResetTimer()
	for range b.N {
		var directs, proxies []float64
		var peak int64
		cpuDirect, cpuProxy := time.Duration(1<<62), time.Duration(1<<62)
		for round := range benchRounds {
			cpu0 := cpuTime(b)
			d := download(b, client, direct)
			cpuDirect = min(cpuDirect, cpuTime(b)-cpu0)
			b.StopTimer()
			idle := rsstest.Idle(b)
			b.StartTimer()
			cpu0 = cpuTime(b)
			p := download(b, client, proxied)
			cpuProxy = min(cpuProxy, cpuTime(b)-cpu0)
			peak = max(peak, rsstest.Peak(b)-idle)
			directs, proxies = append(directs, d), append(proxies, p)
			b.Logf("round %d: direct %.0f MiB/s, through /data/ %.0f MiB/s", round+1, d, p)
		}
		b.StopTimer()
		medianDirect, medianProxy := median(directs), median(proxies)
		ratio := medianProxy / medianDirect
		b.ReportMetric(medianDirect, "direct-MiB/s")
		b.ReportMetric(medianProxy, "proxy-MiB/s")
		b.ReportMetric(ratio, "ratio")
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-above-idle-MiB")
		b.ReportMetric(cpuDirect.Seconds()*1000, "direct-CPU-ms")
		b.ReportMetric(cpuProxy.Seconds()*1000, "proxy-CPU-ms")
		b.Logf("1 GiB, medians of %d rounds: direct %.0f MiB/s, through /data/ %.0f MiB/s (ratio %.2f), peak RSS %.1f MiB above idle; "+
			"CPU of this process and the S3 server: direct %v, through /data/ %v",
			benchRounds, medianDirect, medianProxy, ratio, float64(peak)/(1<<20), cpuDirect.Round(time.Millisecond), cpuProxy.Round(time.Millisecond))
		if ratio < benchMinRatio {
			b.Errorf("through the proxy at %.2f of the direct throughput, goal >= %.1f", ratio, benchMinRatio)
		}
		if peak > benchMaxRSS {
			b.Errorf("peak RSS %.1f MiB above idle, goal <= %d MiB", float64(peak)/(1<<20), benchMaxRSS>>20)
		}
		b.StartTimer()
	}
}

// median returns the middle value of xs (len(xs) odd).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// download reads url to the end and returns the throughput in MiB/s.
func download(b *testing.B, client *http.Client, url string) float64 {
	b.Helper()
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	n, err := io.CopyBuffer(io.Discard, resp.Body, make([]byte, 256<<10))
	if err != nil || n != benchObjectSize {
		b.Fatalf("GET %s: %d bytes, %v", url, n, err)
	}
	return float64(n) / (1 << 20) / time.Since(start).Seconds()
}

// cpuTime is the CPU time used so far by this process and the S3 server.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(server.Pid()) + "/stat")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// utime and stime, the 14th and 15th fields, in clock ticks (1/100 s
	// on Linux); the name before them is in parentheses.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parsing /proc/<pid>/stat: %q", stat)
	}
	return self + time.Duration(utime+stime)*10*time.Millisecond
}

// pattern is an endless stream of printable bytes.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return len(p), nil
}
