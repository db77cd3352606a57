// Package crawlredis is the crawler's Redis protocol (browsertrix-crawler
// 0.11, shared/spec/crawler-protocol.md §4) as trawler speaks it: the key
// names of a crawl and the reads that both the API and the operator make.
// It imports nothing of trawler's, so both may use it.
package crawlredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Keys shared by every crawl in one Redis.
const (
	// CrawlsDone is the list crawlers push one message to per uploaded
	// WACZ (the key of their WEBHOOK_URL).
	CrawlsDone = "crawls-done"
	// LegacyStop is set next to a crawl's :stopping key for crawlers
	// before 0.10.
	LegacyStop = "crawl-stop"
	// ErrorsIngested is trawler's own: the number of :e lines already
	// recorded in MongoDB and trimmed, the seq of the next batch.
	ErrorsIngested = "errors-ingested"
)

// Keys names the crawler's keys of one crawl; its value is the crawl id,
// which is the crawler's CRAWL_ID key prefix.
type Keys string

func (k Keys) key(suffix string) string { return string(k) + ":" + suffix }

// Queue is the sorted set of queued pages (a list before crawler 0.10).
func (k Keys) Queue() string { return k.key("q") }

// Seen is the set of every URL found; its size is "pages found".
func (k Keys) Seen() string { return k.key("s") }

// Done counts finished pages (a list before crawler 0.10).
func (k Keys) Done() string { return k.key("d") }

// Size is the hash of each instance's archive size in bytes.
func (k Keys) Size() string { return k.key("size") }

// Failed is the list of pages that failed, newest first.
func (k Keys) Failed() string { return k.key("f") }

// Errors is the list of error log lines, newest first.
func (k Keys) Errors() string { return k.key("e") }

// Status is the hash of each instance's status.
func (k Keys) Status() string { return k.key("status") }

// Stopping is set to "1" to stop the whole crawl.
func (k Keys) Stopping() string { return k.key("stopping") }

// Paused is set to "1" to pause the whole crawl (crawler 1.x): each
// crawler finishes its pages, uploads a WACZ, reports "interrupted" and
// exits 0, leaving the queue for the resume.
func (k Keys) Paused() string { return k.key("paused") }

// StopOne is the hash of instances told to stop ("1").
func (k Keys) StopOne() string { return k.key("stopone") }

// Canceled is set to "1" when the crawl is canceled: 1.x crawlers exit at
// once, uploading nothing.
func (k Keys) Canceled() string { return k.key("canceled") }

// Pages is the list of page records 1.x crawlers push (--writePagesToRedis),
// newest first.
func (k Keys) Pages() string { return k.key("pages") }

// NextWACZ is the hash of the WACZ filename each instance's pages land in
// (1.x).
func (k Keys) NextWACZ() string { return k.key("nextWacz") }

// ExitsLogged is trawler's own: the hash of crawler exits whose line the
// operator pushed to :e, so each is pushed once.
func (k Keys) ExitsLogged() string { return k.key("exitsLogged") }

// IsWrongType reports a Redis WRONGTYPE reply: older crawlers keep some
// keys as lists.
func IsWrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }

// IsMissingOrWrongType reports the errors a pipelined read of crawl keys
// tolerates in its Exec: a key not written yet, or one of an older
// crawler's types, which the reads fall back on.
func IsMissingOrWrongType(err error) bool { return errors.Is(err, redis.Nil) || IsWrongType(err) }

// Stats are a crawl's counters as the crawler keeps them.
type Stats struct {
	// Found is the number of URLs seen, Done the pages finished
	// (successfully or not) and Size the bytes archived so far.
	Found, Done, Size int64
}

// StatsRead is the read of a crawl's stats queued on a pipeline; call
// Result after the pipeline ran.
type StatsRead struct {
	keys  Keys
	found *redis.IntCmd
	done  *redis.StringCmd
	sizes *redis.MapStringStringCmd
}

// QueueStats queues the reads of crawl id's stats on pipe.
func QueueStats(ctx context.Context, pipe redis.Pipeliner, id string) StatsRead {
	k := Keys(id)
	return StatsRead{keys: k, found: pipe.SCard(ctx, k.Seen()), done: pipe.Get(ctx, k.Done()),
		sizes: pipe.HGetAll(ctx, k.Size())}
}

// Result returns the stats once the pipeline ran. A :d kept as a list
// (crawlers before 0.10) is read again on c as its length; absent keys
// count zero.
func (r StatsRead) Result(ctx context.Context, c redis.Cmdable) (Stats, error) {
	st := Stats{Found: r.found.Val()}
	switch err := r.done.Err(); {
	case err == nil:
		st.Done, _ = strconv.ParseInt(r.done.Val(), 10, 64)
	case IsWrongType(err):
		n, err := c.LLen(ctx, r.keys.Done()).Result()
		if err != nil {
			return Stats{}, fmt.Errorf("reading pages done: %w", err)
		}
		st.Done = n
	}
	for _, v := range r.sizes.Val() {
		n, _ := strconv.ParseInt(v, 10, 64)
		st.Size += n
	}
	return st, nil
}

// Sizes returns each instance's archive size, keyed by instance id, once
// the pipeline ran; the crawl's size is their sum.
func (r StatsRead) Sizes() map[string]int64 {
	sizes := make(map[string]int64, len(r.sizes.Val()))
	for uid, v := range r.sizes.Val() {
		sizes[uid], _ = strconv.ParseInt(v, 10, 64)
	}
	return sizes
}

// ReadStats reads crawl id's stats in one round trip (two for a crawler
// before 0.10).
func ReadStats(ctx context.Context, c redis.Cmdable, id string) (Stats, error) {
	pipe := c.Pipeline()
	read := QueueStats(ctx, pipe, id)
	if _, err := pipe.Exec(ctx); err != nil && !IsMissingOrWrongType(err) {
		return Stats{}, fmt.Errorf("reading crawl stats: %w", err)
	}
	return read.Result(ctx, c)
}

// Progress is a running crawl as its Redis shows it: the stats, the
// failed pages, and each instance's status and archive size, keyed by
// instance id (the pod name).
type Progress struct {
	Stats
	// Failed counts the pages that failed (also counted in Done).
	Failed   int64
	Statuses map[string]string
	Sizes    map[string]int64
}

// ReadProgress reads crawl id's progress in one round trip (two for a
// crawler before 0.10); absent keys count zero.
func ReadProgress(ctx context.Context, c redis.Cmdable, id string) (Progress, error) {
	k := Keys(id)
	pipe := c.Pipeline()
	read := QueueStats(ctx, pipe, id)
	statuses := pipe.HGetAll(ctx, k.Status())
	failed := pipe.LLen(ctx, k.Failed())
	if _, err := pipe.Exec(ctx); err != nil && !IsMissingOrWrongType(err) {
		return Progress{}, fmt.Errorf("reading crawl progress: %w", err)
	}
	st, err := read.Result(ctx, c)
	if err != nil {
		return Progress{}, err
	}
	return Progress{Stats: st, Failed: failed.Val(), Statuses: statuses.Val(), Sizes: read.Sizes()}, nil
}
