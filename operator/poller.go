package operator

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/utils/clock"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// pollers runs one poller per crawl whose Redis should be read. Sync only
// talks to it through non-blocking calls.
type pollers struct {
	cfg   Config
	store CrawlStore
	clock clock.PassiveClock
	log   *slog.Logger
	// notify asks for a sync of key; change names what changed that may
	// change a decision (redisState.decisionChange), "" when only the
	// crawl's progress (pages, size) did.
	notify func(key, change string)

	mu sync.Mutex
	m  map[string]*poller // by job key
	// closed refuses new pollers once stopAll has run.
	closed bool
}

func newPollers(cfg Config, st CrawlStore, clk clock.PassiveClock, log *slog.Logger, notify func(key, change string)) *pollers {
	return &pollers{cfg: cfg, store: st, clock: clk, log: log, notify: notify, m: map[string]*poller{}}
}

// ensure starts the crawl's poller if needed and sets what it should
// assert. pods sums up the crawl's pods as the cache shows them
// (podsVersion): when they changed, the poller leaves its idle pace.
func (ps *pollers) ensure(ctx context.Context, key string, cj *trawlerv1.CrawlJob, ctl redisControl, pods string) {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return
	}
	p := ps.m[key]
	if p == nil {
		client, err := newRedisClient(ps.cfg, cj.Spec.ID)
		if err != nil {
			ps.mu.Unlock()
			ps.log.Error("cannot poll crawl redis", "crawl", cj.Spec.ID, "err", err)
			return
		}
		pctx, cancel := context.WithCancel(ctx)
		p = &poller{ps: ps, key: key, id: cj.Spec.ID, client: client, ctx: pctx, cancel: cancel,
			in: newIngester(cj, ps.store, ps.cfg.StoreTimeout, ps.log), done: make(chan struct{})}
		ps.m[key] = p
		p.start()
	}
	ps.mu.Unlock()
	p.setControl(ctl, pods)
}

// podsVersion sums up a crawl's pods as the cache shows them: their
// names and resource versions, which change with every status a kubelet
// reports (started, ready, exited, restarted).
func podsVersion(o observed) string {
	var b strings.Builder
	for _, i := range slices.Sorted(maps.Keys(o.Crawlers)) {
		b.WriteString(o.Crawlers[i].Name + "@" + o.Crawlers[i].ResourceVersion + " ")
	}
	if o.RedisPod != nil {
		b.WriteString(o.RedisPod.Name + "@" + o.RedisPod.ResourceVersion)
	}
	return b.String()
}

