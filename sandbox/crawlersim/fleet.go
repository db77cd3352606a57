package crawlersim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// Fleet is the crawler side of a scale test made cheap: its Program runs
// in every crawler pod and only joins the fleet, and one pool of
// goroutines advances all the crawls, writing the keys a 0.11 crawler
// writes (:status, :s, :d, :size, crawls-done) and reading the ones it
// reads (:stopping, :stopone, and 1.x's :paused, see pause.go) in
// pipelines per Redis server. A crawler
// process per pod would cost tens of MiB and its own Redis connection;
// here ten thousand instances cost a goroutine each and a few connections.
//
// An instance writes "running" and its seed once its crawl's Redis
// resolves. Busy crawls (Busy) finish a page every PageEvery on their
// first instance. An instance told to stop (:stopping, or its :stopone
// field) sends its crawls-done message, writes "done" and exits 0, as a
// crawler does after uploading its WACZ; Finish ends a whole crawl that
// way after its last page. A SIGTERM ends an instance at once.
type Fleet struct {
	opts FleetOptions

	mu      sync.Mutex
	crawls  map[string]*fleetCrawl
	endedAt map[string]time.Time     // when an instance of a crawl last said done
	clients map[string]*redis.Client // by server address
	busy    func(crawlID string) bool
}

// FleetOptions configure a Fleet. Zero values get the defaults noted.
type FleetOptions struct {
	// Locate returns the server (host:port) and database that a crawl's
	// Redis host name stands for, and false while it does not resolve
	// (sandbox.SharedRedis.Locate). Required.
	Locate func(host string) (addr string, db int, ok bool)
	// PageEvery is how often a busy crawl finishes a page (default 1 s).
	PageEvery time.Duration
	// ControlEvery is how often every instance reads its stop keys, and
	// the fleet's tick (default 500 ms, the crawler's idle poll).
	ControlEvery time.Duration
	// PageBytes is what a page adds to the instance's size (default 50,000).
	PageBytes int64
	// Workers run the pipelines of a tick (default 4).
	Workers int
	// Batch is the most instances in one pipeline (default 500).
	Batch int
}

// fleetCrawl is one crawl: its instances and what was written for it.
type fleetCrawl struct {
	id        string
	instances map[string]*fleetInstance // by uid
	pages     int64                     // pages done, as written
	lastPage  time.Time
	ending    bool
	// doneAt remembers when the last pageMarks page counts were written
	// (made at the first page: most crawls of a scale test stay idle).
	doneAt []pageMark
}

// pageMarks is how many page counts a crawl remembers: four minutes of a
// page a second, so that a status minutes behind is still timed.
const pageMarks = 256

type pageMark struct {
	n  int64
	at time.Time
}

// fleetInstance is one crawler pod's run.
type fleetInstance struct {
	crawl   *fleetCrawl
	uid     string
	host    string // the crawl's Redis host, from --redisStoreUrl
	first   bool   // index 0: the instance that crawls the pages
	store   *storage
	exit    chan int // capacity 1
	addr    string   // "" until the crawl's Redis resolved
	db      int
	started bool // "running" and the seed written
	ended   bool
}

// NewFleet returns a fleet; Run drives it.
func NewFleet(opts FleetOptions) *Fleet {
	if opts.PageEvery <= 0 {
		opts.PageEvery = time.Second
	}
	if opts.ControlEvery <= 0 {
		opts.ControlEvery = 500 * time.Millisecond
	}
	if opts.PageBytes <= 0 {
		opts.PageBytes = 50_000
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	return &Fleet{opts: opts, crawls: map[string]*fleetCrawl{}, endedAt: map[string]time.Time{}, clients: map[string]*redis.Client{},
		busy: func(string) bool { return false }}
}

// SetBusy sets which crawls crawl a page every PageEvery; the others idle.
func (f *Fleet) SetBusy(busy func(crawlID string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy = busy
}

// Program is the crawler pods' program: it joins the fleet and waits to
// be ended.
func (f *Fleet) Program() kubelet.Program {
	return func(ctx context.Context, c *kubelet.Container) int {
		in, err := f.join(c)
		if err != nil {
			fmt.Fprintln(c.Stdout, err)
			return 17 // the crawler's fatal exit
		}
		defer f.leave(in)
		select {
		case <-ctx.Done():
			return 0
		case code := <-in.exit:
			return code
		}
	}
}

// join adds a pod's run to its crawl.
func (f *Fleet) join(c *kubelet.Container) (*fleetInstance, error) {
	id := c.Env["CRAWL_ID"]
	if id == "" {
		return nil, errors.New("fleet: CRAWL_ID is not set")
	}
	u, err := url.Parse(argValue(c.Args, "redisStoreUrl"))
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("fleet: no usable --redisStoreUrl in %q", c.Args)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cr := f.crawls[id]
	if cr == nil {
		cr = &fleetCrawl{id: id, instances: map[string]*fleetInstance{}}
		f.crawls[id] = cr
	}
	in := &fleetInstance{crawl: cr, uid: c.Hostname, host: u.Hostname(), first: strings.HasSuffix(c.Hostname, "-0"),
		store: newStorage(c.Env, c.Hostname), exit: make(chan int, 1)}
	cr.instances[in.uid] = in
	return in, nil
}

func (f *Fleet) leave(in *fleetInstance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cr := in.crawl
	if cr.instances[in.uid] == in {
		delete(cr.instances, in.uid)
	}
	if len(cr.instances) == 0 && f.crawls[cr.id] == cr {
		delete(f.crawls, cr.id)
	}
}

// fleetKeys names a crawl's keys: <id>:<suffix>.
func fleetKeys(crawlID string) func(suffix string) string {
	return func(suffix string) string { return crawlID + ":" + suffix }
}

// argValue finds --name value or --name=value in args.
func argValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// Run advances the crawls every ControlEvery until ctx ends.
func (f *Fleet) Run(ctx context.Context) {
	t := time.NewTicker(f.opts.ControlEvery)
	defer t.Stop()
	defer f.closeClients()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.tick(ctx)
	}
}

func (f *Fleet) closeClients() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.clients {
		_ = c.Close()
	}
}

