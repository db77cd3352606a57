package operator

import (
	"sync"
	"time"

	"github.com/trawlerhq/trawler/store"
)

// writeBudget remembers per CrawlJob when its status was last written and
// which stats the crawl document holds, so that progress alone is written
// at most once per interval, and the document's stats move forward only.
// The poller asks it when to wake a sync for progress and whether the
// document lags (catchUpStats); syncs of one job never run concurrently,
// the pollers' wakes may.
type writeBudget struct {
	interval time.Duration

	mu   sync.Mutex
	jobs map[string]budgetEntry
}

type budgetEntry struct {
	written time.Time
	// stats is what the crawl document holds (when stored), from the
	// crawl's Redis as read at readAt (zero: a status written before, as a
	// restarted operator takes it); handed is when they were handed over.
	stats  store.CrawlStats
	stored bool
	readAt time.Time
	handed time.Time
	// final says the crawl's final state is being recorded: its final
	// stats come with it, no other may be handed over.
	final bool
}

func newWriteBudget(interval time.Duration) *writeBudget {
	return &writeBudget{interval: interval, jobs: map[string]budgetEntry{}}
}

// wait returns how long progress of key must wait before it may be
// written (0: now).
func (b *writeBudget) wait(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.jobs[key]
	if !ok {
		return 0
	}
	return max(e.written.Add(b.interval).Sub(now), 0)
}

func (b *writeBudget) wrote(key string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.jobs[key]
	e.written = now
	b.jobs[key] = e
}

// handOver records stats, read from the crawl's Redis at readAt, as what
// the crawl document holds, and calls add to write them, unless the
// document holds them already (known stands for what it holds when this
// process has handed nothing over yet), holds a newer reading (a pass's
// reading may be older than the one the poller's catch-up handed over),
// or the crawl's final state is being recorded. add runs under the
// budget's lock, so that the writes of two readings reach the batch
// writer in the order of the readings. It reports whether it called add.
func (b *writeBudget) handOver(key string, stats, known store.CrawlStats, readAt, now time.Time, add func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.jobs[key]
	if !e.stored {
		e.stats = known
	}
	if e.final || stats == e.stats || readAt.Before(e.readAt) {
		return false
	}
	e.stats, e.stored, e.readAt, e.handed = stats, true, readAt, now
	b.jobs[key] = e
	add()
	return true
}

// lagging reports whether the crawl document's stats were last handed
// over at least maxLag before now. A job this process has handed nothing
// yet starts its clock now: a new leader catches up after maxLag, not
// all its crawls at once.
func (b *writeBudget) lagging(key string, now time.Time, maxLag time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.jobs[key]
	if e.handed.IsZero() {
		e.handed = now
		b.jobs[key] = e
		return false
	}
	return !e.final && now.Sub(e.handed) >= maxLag
}

// finalize closes the crawl document's stats to handovers: its final
// state is about to be recorded, with the final stats.
func (b *writeBudget) finalize(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.jobs[key]
	e.final = true
	b.jobs[key] = e
}

func (b *writeBudget) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.jobs, key)
}