// get returns the last state of a job's poller, nil if none runs.
func (ps *pollers) get(key string) *redisState {
	ps.mu.Lock()
	p := ps.m[key]
	ps.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// stopped is returned by stop when no poller ran.
var stopped = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// stop ends a job's poller without waiting (a sync must not block on a
// poll in flight); the returned channel closes once it is gone.
func (ps *pollers) stop(key string) <-chan struct{} {
	ps.mu.Lock()
	p := ps.m[key]
	delete(ps.m, key)
	ps.mu.Unlock()
	if p == nil {
		return stopped
	}
	p.halt()
	return p.done
}

// stopAll ends every poller and refuses new ones, and returns once no
// round runs any more: from then on this process asserts nothing in any
// crawl's Redis (lost leadership or shutdown, before the next leader
// asserts its own decisions).
func (ps *pollers) stopAll() {
	ps.mu.Lock()
	ps.closed = true
	keys := make([]string, 0, len(ps.m))
	for key := range ps.m {
		keys = append(keys, key)
	}
	ps.mu.Unlock()
	done := make([]<-chan struct{}, 0, len(keys))
	for _, key := range keys {
		done = append(done, ps.stop(key))
	}
	for _, d := range done {
		<-d
	}
}

// poller reads one crawl's Redis on a short timer, records its files and
// errors, and wakes the controller when something changed: at once for
// what may change a decision, within the write budget for progress (the
// sync writes the stats, to the status and the crawl document together).
//
// Its pace follows the crawl (pollDelay): the poll interval while the
// crawl changes, slower and slower while it shows nothing new, so that
// an idle crawl costs a round trip every few seconds; a new control or a
// change of its pods wakes it at once.
//
// It holds no goroutine between rounds: each round runs from a timer
// (time.AfterFunc), so a thousand crawls cost a thousand timers, not a
// thousand parked goroutines and their stacks.
type poller struct {
	ps     *pollers
	key    string
	id     string
	client *redis.Client
	in     *ingester
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
	done   chan struct{}
	ended  sync.Once

	mu    sync.Mutex
	ctl   redisControl
	state *redisState
	// polling says a round runs; kicked that a new control came during
	// it, so the next round starts at once.
	polling bool
	kicked  bool

	// pods is the last podsVersion seen; quiet counts the rounds in a
	// row that found nothing new.
	pods  string
	quiet int

	// failures counts the rounds in a row that failed, since
	// failingSince.
	failures     int
	failingSince time.Time
	// storeRetry spaces the records while the store fails.
	storeRetry retryGate
}

// setControl changes what the poller asserts, polling at once if it or
// the crawl's pods changed.
func (p *poller) setControl(ctl redisControl, pods string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctl.equal(ctl) && p.pods == pods {
		return
	}
	p.ctl, p.pods, p.quiet = ctl, pods, 0
	if p.polling {
		p.kicked = true
	} else if p.ctx.Err() == nil {
		p.timer.Reset(0)
	}
}

// start runs the first round at once.
func (p *poller) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = time.AfterFunc(0, p.round)
}

// round polls once and sets the timer for the next round. A timer reset
// by a kick can fire while a round runs; that second round returns at
// once, and the kick makes the running one go again.
func (p *poller) round() {
	p.mu.Lock()
	if p.polling {
		p.mu.Unlock()
		return
	}
	if p.ctx.Err() != nil {
		p.mu.Unlock()
		p.end()
		return
	}
	p.polling = true
	p.mu.Unlock()

	next := p.pollOnce(p.ctx)

	p.mu.Lock()
	defer p.mu.Unlock()
	p.polling = false
	if p.ctx.Err() != nil {
		p.end()
		return
	}
	if p.kicked {
		p.kicked, next = false, 0
	}
	p.timer.Reset(next)
}

// halt stops the poller: at once when no round runs or is due to start,
// else once that round returns.
func (p *poller) halt() {
	p.cancel()
	p.mu.Lock()
	idle := !p.polling && p.timer.Stop()
	p.mu.Unlock()
	if idle {
		p.end()
	}
}

// end closes the poller's client and reports it gone, once.
func (p *poller) end() {
	p.ended.Do(func() {
		p.client.Close()
		close(p.done)
	})
}

