package api

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/store"
)

// A crawl's event streams are fed by one watcher per crawl and process, a
// crawlFeed, however many clients follow the crawl: the store load of a
// hundred streams is that of one. The feed reads the crawl document when
// it changes (a change stream where the server has one) or on every poll
// (where it has not), and, while the crawl runs, its live progress from
// the crawl's Redis, as GET /crawls/{id} shows it. Each read that changes
// what streams show is published as a new crawlView; streams send what is
// new to their client and skip views they were too slow to see, except
// states, which the crawl document keeps in its history.

// feedReadTimeout bounds a feed's read of the crawl document.
const feedReadTimeout = 5 * time.Second

// crawlFeedStore is what crawl feeds read of the store.
type crawlFeedStore interface {
	// GetCrawlProgress reads the fields of a crawl that change as it runs.
	GetCrawlProgress(ctx context.Context, id string) (*store.Crawl, error)
	// WatchCrawl signals changes of a crawl, or fails with
	// store.ErrNoChangeStreams where the server cannot (then we poll).
	WatchCrawl(ctx context.Context, id string) (<-chan struct{}, error)
}

// crawlFeeds shares the feeds of the crawls being watched.
type crawlFeeds struct {
	store    crawlFeedStore
	live     *liveCrawls
	interval time.Duration
	log      *slog.Logger
	metrics  *httpMetrics

	mu    sync.Mutex
	feeds map[string]*crawlFeed
}

func newCrawlFeeds(st crawlFeedStore, live *liveCrawls, interval time.Duration, log *slog.Logger, m *httpMetrics) *crawlFeeds {
	return &crawlFeeds{store: st, live: live, interval: interval, log: log, metrics: m, feeds: map[string]*crawlFeed{}}
}

// crawlFeed watches one crawl for its streams.
type crawlFeed struct {
	id      string
	clients int // guarded by crawlFeeds.mu
	stop    context.CancelFunc

	mu      sync.Mutex
	view    *crawlView    // nil before the first read
	changed chan struct{} // closed when view is replaced
}

// crawlView is one look at a crawl: what its streams send.
type crawlView struct {
	oid     uuid.UUID
	typ     string
	history []store.StateChange
	event   crawlEventOut
	data    []byte // event as JSON
	hash    string // of data; part of the event ids
	final   bool
	// err is set when the crawl could not be read: store.ErrNotFound once
	// it is gone (streams end), another error only before a first good
	// read (streams that have a view keep it until the store answers).
	err error
}

// subscribe adds a stream to crawl id's feed, starting the feed if it is
// the first; the stream calls unsubscribe when it ends.
func (fs *crawlFeeds) subscribe(id string) *crawlFeed {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.feeds[id]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &crawlFeed{id: id, stop: cancel, changed: make(chan struct{})}
		fs.feeds[id] = f
		fs.metrics.feeds.Inc()
		go fs.run(ctx, f)
	}
	f.clients++
	fs.metrics.streams.Inc()
	return f
}

// unsubscribe removes a stream; the last one stops the feed.
func (fs *crawlFeeds) unsubscribe(f *crawlFeed) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.metrics.streams.Dec()
	if f.clients--; f.clients == 0 {
		f.stop()
		delete(fs.feeds, f.id)
		fs.metrics.feeds.Dec()
	}
}

// current returns the latest view (nil before the first read) and a
// channel closed when a newer one is published.
func (f *crawlFeed) current() (*crawlView, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.view, f.changed
}

