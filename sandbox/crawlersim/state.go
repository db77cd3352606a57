package crawlersim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Queue-add results, as the crawler's add script returns them.
const (
	addAdded = 0
	addLimit = 1
	addDupe  = 2
)

// maxRetryPending is how often a page whose lock vanished is queued again
// before it is dropped.
const maxRetryPending = 1

// The scripts keep every multi-key step atomic: several instances and the
// API's exclusion edits touch the same keys. JSON that the crawler rewrites
// inside Redis goes through cjson there too, so stored entries look the way
// the real crawler leaves them (cjson escapes "/" as "\/").
var (
	// KEYS p q s; ARGV url score json limit.
	addScript = redis.NewScript(`
local limit = tonumber(ARGV[4])
if limit > 0 and redis.call('scard', KEYS[3]) >= limit then return 1 end
if redis.call('sadd', KEYS[3], ARGV[1]) == 0 then return 2 end
redis.call('zadd', KEYS[2], ARGV[2], ARGV[3])
redis.call('hdel', KEYS[1], ARGV[1])
return 0`)

	// KEYS q p; ARGV lockPrefix ttlMs uid. The lock is taken in the same
	// step as the pop (the crawler takes it a moment later, when the page
	// starts); otherwise an idle instance's requeue could hand a page that
	// was just popped to a second crawler.
	nextScript = redis.NewScript(`
local res = redis.call('zpopmin', KEYS[1])
local json = res[1]
if not json then return false end
local url = cjson.decode(json)['url']
redis.call('hset', KEYS[2], url, json)
redis.call('set', ARGV[1] .. url, ARGV[3], 'PX', ARGV[2])
return json`)

	// KEYS p lock; ARGV url started ttlMs uid.
	startScript = redis.NewScript(`
local json = redis.call('hget', KEYS[1], ARGV[1])
if json then
  local data = cjson.decode(json)
  data['started'] = ARGV[2]
  redis.call('hset', KEYS[1], ARGV[1], cjson.encode(data))
  redis.call('set', KEYS[2], ARGV[4], 'PX', ARGV[3])
end
return 0`)

	// KEYS p d e; ARGV url, then the page's error lines. The lines go to
	// :e only while the page is still pending: a page queued again after
	// its lock expired logs them when it is crawled again.
	finishScript = redis.NewScript(`
if redis.call('hdel', KEYS[1], ARGV[1]) == 1 then
  for i = 2, #ARGV do redis.call('lpush', KEYS[3], ARGV[i]) end
end
return redis.call('incr', KEYS[2])`)

	// KEYS p f d e; ARGV url, then the page's error lines (as above).
	failScript = redis.NewScript(`
local json = redis.call('hget', KEYS[1], ARGV[1])
if json then
  local data = cjson.decode(json)
  data['failed'] = '1'
  redis.call('lpush', KEYS[2], cjson.encode(data))
  redis.call('hdel', KEYS[1], ARGV[1])
  for i = 2, #ARGV do redis.call('lpush', KEYS[4], ARGV[i]) end
end
return redis.call('incr', KEYS[3])`)

	// KEYS p; ARGV lockPrefix uid.
	unlockScript = redis.NewScript(`
local n = 0
for _, url in ipairs(redis.call('hkeys', KEYS[1])) do
  if redis.call('get', ARGV[1] .. url) == ARGV[2] then
    redis.call('del', ARGV[1] .. url)
    n = n + 1
  end
end
return n`)

	// KEYS p q; ARGV lockPrefix maxRetry. Returns {requeued urls, dropped urls}.
	requeueScript = redis.NewScript(`
local requeued, dropped = {}, {}
for _, url in ipairs(redis.call('hkeys', KEYS[1])) do
  if redis.call('exists', ARGV[1] .. url) == 0 then
    local data = cjson.decode(redis.call('hget', KEYS[1], url))
    data['retry'] = (data['retry'] or 0) + 1
    redis.call('hdel', KEYS[1], url)
    if data['retry'] <= tonumber(ARGV[2]) then
      redis.call('zadd', KEYS[2], 0, cjson.encode(data))
      table.insert(requeued, url)
    else
      table.insert(dropped, url)
    end
  end
end
return {requeued, dropped}`)
)

// crawlState is one instance's view of the shared crawl state in Redis.
type crawlState struct {
	rdb     *redis.Client
	id      string // crawl id: the key prefix
	uid     string // instance id: the hostname
	lockTTL time.Duration
	// do runs one Redis operation, retrying while Redis is unreachable the
	// way the crawler's client reconnects (see process.redisDo).
	do func(func(context.Context) error) error
}

func (c *crawlState) k(suffix string) string { return c.id + ":" + suffix }

func (c *crawlState) lockPrefix() string { return c.k("p:") }

// add queues a URL unless the page limit is reached or it was seen before.
func (c *crawlState) add(e queueEntry, limit int) (int, error) {
	data, err := marshalJSON(e)
	if err != nil {
		return 0, err
	}
	score := e.Depth + e.ExtraHops*1000000
	var res int
	err = c.do(func(ctx context.Context) (err error) {
		res, err = addScript.Run(ctx, c.rdb, []string{c.k("p"), c.k("q"), c.k("s")},
			e.URL, score, string(data), limit).Int()
		return err
	})
	return res, err
}

