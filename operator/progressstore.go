package operator

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/trawlerhq/trawler/store"
)

// progressBatchDelay is how long the first progress write of a batch
// waits for others: long enough to gather every busy crawl's write of the
// moment into one bulk write, short enough that a change reaches the
// crawl document well within a second of its status.
const progressBatchDelay = 100 * time.Millisecond

// progressStore writes the crawl documents' progress in batches, off the
// workers: a sync hands over what the document lacks and goes on, and one
// loop writes every crawl's latest with one bulk write (a slow MongoDB
// then delays progress, never a worker). A crawl's newer progress
// replaces what is still pending; a failed batch is kept, under anything
// newer, and retried with a growing pause.
type progressStore struct {
	store   CrawlStore
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	pending map[string]store.CrawlProgress // by crawl id
	// flying are the crawls whose stats are in the batch being written;
	// landed is closed when it is done. settled are those of them whose
	// final state is being recorded: a failed batch keeps their stats no
	// longer.
	flying  map[string]bool
	settled map[string]bool
	landed  chan struct{}
	kick    chan struct{}
}

func newProgressStore(st CrawlStore, timeout time.Duration, log *slog.Logger) *progressStore {
	return &progressStore{store: st, timeout: timeout, log: log, pending: map[string]store.CrawlProgress{},
		kick: make(chan struct{}, 1)}
}

// add hands over a crawl's progress (nil stats or pods: unchanged).
func (ps *progressStore) add(p store.CrawlProgress) {
	ps.mu.Lock()
	ps.pending[p.CrawlID] = merged(ps.pending[p.CrawlID], p)
	ps.mu.Unlock()
	ps.wake()
}

// wake has run write a batch soon.
func (ps *progressStore) wake() {
	select {
	case ps.kick <- struct{}{}:
	default:
	}
}

// merged is newer over older, field by field.
func merged(older, newer store.CrawlProgress) store.CrawlProgress {
	newer.CrawlID = cmp.Or(newer.CrawlID, older.CrawlID)
	if newer.Stats == nil {
		newer.Stats = older.Stats
	}
	if newer.Pods == nil {
		newer.Pods = older.Pods
	}
	return newer
}

// settle is called before a crawl's final state is recorded: it drops the
// crawl's pending stats (the final ones come with the state) and waits
// until no batch with its stats is in flight, so none lands after.
func (ps *progressStore) settle(ctx context.Context, id string) error {
	for {
		ps.mu.Lock()
		if p, ok := ps.pending[id]; ok {
			if p.Stats = nil; p.Pods == nil {
				delete(ps.pending, id)
			} else {
				ps.pending[id] = p
			}
		}
		landed := ps.landed
		if !ps.flying[id] {
			ps.mu.Unlock()
			return nil
		}
		ps.settled[id] = true
		ps.mu.Unlock()
		select {
		case <-landed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// run writes batches until ctx is done.
func (ps *progressStore) run(ctx context.Context) {
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-ps.kick:
		}
		if !sleep(ctx, progressBatchDelay) {
			return
		}
		if err := ps.flush(ctx); err != nil {
			failures++
			delay := backoff(500*time.Millisecond, failures, 10*time.Second)
			if failures == 1 {
				ps.log.Warn("recording crawl progress failed, will retry", "in", delay, "err", err)
			}
			if !sleep(ctx, delay) {
				return
			}
			ps.wake() // the failed batch is pending again
			continue
		}
		if failures > 0 {
			ps.log.Info("recording crawl progress works again")
		}
		failures = 0
	}
}

// flush writes everything pending in one bulk write.
func (ps *progressStore) flush(ctx context.Context) error {
	ps.mu.Lock()
	batch := ps.pending
	if len(batch) == 0 {
		ps.mu.Unlock()
		return nil
	}
	ps.pending = map[string]store.CrawlProgress{}
	ps.flying, ps.settled, ps.landed = map[string]bool{}, map[string]bool{}, make(chan struct{})
	for id, p := range batch {
		if p.Stats != nil {
			ps.flying[id] = true
		}
	}
	ps.mu.Unlock()

	sctx, cancel := context.WithTimeout(ctx, ps.timeout)
	_, err := ps.store.RecordCrawlsProgress(sctx, slices.Collect(maps.Values(batch)))
	cancel()

	ps.mu.Lock()
	if err != nil {
		for id, p := range batch {
			if ps.settled[id] {
				p.Stats = nil
			}
			if p.Stats != nil || p.Pods != nil {
				ps.pending[id] = merged(p, ps.pending[id])
			}
		}
	}
	close(ps.landed)
	ps.flying, ps.settled = nil, nil
	ps.mu.Unlock()
	return err
}

// sleep waits d and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
