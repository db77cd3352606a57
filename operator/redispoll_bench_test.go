package operator

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/crawlredis"
)

// BenchmarkPollRound is one poll of a running crawl's Redis on a real
// redis-server (a crawler running, pages counted, nothing to ingest): the
// round the operator does several thousand times a second at 10,000
// crawls. Its CPU (cpu-ns/op: this process's, not redis-server's) and
// allocations are the operator's side of that.
//
//	go test -run '^$' -bench PollRound -benchmem ./operator/
func BenchmarkPollRound(b *testing.B) {
	_, cfg, c := testRedis(b)
	ctx := context.Background()
	k := crawlredis.Keys(testID)
	c.HSet(ctx, k.Status(), name(0), "running")
	c.Set(ctx, k.Done(), "7", 0)
	c.SAdd(ctx, k.Seen(), "a", "b", "c", "d", "e", "f", "g", "h")
	c.HSet(ctx, k.Size(), name(0), "1000")
	client, err := newRedisClient(cfg, testID)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	// The connection is dialled before the loop: `make bench` runs one
	// round (-benchtime 1x), which must be a poll, not a dial.
	if _, err := readAndControl(ctx, client, testID, redisControl{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	before := processCPU(b)
	for b.Loop() {
		if _, err := readAndControl(ctx, client, testID, redisControl{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b)-before)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
