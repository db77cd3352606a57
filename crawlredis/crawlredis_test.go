package crawlredis_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/sandbox"
)

func TestReadStats(t *testing.T) {
	ctx := context.Background()
	srv, err := sandbox.StartRedis(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(0) })
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })

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
