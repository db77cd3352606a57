package crawlersim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pausing, as browsertrix-crawler 1.x does it (upstream-2026.md §1.6):
// before each page the crawler reads <id>:paused; "1" interrupts the
// crawl, workers finish the pages in flight, the crawler packages and
// uploads a WACZ of what it has not uploaded yet (crawls-done as usual),
// deletes its local collection, writes a size of 0, reports
// "interrupted" and exits 0, so its pod ends Succeeded. The queue stays
// in Redis; a crawler started again (the resume) crawls on from it. The
// simulator honours the key whatever its protocol: trawler never sets it
// for a 0.11 channel.

// checkPaused reads <id>:paused and, when it is "1", interrupts the
// crawl to pause it. It reports whether the crawl is paused.
func (p *process) checkPaused() (bool, error) {
	var v string
	err := p.state.do(func(ctx context.Context) error {
		s, err := p.state.rdb.Get(ctx, p.state.k("paused")).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		v = s
		return err
	})
	if err != nil || v != "1" {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.log.info("general", "Crawl paused, finishing current pages and uploading", nil)
		p.paused = true
		p.uploadAndDelete = true
		p.interrupted = true
	}
	return true, nil
}

// isPaused reports whether the crawl was paused.
func (p *process) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// pausedWithNothing reports a pause with nothing to upload (no page
// archived since the last upload): no WACZ is made then.
func (p *process) pausedWithNothing() bool {
	if !p.isPaused() {
		return false
	}
	warcs, err := p.arch.warcs()
	return err == nil && len(warcs) == 0
}

// finishPause writes the size of 0 a paused crawler leaves behind, its
// data uploaded and deleted; the caller then reports "interrupted" and
// exits 0.
func (p *process) finishPause() error {
	return p.state.setArchiveSize(0)
}

// pause ends fleet instances told to pause: each sends its crawls-done
// message, writes a size of 0 and "interrupted", and exits 0.
func (f *Fleet) pause(ctx context.Context, ins []*fleetInstance) error {
	for _, in := range ins {
		pipe := f.client(in.addr).Pipeline()
		k := fleetKeys(in.crawl.id)
		pipe.Select(ctx, in.db)
		f.mu.Lock()
		size := in.crawl.pages * f.opts.PageBytes
		f.mu.Unlock()
		if in.store != nil && in.store.webhook != "" && size > 0 {
			_, list, err := splitRedisWebhook(in.store.webhook)
			if err != nil {
				return err
			}
			name := interpolateFilename(in.store.template, time.Now(), in.uid, in.crawl.id)
			sum := sha256.Sum256([]byte(in.uid + name))
			msg, err := marshalJSON(in.store.message(name, hex.EncodeToString(sum[:]), size, false))
			if err != nil {
				return err
			}
			pipe.RPush(ctx, list, string(msg))
		}
		pipe.HSet(ctx, k("size"), in.uid, 0)
		pipe.HSet(ctx, k("status"), in.uid, "interrupted")
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("fleet: pausing %s: %w", in.uid, err)
		}
		in.exit <- 0
	}
	return nil
}