// step is what one tick does for one instance.
type step struct {
	in   *fleetInstance
	page bool // finish a page (the crawl's next count is in pages)
	n    int64
}

// tick plans every instance's step, then runs them in pipelines, by
// server, on the workers.
func (f *Fleet) tick(ctx context.Context) {
	now := time.Now()
	byServer := map[string][]step{}
	f.mu.Lock()
	for _, cr := range f.crawls {
		if cr.ending {
			continue
		}
		busy := f.busy(cr.id) && now.Sub(cr.lastPage) >= f.opts.PageEvery
		for _, in := range cr.instances {
			if in.ended {
				continue
			}
			if in.addr == "" {
				addr, db, ok := f.opts.Locate(in.host)
				if !ok {
					continue // the crawler waits for its Redis
				}
				in.addr, in.db = addr, db
			}
			s := step{in: in}
			if busy && in.first && in.started {
				cr.pages++
				cr.lastPage = now
				s.page, s.n = true, cr.pages
			}
			byServer[in.addr] = append(byServer[in.addr], s)
		}
	}
	f.mu.Unlock()

	work := make(chan []step)
	var wg sync.WaitGroup
	for range f.opts.Workers {
		wg.Go(func() {
			for batch := range work {
				f.run(ctx, batch)
			}
		})
	}
	for _, steps := range byServer {
		for len(steps) > 0 {
			n := min(len(steps), f.opts.Batch)
			work <- steps[:n]
			steps = steps[n:]
		}
	}
	close(work)
	wg.Wait()
}

// run runs one batch of steps (all on one server) in one pipeline.
func (f *Fleet) run(ctx context.Context, batch []step) {
	pipe := f.client(batch[0].in.addr).Pipeline()
	stops := make([]*redis.StringCmd, len(batch))
	stopOnes := make([]*redis.StringCmd, len(batch))
	pauses := make([]*redis.StringCmd, len(batch))
	counts := make([]*redis.IntCmd, len(batch))
	for i, s := range batch {
		in := s.in
		k := fleetKeys(in.crawl.id)
		pipe.Select(ctx, in.db)
		if !in.started {
			pipe.HSet(ctx, k("status"), in.uid, "running")
			pipe.SAdd(ctx, k("s"), "https://example.com/")
		}
		if s.page {
			pipe.SAdd(ctx, k("s"), fmt.Sprintf("https://example.com/page/%d", s.n))
			counts[i] = pipe.Incr(ctx, k("d"))
			pipe.HSet(ctx, k("size"), in.uid, s.n*f.opts.PageBytes)
		}
		stops[i] = pipe.Get(ctx, k("stopping"))
		stopOnes[i] = pipe.HGet(ctx, k("stopone"), in.uid)
		pauses[i] = pipe.Get(ctx, k("paused"))
	}
	at := time.Now()
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return // the next tick tries again; pages written stay counted
	}
	var ended, paused []*fleetInstance
	f.mu.Lock()
	for i, s := range batch {
		s.in.started = true
		if s.page {
			// The count Redis answered is the one the operator reads.
			cr, n := s.in.crawl, counts[i].Val()
			if cr.doneAt == nil {
				cr.doneAt = make([]pageMark, pageMarks)
			}
			cr.doneAt[n%pageMarks] = pageMark{n: n, at: at}
		}
		switch {
		case s.in.ended:
		case stops[i].Val() == "1" || stopOnes[i].Val() == "1":
			s.in.ended = true
			ended = append(ended, s.in)
		case pauses[i].Val() == "1":
			s.in.ended = true
			paused = append(paused, s.in)
		}
	}
	f.mu.Unlock()
	if len(ended) > 0 {
		_ = f.end(ctx, ended, false)
	}
	if len(paused) > 0 {
		_ = f.pause(ctx, paused)
	}
}

