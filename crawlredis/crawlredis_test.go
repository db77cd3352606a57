package crawlredis_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/metricstest"
)

// startRedis starts a redis-server for the test and returns a client of
// it with the given hooks.
func startRedis(t *testing.T, hooks ...redis.Hook) *redis.Client {
	t.Helper()
	srv, err := sandbox.StartRedis(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(0) })
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	for _, h := range hooks {
		c.AddHook(h)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestReadStats(t *testing.T) {
	ctx := context.Background()
	c := startRedis(t)

	k := crawlredis.Keys("c1")
	got, err := crawlredis.ReadStats(ctx, c, "c1")
	if err != nil || got != (crawlredis.Stats{}) {
		t.Fatalf("before the crawler wrote anything: %+v, %v", got, err)
	}

	c.SAdd(ctx, k.Seen(), "a", "b", "c")
	c.Set(ctx, k.Done(), "2", 0)
	c.HSet(ctx, k.Size(), "crawl-c1-0", "1000", "crawl-c1-1", "234")
	got, err = crawlredis.ReadStats(ctx, c, "c1")
	if want := (crawlredis.Stats{Found: 3, Done: 2, Size: 1234}); err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}

	// Crawlers before 0.10 keep :d as a list of done pages.
	c.Del(ctx, k.Done())
	c.RPush(ctx, k.Done(), "x", "y", "z", "w")
	got, err = crawlredis.ReadStats(ctx, c, "c1")
	if want := (crawlredis.Stats{Found: 3, Done: 4, Size: 1234}); err != nil || got != want {
		t.Fatalf("list :d: got %+v, %v; want %+v", got, err, want)
	}
}

func TestReadProgress(t *testing.T) {
	ctx := context.Background()
	c := startRedis(t)
	k := crawlredis.Keys("c1")
	got, err := crawlredis.ReadProgress(ctx, c, "c1")
	if err != nil || got.Stats != (crawlredis.Stats{}) || got.Failed != 0 || len(got.Statuses) != 0 || len(got.Sizes) != 0 {
		t.Fatalf("before the crawler wrote anything: %+v, %v", got, err)
	}
	c.SAdd(ctx, k.Seen(), "a", "b", "c", "d")
	c.Set(ctx, k.Done(), "3", 0)
	c.LPush(ctx, k.Failed(), `{"url":"d","failed":"1"}`)
	c.HSet(ctx, k.Size(), "crawl-c1-0", "1000", "crawl-c1-1", "234")
	c.HSet(ctx, k.Status(), "crawl-c1-0", "running", "crawl-c1-1", "done")
	got, err = crawlredis.ReadProgress(ctx, c, "c1")
	want := crawlredis.Progress{
		Stats:    crawlredis.Stats{Found: 4, Done: 3, Size: 1234},
		Failed:   1,
		Statuses: map[string]string{"crawl-c1-0": "running", "crawl-c1-1": "done"},
		Sizes:    map[string]int64{"crawl-c1-0": 1000, "crawl-c1-1": 234},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
}

func TestMetricsHook(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	hook, err := crawlredis.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := startRedis(t, hook)
	if _, err := crawlredis.ReadStats(ctx, c, "c1"); err != nil { // one pipeline, :d missing
		t.Fatal(err)
	}
	c.Set(ctx, "k", "v", 0)
	if err := c.HGet(ctx, "k", "f").Err(); !crawlredis.IsWrongType(err) { // an expected answer
		t.Fatalf("HGET of a string: %v", err)
	}
	if err := c.Do(ctx, "nosuchcommand").Err(); err == nil {
		t.Fatal("an unknown command succeeded")
	}
	// Each of the client's two pools (single commands, pipelines) dialed
	// and said HELLO once.
	for command, want := range map[string]float64{"dial": 2, "hello": 2, "pipeline": 1, "set": 1, "hget": 1, "nosuchcommand": 1} {
		if n, _ := metricstest.Sum(t, reg, "trawler_redis_command_duration_seconds", map[string]string{"command": command}); n != want {
			t.Errorf("%s: %v calls, want %v", command, n, want)
		}
	}
	calls, _ := metricstest.Sum(t, reg, "trawler_redis_command_duration_seconds", nil)
	failed, _ := metricstest.Sum(t, reg, "trawler_redis_command_errors_total", nil)
	unknown, _ := metricstest.Sum(t, reg, "trawler_redis_command_errors_total", map[string]string{"command": "nosuchcommand"})
	if calls != 8 || failed != 1 || unknown != 1 {
		t.Errorf("%v calls and %v failures (%v of the unknown command), want 8 and that one", calls, failed, unknown)
	}
}