// first waits for the feed's first view.
func (f *crawlFeed) first(ctx context.Context) (*crawlView, <-chan struct{}, error) {
	for {
		v, changed := f.current()
		if v != nil {
			return v, changed, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// publish replaces the view if it differs from the current one.
func (f *crawlFeed) publish(v *crawlView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.view != nil && f.view.hash == v.hash && len(f.view.history) == len(v.history) &&
		f.view.final == v.final && errors.Is(v.err, f.view.err) {
		return
	}
	f.view = v
	close(f.changed)
	f.changed = make(chan struct{})
}

// run is the feed's watcher: it reads until the crawl is final or gone,
// or its last stream left.
func (fs *crawlFeeds) run(ctx context.Context, f *crawlFeed) {
	w := &feedWatcher{feeds: fs, id: f.id}
	defer w.close()
	changes := w.watch(ctx)
	tick := time.NewTicker(fs.interval)
	defer tick.Stop()
	readDoc := true
	for {
		if readDoc {
			readDoc = !w.readDoc(ctx) // retry a failed read on the next tick
		}
		if v := w.view(ctx); v != nil {
			f.publish(v)
			if v.final || errors.Is(v.err, store.ErrNotFound) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			readDoc = true
			if !ok {
				// The change stream ended (a failover, a network error):
				// poll from now on rather than reopen it in a loop.
				changes = nil
			}
		case <-tick.C:
			readDoc = readDoc || changes == nil
		}
	}
}

// feedWatcher is a feed's reader state.
type feedWatcher struct {
	feeds *crawlFeeds
	id    string
	doc   *store.Crawl
	err   error
	rdb   *redis.Client // open while the crawl runs
}

// watch opens a change stream on the crawl, or returns nil (poll).
func (w *feedWatcher) watch(ctx context.Context) <-chan struct{} {
	changes, err := w.feeds.store.WatchCrawl(ctx, w.id)
	if err != nil {
		if !errors.Is(err, store.ErrNoChangeStreams) && ctx.Err() == nil {
			w.feeds.log.Warn("watching crawl, polling it instead", "crawl", w.id, "err", err)
		}
		return nil
	}
	return changes
}

// readDoc reads the crawl document and reports whether that worked.
func (w *feedWatcher) readDoc(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, feedReadTimeout)
	defer cancel()
	doc, err := w.feeds.store.GetCrawlProgress(ctx, w.id)
	switch {
	case err == nil:
		w.doc, w.err = doc, nil
	case errors.Is(err, store.ErrNotFound):
		w.doc, w.err = nil, err
	case ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded):
		w.feeds.log.Warn("reading crawl for its event streams", "crawl", w.id, "err", err)
		if w.doc == nil {
			w.err = err
		}
	}
	return err == nil || errors.Is(err, store.ErrNotFound)
}

// view is the crawl as the streams show it now, with the live progress
// read from Redis while it runs; nil when nothing could be read yet.
func (w *feedWatcher) view(ctx context.Context) *crawlView {
	if w.doc == nil {
		if w.err == nil {
			return nil
		}
		// No data and no hash: a hash is part of the event ids clients
		// see, and the error's text is not for them.
		return &crawlView{err: w.err, final: errors.Is(w.err, store.ErrNotFound)}
	}
	var live *crawlredis.Progress
	if store.IsRunning(w.doc.State) {
		live = w.progress(ctx)
	} else {
		w.close()
	}
	ev := toCrawlEvent(w.doc, live)
	data := mustJSON(ev)
	h := fnv.New64a()
	h.Write(data)
	return &crawlView{oid: w.doc.OID, typ: w.doc.Type, history: w.doc.History(), event: ev, data: data,
		hash: fmt.Sprintf("%016x", h.Sum64()), final: store.IsFinished(w.doc.State)}
}

// progress reads the crawl's Redis; nil if it does not answer (the stored
// stats are shown then, as GET /crawls/{id} does).
func (w *feedWatcher) progress(ctx context.Context) *crawlredis.Progress {
	if w.rdb == nil {
		rdb, err := w.feeds.live.client(w.id)
		if err != nil {
			w.feeds.log.Debug("crawl redis for event streams", "crawl", w.id, "err", err)
			return nil
		}
		w.rdb = rdb
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	p, err := crawlredis.ReadProgress(ctx, w.rdb, w.id)
	if err != nil {
		w.feeds.log.Debug("live crawl progress unavailable", "crawl", w.id, "err", err)
		return nil
	}
	return &p
}

// close closes the Redis client, if open.
func (w *feedWatcher) close() {
	if w.rdb != nil {
		_ = w.rdb.Close()
		w.rdb = nil
	}
}
