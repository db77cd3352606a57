package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Redis keys of the crawler protocol (crawler 0.11) and the operator's own.
const (
	keyCrawlsDone = "crawls-done"
	keyLegacyStop = "crawl-stop"
	// keyErrorsIngested counts the <id>:e lines already recorded in MongoDB
	// and trimmed; it is the seq of the next batch.
	keyErrorsIngested = "errors-ingested"
)

// batchSize bounds the crawls-done messages and error lines handled per
// poll, so one busy crawl cannot make a poll slow.
const batchSize = 100

// newRedisClient returns a client for one crawl's Redis with short
// timeouts and no retries: a slow or absent Redis fails fast and the
// caller decides when to try again.
func newRedisClient(cfg Config, crawlID string) (*redis.Client, error) {
	opts, err := redis.ParseURL(cfg.RedisURL(crawlID))
	if err != nil {
		return nil, fmt.Errorf("parsing redis url: %w", err)
	}
	opts.DialTimeout = cfg.RedisTimeout
	opts.ReadTimeout = cfg.RedisTimeout
	opts.WriteTimeout = cfg.RedisTimeout
	opts.PoolSize = 2
	// A poll reads a few small keys: small buffers keep a thousand crawls'
	// clients in tens of MiB (the defaults cost ~320 KiB per client).
	opts.PipelinePoolSize = 1
	opts.ReadBufferSize, opts.WriteBufferSize = 16<<10, 16<<10
	opts.PipelineReadBufferSize, opts.PipelineWriteBufferSize = 16<<10, 16<<10
	opts.MinIdleConns = 0
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.DisableIdentity = true
	if cfg.RedisDialer != nil {
		opts.Dialer = cfg.RedisDialer
	} else {
		d := &net.Dialer{Timeout: cfg.RedisTimeout}
		opts.Dialer = d.DialContext
	}
	return redis.NewClient(opts), nil
}

// crawlKeys names the crawler's keys of one crawl.
type crawlKeys string

func (k crawlKeys) key(suffix string) string { return string(k) + ":" + suffix }

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
}

// readAndControl asserts the control keys and reads the crawl's state in
// one round trip. Writes come first, so the read reflects them.
func readAndControl(ctx context.Context, c *redis.Client, id string, ctl redisControl) (snapshot, error) {
	k := crawlKeys(id)
	pipe := c.Pipeline()
	if ctl.Stopping {
		pipe.Set(ctx, k.key("stopping"), "1", 0)
		pipe.Set(ctx, keyLegacyStop, "1", 0)
	}
	for _, name := range slices.Sorted(maps.Keys(ctl.StopOne)) {
		if ctl.StopOne[name] {
			pipe.HSet(ctx, k.key("stopone"), name, "1")
		} else {
			pipe.HDel(ctx, k.key("stopone"), name)
		}
	}
	for _, name := range ctl.Cleanup {
		pipe.HDel(ctx, k.key("stopone"), name)
		pipe.HDel(ctx, k.key("status"), name)
	}
	statuses := pipe.HGetAll(ctx, k.key("status"))
	stopone := pipe.HGetAll(ctx, k.key("stopone"))
	done := pipe.Get(ctx, k.key("d"))
	found := pipe.SCard(ctx, k.key("s"))
	sizes := pipe.HVals(ctx, k.key("size"))
	doneList := pipe.LRange(ctx, keyCrawlsDone, 0, batchSize-1)
	doneLen := pipe.LLen(ctx, keyCrawlsDone)
	errLines := pipe.LRange(ctx, k.key("e"), -batchSize, -1)
	errSeq := pipe.Get(ctx, keyErrorsIngested)
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return snapshot{}, fmt.Errorf("reading crawl state: %w", err)
	}

	s := snapshot{Statuses: statuses.Val(), StopOne: map[string]bool{}, PagesFound: found.Val(),
		Done: doneList.Val(), DoneLen: doneLen.Val()}
	for name, v := range stopone.Val() {
		if v == "1" {
			s.StopOne[name] = true
		}
	}
	switch {
	case isWrongType(done.Err()):
		// Crawlers before 0.10 kept a list of done pages.
		if s.PagesDone, err = c.LLen(ctx, k.key("d")).Result(); err != nil {
			return snapshot{}, fmt.Errorf("reading pages done: %w", err)
		}
	case done.Err() == nil:
		s.PagesDone, _ = strconv.ParseInt(done.Val(), 10, 64)
	}
	for _, v := range sizes.Val() {
		n, _ := strconv.ParseInt(v, 10, 64)
		s.Size += n
	}
	// LPUSH puts the newest line first: the tail holds the oldest.
	s.Errors = errLines.Val()
	slices.Reverse(s.Errors)
	if errSeq.Err() == nil {
		s.ErrorSeq, _ = strconv.ParseInt(errSeq.Val(), 10, 64)
	}
	return s, nil
}

func isWrongType(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}

// removeDone deletes recorded crawls-done messages by value. Removing by
// value, not by position, makes a repeated removal harmless.
func removeDone(ctx context.Context, c *redis.Client, msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	pipe := c.Pipeline()
	for _, m := range msgs {
		pipe.LRem(ctx, keyCrawlsDone, 1, m)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("removing recorded files: %w", err)
	}
	return nil
}

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
	err := trimErrorsScript.Run(ctx, c, []string{crawlKeys(id).key("e"), keyErrorsIngested}, seq, n).Err()
	if err != nil {
		return fmt.Errorf("trimming recorded errors: %w", err)
	}
	return nil
}