// end sends each instance's crawls-done message, writes "done" and exits
// it with 0; with lastPage, the crawl's last page (one more done than
// found) is written first, so the crawl completes.
func (f *Fleet) end(ctx context.Context, ins []*fleetInstance, lastPage bool) error {
	for _, in := range ins {
		pipe := f.client(in.addr).Pipeline()
		k := fleetKeys(in.crawl.id)
		pipe.Select(ctx, in.db)
		f.mu.Lock()
		size := in.crawl.pages * f.opts.PageBytes
		if lastPage && in.first {
			in.crawl.pages++
			pipe.Incr(ctx, k("d"))
		}
		f.mu.Unlock()
		if in.store != nil && in.store.webhook != "" {
			_, list, err := splitRedisWebhook(in.store.webhook)
			if err != nil {
				return err
			}
			name := interpolateFilename(in.store.template, time.Now(), in.uid, in.crawl.id)
			sum := sha256.Sum256([]byte(in.uid + name))
			msg, err := marshalJSON(in.store.message(name, hex.EncodeToString(sum[:]), size, lastPage))
			if err != nil {
				return err
			}
			pipe.RPush(ctx, list, string(msg))
		}
		pipe.HSet(ctx, k("status"), in.uid, "done")
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("fleet: ending %s: %w", in.uid, err)
		}
		f.mu.Lock()
		f.endedAt[in.crawl.id] = time.Now()
		f.mu.Unlock()
		in.exit <- 0
	}
	return nil
}

// Finish ends a crawl naturally: its last page, then every instance's
// WACZ message, "done" and exit 0. It returns once the keys are written.
func (f *Fleet) Finish(ctx context.Context, crawlID string) error {
	f.mu.Lock()
	cr := f.crawls[crawlID]
	var ins []*fleetInstance
	if cr != nil {
		cr.ending = true
		for _, in := range cr.instances {
			if !in.ended && in.started {
				in.ended = true
				ins = append(ins, in)
			}
		}
	}
	f.mu.Unlock()
	if len(ins) == 0 {
		return fmt.Errorf("fleet: crawl %s has no running instance", crawlID)
	}
	// The first instance writes the last page, before the others say done.
	for i, in := range ins {
		if in.first {
			ins[0], ins[i] = ins[i], ins[0]
		}
	}
	return f.end(ctx, ins, true)
}

// SetStatus writes a crawl's first instance's :status, as a crawler does
// when it moves between phases (e.g. pending-wait and back to running).
func (f *Fleet) SetStatus(ctx context.Context, crawlID, status string) error {
	f.mu.Lock()
	var in *fleetInstance
	if cr := f.crawls[crawlID]; cr != nil {
		for _, i := range cr.instances {
			if i.first && i.started && !i.ended {
				in = i
			}
		}
	}
	f.mu.Unlock()
	if in == nil {
		return fmt.Errorf("fleet: crawl %s has no running first instance", crawlID)
	}
	pipe := f.client(in.addr).Pipeline()
	pipe.Select(ctx, in.db)
	pipe.HSet(ctx, fleetKeys(crawlID)("status"), in.uid, status)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("fleet: setting %s's status: %w", crawlID, err)
	}
	return nil
}

// PagesAt returns when the crawl's pages-done count became n, if it is
// one of the last few written.
func (f *Fleet) PagesAt(crawlID string, n int64) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cr := f.crawls[crawlID]
	if cr == nil || cr.doneAt == nil {
		return time.Time{}, false
	}
	m := cr.doneAt[n%pageMarks]
	return m.at, m.n == n && !m.at.IsZero()
}

// PagesDone returns the crawl's pages-done count as last written.
func (f *Fleet) PagesDone(crawlID string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cr := f.crawls[crawlID]; cr != nil {
		return cr.pages
	}
	return 0
}

// EndedAt returns when an instance of the crawl last said done.
func (f *Fleet) EndedAt(crawlID string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.endedAt[crawlID]
	return at, ok
}

// Running counts the instances that have written "running".
func (f *Fleet) Running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, cr := range f.crawls {
		for _, in := range cr.instances {
			if in.started && !in.ended {
				n++
			}
		}
	}
	return n
}

// client is the fleet's client of one server. Every pipeline selects its
// databases itself, so connections may be left on any of them.
func (f *Fleet) client(addr string) *redis.Client {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clients[addr]
	if c == nil {
		c = redis.NewClient(&redis.Options{Addr: addr, PoolSize: f.opts.Workers, ReadTimeout: 10 * time.Second,
			WriteTimeout: 10 * time.Second, Protocol: 2})
		f.clients[addr] = c
	}
	return c
}
