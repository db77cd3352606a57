package operator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/store"
)

// pageBatch bounds the page records read per poll. At the poll interval
// it moves thousands of pages a second per crawl, in one store write per
// batch, far above what a crawler finishes.
const pageBatch = 500

// pages records the snapshot's oldest page records (<id>:pages, written
// by 1.x crawlers) with one store write, then trims them from the list.
// The list only grows at its head (LPUSH), so trimming its tail never
// drops a record pushed meanwhile; a crash between the write and the trim
// reads the records again, and their ids, already stored, are skipped.
func (in *ingester) pages(ctx context.Context, c *redis.Client, s snapshot) error {
	if len(s.Pages) == 0 {
		return nil
	}
	now := time.Now()
	pages := make([]store.Page, 0, len(s.Pages))
	for _, raw := range s.Pages {
		p, ok := store.PageFromRecord([]byte(raw), store.PageSource{OID: in.oid, CrawlID: in.id}, now)
		if !ok {
			// Nothing a retry could store: upstream skipped these too.
			in.log.Warn("dropping unusable page record", "crawl", in.id, "record", truncated(raw))
			continue
		}
		pages = append(pages, p)
	}
	if len(pages) > 0 {
		sctx, cancel := context.WithTimeout(ctx, in.timeout)
		_, err := in.store.AddPages(sctx, pages)
		cancel()
		if err != nil {
			return fmt.Errorf("recording %d pages: %w", len(pages), err)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	if err := c.LTrim(rctx, crawlredis.Keys(in.id).Pages(), 0, -int64(len(s.Pages))-1).Err(); err != nil {
		return fmt.Errorf("trimming recorded pages: %w", err)
	}
	return nil
}

// truncated shortens a record for the log.
func truncated(s string) slog.Value {
	const limit = 200
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return slog.StringValue(s)
}
