package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/jsregex"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// redisTimeout bounds each call to a crawl's Redis: a slow or gone Redis
// must not hold up API requests.
const redisTimeout = 2 * time.Second

// queueScanBatch is how many queue entries one Redis call reads when the
// whole queue is scanned.
const queueScanBatch = 50

// liveCrawls reads (and for exclusions edits) a running crawl's Redis,
// the crawler's keys of crawler-protocol.md / spec §4.
type liveCrawls struct {
	namespace, clusterDomain string
	dial                     func(ctx context.Context, network, addr string) (net.Conn, error)
	// hook, when set, is added to every client (metrics).
	hook redis.Hook
}

func newLiveCrawls(ns, domain string, dial func(ctx context.Context, network, addr string) (net.Conn, error), hook redis.Hook) *liveCrawls {
	return &liveCrawls{namespace: ns, clusterDomain: domain, dial: dial, hook: hook}
}

// client returns a client of the crawl's Redis with short timeouts and no
// retries; the caller closes it.
func (l *liveCrawls) client(crawlID string) (*redis.Client, error) {
	opts, err := crawlredis.ClientOptions(k8s.RedisURL(crawlID, l.namespace, l.clusterDomain), redisTimeout, l.dial)
	if err != nil {
		return nil, err
	}
	opts.PoolSize = 1
	// Without this go-redis ignores ctx deadlines shorter than the
	// timeouts above, and a stalled Redis holds a caller with a smaller
	// budget (live stats) for the full read timeout.
	opts.ContextTimeoutEnabled = true
	r := redis.NewClient(opts)
	if l.hook != nil {
		r.AddHook(l.hook)
	}
	return r, nil
}

// with runs fn on a short-lived client of the crawl's Redis.
func (l *liveCrawls) with(ctx context.Context, crawlID string, fn func(ctx context.Context, r *redis.Client) error) error {
	r, err := l.client(crawlID)
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*redisTimeout)
	defer cancel()
	if err := fn(ctx, r); err != nil {
		return fmt.Errorf("crawl %s redis: %w", crawlID, err)
	}
	return nil
}

// stats reads found, done and size as the operator does.
func (l *liveCrawls) stats(ctx context.Context, crawlID string) (*store.CrawlStats, error) {
	var st crawlredis.Stats
	err := l.with(ctx, crawlID, func(ctx context.Context, r *redis.Client) error {
		var err error
		st, err = crawlredis.ReadStats(ctx, r, crawlID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &store.CrawlStats{Found: st.Found, Done: st.Done, Size: st.Size}, nil
}

// queuePage returns the queue's length and the entries [offset,
// offset+count) in crawl order, as raw JSON members.
func queuePage(ctx context.Context, r *redis.Client, crawlID string, offset, count int64) (int64, []string, error) {
	key := crawlredis.Keys(crawlID).Queue()
	total, err := r.ZCard(ctx, key).Result()
	if crawlredis.IsWrongType(err) {
		// crawler <= 0.9 queue: a list consumed from the right.
		if total, err = r.LLen(ctx, key).Result(); err != nil {
			return 0, nil, err
		}
		items, err := r.LRange(ctx, key, -offset-count, -offset-1).Result()
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
		return total, items, err
	}
	if err != nil {
		return 0, nil, err
	}
	items, err := r.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: "+inf", Offset: offset, Count: count}).Result()
	return total, items, err
}

// memberURL is the url of a queue member.
func memberURL(member string) string {
	var m struct {
		URL string `json:"url"`
	}
	if json.Unmarshal([]byte(member), &m) != nil {
		return ""
	}
	return m.URL
}

// queue is GET /queue: a page of queued URLs and those matching re. A
// pattern too costly to match (jsregex.ErrMatchLimit) ends it with that
// error, as it ends matchAll and removeMatching: one over-budget match
// says the pattern is hostile, and the next URLs would cost as much.
func (l *liveCrawls) queue(ctx context.Context, crawlID string, offset, count int64, re *jsregex.Regexp) (queueOut, error) {
	out := queueOut{Results: []string{}, Matched: []string{}}
	err := l.with(ctx, crawlID, func(ctx context.Context, r *redis.Client) error {
		total, members, err := queuePage(ctx, r, crawlID, offset, count)
		if err != nil {
			return err
		}
		out.Total = total
		for _, m := range members {
			u := memberURL(m)
			out.Results = append(out.Results, u)
			if re == nil {
				continue
			}
			ok, err := re.Match(u)
			if err != nil {
				return err
			}
			if ok {
				out.Matched = append(out.Matched, u)
			}
		}
		return nil
	})
	return out, err
}

// scanQueue calls fn for every queued member, a batch at a time.
func scanQueue(ctx context.Context, r *redis.Client, crawlID string, fn func(member string) error) (int64, error) {
	var total int64
	for offset := int64(0); ; offset += queueScanBatch {
		t, members, err := queuePage(ctx, r, crawlID, offset, queueScanBatch)
		if err != nil {
			return 0, err
		}
		total = t
		for _, m := range members {
			if err := fn(m); err != nil {
				return 0, err
			}
		}
		if len(members) < queueScanBatch {
			return total, nil
		}
	}
}

// matchAll is GET /queueMatchAll: every queued URL matching re.
func (l *liveCrawls) matchAll(ctx context.Context, crawlID string, re *jsregex.Regexp) (queueMatchOut, error) {
	out := queueMatchOut{Matched: []string{}}
	err := l.with(ctx, crawlID, func(ctx context.Context, r *redis.Client) error {
		var err error
		out.Total, err = scanQueue(ctx, r, crawlID, func(m string) error {
			u := memberURL(m)
			ok, err := re.Match(u)
			if ok {
				out.Matched = append(out.Matched, u)
			}
			return err
		})
		return err
	})
	return out, err
}

// removeMatching drops queued URLs matching a new exclusion from the
// queue and from the seen set, and returns how many it removed; it
// removes none when a match fails.
func (l *liveCrawls) removeMatching(ctx context.Context, crawlID string, re *jsregex.Regexp) (int, error) {
	var matched []string
	err := l.with(ctx, crawlID, func(ctx context.Context, r *redis.Client) error {
		if _, err := scanQueue(ctx, r, crawlID, func(m string) error {
			ok, err := re.Match(memberURL(m))
			if ok {
				matched = append(matched, m)
			}
			return err
		}); err != nil {
			return err
		}
		// Removing while scanning would shift the pages; remove after.
		k := crawlredis.Keys(crawlID)
		for _, m := range matched {
			err := r.ZRem(ctx, k.Queue(), m).Err()
			if crawlredis.IsWrongType(err) {
				err = r.LRem(ctx, k.Queue(), 1, m).Err()
			}
			if err != nil {
				return err
			}
			if err := r.SRem(ctx, k.Seen(), memberURL(m)).Err(); err != nil {
				return err
			}
		}
		return nil
	})
	return len(matched), err
}