// pollOnce does one round and returns the delay until the next: the poll
// interval, or a growing backoff while Redis fails.
func (p *poller) pollOnce(ctx context.Context) time.Duration {
	cfg := p.ps.cfg
	p.mu.Lock()
	ctl := p.ctl
	p.mu.Unlock()

	rctx, cancel := context.WithTimeout(ctx, cfg.RedisTimeout)
	s, err := readAndControl(rctx, p.client, p.id, ctl)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return cfg.RedisPollInterval
		}
		if p.failures++; p.failures == 1 {
			p.failingSince = p.ps.clock.Now()
		}
		// A fresh pool per failure: go-redis' dial circuit breaker would
		// otherwise keep answering with the old error for a while after
		// the Redis pod is back.
		if c, err := newRedisClient(cfg, p.id); err == nil {
			p.client.Close()
			p.client = c
		}
		if p.failures < unreachableAfter {
			return cfg.RedisPollInterval
		}
		p.publish(func(prev *redisState) *redisState {
			if prev != nil && !prev.Reachable {
				return prev
			}
			p.ps.log.Info("crawl redis unreachable", "crawl", p.id, "err", err)
			return &redisState{Since: p.failingSince}
		})
		return backoff(cfg.RedisPollInterval, p.failures-unreachableAfter+1, 5*time.Second)
	}
	p.failures = 0

	pending := p.record(ctx, s)
	changed := p.publish(func(*redisState) *redisState {
		return &redisState{
			Reachable: true, Since: p.ps.clock.Now(), Statuses: s.Statuses, StopOne: s.StopOne,
			PagesDone: s.PagesDone, PagesFound: s.PagesFound, Size: s.Size,
			PendingFiles: pending, FilesAdded: p.in.filesAdded, FilesAddedSize: p.in.filesAddedSize,
		}
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	// A full batch of pages means more may wait: no slower pace yet.
	if changed || pending > 0 || len(s.Pages) == pageBatch {
		p.quiet = 0
	} else {
		p.quiet++
	}
	return pollDelay(cfg.RedisPollInterval, cfg.RedisIdlePollInterval, p.quiet)
}

// unreachableAfter is how many rounds in a row must fail before a crawl's
// Redis counts as unreachable (from the first failure on). One failed
// round is not an outage: on a loaded node a round trip can outlast
// RedisTimeout, and each flap cost two state passes and two status
// writes (waiting for redis, then not), 5 a second at 10,000 crawls. The
// round after a failure comes at the poll interval, so an outage shows
// one interval later.
const unreachableAfter = 2

// pollDelay is the wait before the next round of a crawl whose Redis
// showed nothing new for quiet rounds in a row: the poll interval until a
// second has passed so (a busy crawl at a page a second never gets
// there), then twice as long per quiet round, up to idle.
func pollDelay(interval, idle time.Duration, quiet int) time.Duration {
	patience := max(int(time.Second/interval), 1)
	if quiet < patience || idle <= interval {
		return interval
	}
	return backoff(interval, quiet-patience+2, idle)
}

// record writes files, errors and pages to the store, backing off while the
// store fails. It returns the number of unrecorded files.
func (p *poller) record(ctx context.Context, s snapshot) int {
	if !p.storeRetry.due(p.ps.clock.Now()) {
		return int(s.DoneLen)
	}
	pending, err := p.in.files(ctx, p.client, s)
	if err == nil {
		err = p.in.errorLines(ctx, p.client, s)
	}
	if err == nil {
		err = p.in.pages(ctx, p.client, s)
	}
	if err != nil && ctx.Err() == nil {
		delay := p.storeRetry.failed(p.ps.clock.Now(), 500*time.Millisecond, 10*time.Second)
		p.ps.log.Warn("recording crawl files and errors failed, will retry", "crawl", p.id, "in", delay, "err", err)
	} else {
		p.storeRetry.succeeded()
	}
	return pending
}

// publish replaces the state and wakes the controller if it changed, and
// tells whether it did.
func (p *poller) publish(next func(prev *redisState) *redisState) bool {
	p.mu.Lock()
	prev := p.state
	st := next(prev)
	changed := !st.equal(prev)
	if changed {
		p.state = st
	}
	p.mu.Unlock()
	if changed {
		p.ps.notify(p.key, st.decisionChange(prev))
	}
	return changed
}

// retryGate spaces the tries of a step while it fails: each failure
// doubles the wait before the next try (backoff).
type retryGate struct {
	at    time.Time
	fails int
}

// due reports whether the step may be tried at now.
func (g *retryGate) due(now time.Time) bool { return !now.Before(g.at) }

// failed counts a failure at now and returns the wait before the next
// try, from base up to limit.
func (g *retryGate) failed(now time.Time, base, limit time.Duration) time.Duration {
	g.fails++
	d := backoff(base, g.fails, limit)
	g.at = now.Add(d)
	return d
}

// succeeded starts the waits from base again.
func (g *retryGate) succeeded() { g.fails = 0 }

// backoff doubles base per failure beyond the first, up to limit.
func backoff(base time.Duration, failures int, limit time.Duration) time.Duration {
	d := base
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
