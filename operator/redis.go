package operator

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
)

// batchSize bounds the crawls-done messages and error lines handled per
// poll, so one busy crawl cannot make a poll slow.
const batchSize = 100

// newRedisClient returns a client for one crawl's Redis, sized for a
// thousand of them held at once.
func newRedisClient(cfg Config, crawlID string) (*redis.Client, error) {
	dial := cfg.RedisDialer
	if dial == nil {
		d := &net.Dialer{Timeout: cfg.RedisTimeout}
		dial = d.DialContext
	}
	opts, err := crawlredis.ClientOptions(k8s.RedisURL(crawlID, cfg.Namespace, cfg.ClusterDomain), cfg.RedisTimeout, dial)
	if err != nil {
		return nil, err
	}
	opts.PoolSize = 2
	// A poll reads a few small keys, and a thousand crawls each hold a
	// client: pipelines share the main pool (one connection, not two) and
	// 1 KiB buffers keep them all within a few MiB (the defaults cost
	// ~320 KiB per client). A poll's commands and its usual replies fit;
	// a larger reply (a batch of crawls-done messages) is read in several
	// fills.
	opts.PipelinePoolSize = -1
	opts.ReadBufferSize, opts.WriteBufferSize = 1<<10, 1<<10
	opts.MinIdleConns = 0
	opts.DialerRetries = 1
	c := redis.NewClient(opts)
	if cfg.RedisHook != nil {
		c.AddHook(cfg.RedisHook)
	}
	return c, nil
}

// snapshot is one pipelined read of a crawl's Redis.
type snapshot struct {
	Statuses   map[string]string
	StopOne    map[string]bool
	PagesDone  int64
	PagesFound int64
	Size       int64
	// Done are the first messages of crawls-done; DoneLen is the list length.
	Done    []string
	DoneLen int64
	// Errors are the oldest error lines, oldest first; ErrorSeq is the
	// number of lines already ingested.
	Errors   []string
	ErrorSeq int64
	// Pages are the oldest page records of <id>:pages, oldest first.
	Pages []string
}

// readAndControl asserts the control keys and reads the crawl's state in
// one round trip. Writes come first, so the read reflects them.
func readAndControl(ctx context.Context, c *redis.Client, id string, ctl redisControl) (snapshot, error) {
	k := crawlredis.Keys(id)
	pipe := c.Pipeline()
	if ctl.Stopping {
		pipe.Set(ctx, k.Stopping(), "1", 0)
		pipe.Set(ctx, crawlredis.LegacyStop, "1", 0)
	}
	switch {
	case ctl.Paused:
		pipe.SetNX(ctx, k.Paused(), "1", 0)
	case ctl.Unpause:
		pipe.Del(ctx, k.Paused())
	}
	for _, name := range slices.Sorted(maps.Keys(ctl.StopOne)) {
		if ctl.StopOne[name] {
			pipe.HSet(ctx, k.StopOne(), name, "1")
		} else {
			pipe.HDel(ctx, k.StopOne(), name)
		}
	}
	for _, name := range ctl.Cleanup {
		pipe.HDel(ctx, k.StopOne(), name)
		pipe.HDel(ctx, k.Status(), name)
	}
	for _, name := range ctl.Forget {
		forgetScript.Eval(ctx, pipe, []string{k.Status()}, name, statusInterrupted)
	}
	if ctl.Canceled {
		pipe.Set(ctx, k.Canceled(), "1", 0)
	}
	for _, e := range ctl.Exits {
		pushExitScript.Eval(ctx, pipe, []string{k.ExitsLogged(), k.Errors()}, e.Key, e.Line)
	}
	statuses := pipe.HGetAll(ctx, k.Status())
	stopone := pipe.HGetAll(ctx, k.StopOne())
	stats := crawlredis.QueueStats(ctx, pipe, id)
	doneList := pipe.LRange(ctx, crawlredis.CrawlsDone, 0, batchSize-1)
	doneLen := pipe.LLen(ctx, crawlredis.CrawlsDone)
	errLines := pipe.LRange(ctx, k.Errors(), -batchSize, -1)
	errSeq := pipe.Get(ctx, crawlredis.ErrorsIngested)
	pageRecs := pipe.LRange(ctx, k.Pages(), -pageBatch, -1)
	if _, err := pipe.Exec(ctx); err != nil && !crawlredis.IsMissingOrWrongType(err) {
		return snapshot{}, fmt.Errorf("reading crawl state: %w", err)
	}

	st, err := stats.Result(ctx, c)
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{Statuses: statuses.Val(), StopOne: map[string]bool{}, PagesFound: st.Found,
		PagesDone: st.Done, Size: st.Size, Done: doneList.Val(), DoneLen: doneLen.Val()}
	for name, v := range stopone.Val() {
		if v == "1" {
			s.StopOne[name] = true
		}
	}
	// LPUSH puts the newest line first: the tail holds the oldest.
	s.Errors = errLines.Val()
	slices.Reverse(s.Errors)
	s.Pages = pageRecs.Val()
	slices.Reverse(s.Pages)
	if errSeq.Err() == nil {
		s.ErrorSeq, _ = strconv.ParseInt(errSeq.Val(), 10, 64)
	}
	return s, nil
}

// removeDone deletes recorded crawls-done messages by value. Removing by
// value, not by position, makes a repeated removal harmless.
func removeDone(ctx context.Context, c *redis.Client, msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	pipe := c.Pipeline()
	for _, m := range msgs {
		pipe.LRem(ctx, crawlredis.CrawlsDone, 1, m)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("removing recorded files: %w", err)
	}
	return nil
}

// forgetScript deletes a :status field only while it holds the value
// given, so it never deletes what a crawler started since wrote.
var forgetScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end`)

// pushExitScript (sent whole: a pipeline cannot fall back from EVALSHA)
// pushes the operator's line about a crawler exit to the
// error lines unless the exit was logged already, so asserting it on
// every poll logs it once.
var pushExitScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], '1') == 1 then redis.call('LPUSH', KEYS[2], ARGV[2]) end
return 0
`)

// trimErrorsScript drops the n oldest error lines and advances the
// ingested counter, only if the counter still equals the seq the caller
// recorded: two ingesters can never trim the same batch twice.
var trimErrorsScript = redis.NewScript(`
if tonumber(redis.call('GET', KEYS[2]) or '0') ~= tonumber(ARGV[1]) then return 0 end
redis.call('LTRIM', KEYS[1], 0, -(tonumber(ARGV[2]) + 1))
redis.call('INCRBY', KEYS[2], ARGV[2])
return 1
`)

// trimErrors removes n recorded error lines that started at seq.
func trimErrors(ctx context.Context, c *redis.Client, id string, seq int64, n int) error {
	err := trimErrorsScript.Run(ctx, c, []string{crawlredis.Keys(id).Errors(), crawlredis.ErrorsIngested}, seq, n).Err()
	if err != nil {
		return fmt.Errorf("trimming recorded errors: %w", err)
	}
	return nil
}