// next pops the lowest-scored entry and marks it pending, or returns ""
// when the queue is empty.
func (c *crawlState) next() (string, error) {
	var json string
	err := c.do(func(ctx context.Context) error {
		v, err := nextScript.Run(ctx, c.rdb, []string{c.k("q"), c.k("p")},
			c.lockPrefix(), c.lockTTL.Milliseconds(), c.uid).Text()
		if errors.Is(err, redis.Nil) {
			v, err = "", nil
		}
		json = v
		return err
	})
	return json, err
}

func (c *crawlState) markStarted(url, started string) error {
	return c.do(func(ctx context.Context) error {
		return startScript.Run(ctx, c.rdb, []string{c.k("p"), c.lockPrefix() + url},
			url, started, c.lockTTL.Milliseconds(), c.uid).Err()
	})
}

// markFinished counts a page done and pushes its error lines (newest
// last) in the same step.
func (c *crawlState) markFinished(url string, errLines []string) error {
	return c.do(func(ctx context.Context) error {
		return finishScript.Run(ctx, c.rdb, []string{c.k("p"), c.k("d"), c.k("e")}, scriptArgs(url, errLines)...).Err()
	})
}

// markFailed counts a page done and failed and pushes its error lines in
// the same step.
func (c *crawlState) markFailed(url string, errLines []string) error {
	return c.do(func(ctx context.Context) error {
		return failScript.Run(ctx, c.rdb, []string{c.k("p"), c.k("f"), c.k("d"), c.k("e")}, scriptArgs(url, errLines)...).Err()
	})
}

func scriptArgs(url string, lines []string) []any {
	args := []any{url}
	for _, l := range lines {
		args = append(args, l)
	}
	return args
}

// unlockOwn releases the pending locks a previous run of this instance
// left behind, so idle workers can queue those pages again.
func (c *crawlState) unlockOwn() (int, error) {
	var n int
	err := c.do(func(ctx context.Context) (err error) {
		n, err = unlockScript.Run(ctx, c.rdb, []string{c.k("p")}, c.lockPrefix(), c.uid).Int()
		return err
	})
	return n, err
}

// numPending first requeues (or drops) pending pages whose lock is gone,
// then returns how many pages are pending on any instance.
func (c *crawlState) numPending() (pending int64, requeued, dropped []string, err error) {
	err = c.do(func(ctx context.Context) error {
		res, err := requeueScript.Run(ctx, c.rdb, []string{c.k("p"), c.k("q")}, c.lockPrefix(), maxRetryPending).Slice()
		if err != nil {
			return err
		}
		requeued, dropped = stringSlice(res[0]), stringSlice(res[1])
		pending, err = c.rdb.HLen(ctx, c.k("p")).Result()
		return err
	})
	return pending, requeued, dropped, err
}

func (c *crawlState) queueSize() (int64, error) {
	var n int64
	err := c.do(func(ctx context.Context) (err error) { n, err = c.rdb.ZCard(ctx, c.k("q")).Result(); return err })
	return n, err
}

func (c *crawlState) numDone() (int64, error) {
	var n int64
	err := c.do(func(ctx context.Context) error {
		v, err := c.rdb.Get(ctx, c.k("d")).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		n, err = strconv.ParseInt(v, 10, 64)
		return err
	})
	return n, err
}

// isFinished is the crawler's "finished" predicate: nothing queued and at
// least one page done. Pending pages do not count.
func (c *crawlState) isFinished() (bool, error) {
	q, err := c.queueSize()
	if err != nil || q > 0 {
		return false, err
	}
	d, err := c.numDone()
	return d > 0, err
}

// isStopped reports a global stop or a stop of this instance.
func (c *crawlState) isStopped() (bool, error) {
	var stopped bool
	err := c.do(func(ctx context.Context) error {
		pipe := c.rdb.Pipeline()
		global := pipe.Get(ctx, c.k("stopping"))
		one := pipe.HGet(ctx, c.k("stopone"), c.uid)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		stopped = global.Val() == "1" || one.Val() == "1"
		return nil
	})
	return stopped, err
}

func (c *crawlState) status() (string, error) {
	var s string
	err := c.do(func(ctx context.Context) error {
		v, err := c.rdb.HGet(ctx, c.k("status"), c.uid).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		s = v
		return err
	})
	return s, err
}

func (c *crawlState) setStatus(s string) error {
	return c.do(func(ctx context.Context) error { return c.rdb.HSet(ctx, c.k("status"), c.uid, s).Err() })
}

// incFailCount counts a crawl exception in a sliding window and reports
// whether this was the third one.
func (c *crawlState) incFailCount(window time.Duration) (bool, error) {
	key := c.k("status:failcount:" + c.uid)
	var n int64
	err := c.do(func(ctx context.Context) (err error) {
		if n, err = c.rdb.Incr(ctx, key).Result(); err != nil {
			return err
		}
		return c.rdb.PExpire(ctx, key, window).Err()
	})
	return n >= 3, err
}

func (c *crawlState) setArchiveSize(n int64) error {
	return c.do(func(ctx context.Context) error { return c.rdb.HSet(ctx, c.k("size"), c.uid, n).Err() })
}

// logError pushes one error log line, newest first. It does not retry: a
// log line must never hold up the process.
func (c *crawlState) logError(ctx context.Context, line string) {
	_ = c.rdb.LPush(ctx, c.k("e"), line).Err()
}

func stringSlice(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, fmt.Sprint(it))
	}
	return out
}
