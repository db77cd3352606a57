package operator

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// memStore is an in-memory CrawlStore with the same idempotency rules as
// store.Mongo, and a switch to make it fail like an unreachable database.
type memStore struct {
	mu       sync.Mutex
	down     bool
	crawls   map[string]*store.Crawl
	errLines map[string]map[int64]string
	opLines  map[string][]string
	orgs     map[uuid.UUID]*store.Org
	calls    map[string]int
	pages    map[uuid.UUID]store.Page
	// slowStates, when set before use, holds every SetCrawlState until it
	// is closed, as a slow database would.
	slowStates chan struct{}
	// slowCharges, the same for every ChargeCrawlsExec.
	slowCharges chan struct{}
}

var errDown = errors.New("server selection timeout")

func newMemStore() *memStore {
	return &memStore{crawls: map[string]*store.Crawl{}, errLines: map[string]map[int64]string{},
		opLines: map[string][]string{}, orgs: map[uuid.UUID]*store.Org{}, calls: map[string]int{},
		pages: map[uuid.UUID]store.Page{}}
}

func (m *memStore) addCrawl(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crawls[id] = &store.Crawl{ID: id, Type: store.TypeCrawl, State: store.StateStarting}
}

func (m *memStore) setDown(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

// callCount is how often method was called; the exec accounting calls
// the store from its own goroutines, so tests read under the lock.
func (m *memStore) callCount(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[method]
}

func (m *memStore) enter(method string) error {
	m.calls[method]++
	if m.down {
		return errDown
	}
	return nil
}

func (m *memStore) crawl(id string) (*store.Crawl, error) {
	c := m.crawls[id]
	if c == nil {
		return nil, store.NotFound("crawl_not_found")
	}
	return c, nil
}

func (m *memStore) get(id string) store.Crawl {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *m.crawls[id]
	c.Files = slices.Clone(c.Files)
	return c
}

func (m *memStore) errorsOf(id string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for i := int64(0); ; i++ {
		l, ok := m.errLines[id][i]
		if !ok {
			return out
		}
		out = append(out, l)
	}
}

func (m *memStore) SetCrawlState(_ context.Context, id, state string, from []string, extra store.CrawlStateExtra) (bool, *store.Crawl, error) {
	if m.slowStates != nil {
		<-m.slowStates
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("SetCrawlState"); err != nil {
		return false, nil, err
	}
	c, err := m.crawl(id)
	if err != nil {
		return false, nil, err
	}
	if len(from) > 0 && !slices.Contains(from, c.State) {
		cp := *c
		return false, &cp, nil
	}
	c.State = state
	if extra.Finished != nil {
		f := *extra.Finished
		c.Finished = &f
	}
	if extra.Stats != nil {
		s := *extra.Stats
		c.Stats = &s
	}
	cp := *c
	return true, &cp, nil
}

func (m *memStore) RecordCrawlsProgress(_ context.Context, progress []store.CrawlProgress) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("RecordCrawlsProgress"); err != nil {
		return 0, err
	}
	var matched int64
	for _, p := range progress {
		c, err := m.crawl(p.CrawlID)
		if err != nil {
			continue
		}
		if p.Stats != nil && !store.IsFinished(c.State) {
			st := *p.Stats
			c.Stats = &st
		}
		if p.Pods != nil {
			c.Pods = p.Pods
		}
		matched++
	}
	return matched, nil
}

func (m *memStore) PushCrawlFiles(_ context.Context, id string, files []store.CrawlFile) (store.FileResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("PushCrawlFiles"); err != nil {
		return store.FileResult{}, err
	}
	c, err := m.crawl(id)
	if err != nil {
		return store.FileResult{}, err
	}
	added := 0
	for _, f := range files {
		if !slices.ContainsFunc(c.Files, func(x store.CrawlFile) bool { return x.Filename == f.Filename }) {
			c.Files = append(c.Files, f)
			c.FileCount++
			c.FileSize += f.Size
			added++
		}
	}
	return store.FileResult{Added: added, FileCount: c.FileCount, FileSize: c.FileSize}, nil
}

func (m *memStore) AddCrawlErrors(_ context.Context, id string, seq int64, lines []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("AddCrawlErrors"); err != nil {
		return err
	}
	e := m.errLines[id]
	if e == nil {
		e = map[int64]string{}
		m.errLines[id] = e
	}
	if _, ok := e[seq-1]; seq > 0 && !ok {
		return store.Conflict("crawl_errors_gap")
	}
	for i, l := range lines {
		if _, ok := e[seq+int64(i)]; !ok {
			e[seq+int64(i)] = l
		}
	}
	return nil
}

func (m *memStore) AddOperatorCrawlErrors(_ context.Context, id string, lines []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("AddOperatorCrawlErrors"); err != nil {
		return err
	}
	m.opLines[id] = lines
	return nil
}

func (m *memStore) RunPostCrawlTasks(_ context.Context, id string) (*store.Crawl, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("RunPostCrawlTasks"); err != nil {
		return nil, err
	}
	c, err := m.crawl(id)
	if err != nil {
		return nil, err
	}
	if !store.IsFinished(c.State) {
		return nil, store.Invalid("crawl_not_finished")
	}
	c.PostCrawlDone = true
	cp := *c
	return &cp, nil
}

func (m *memStore) GetCrawlByID(_ context.Context, id string) (*store.Crawl, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("GetCrawlByID"); err != nil {
		return nil, err
	}
	c, err := m.crawl(id)
	if err != nil {
		return nil, err
	}
	cp := *c
	return &cp, nil
}

func (m *memStore) GetOrg(_ context.Context, id uuid.UUID) (*store.Org, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("GetOrg"); err != nil {
		return nil, err
	}
	if o := m.orgs[id]; o != nil {
		cp := *o
		return &cp, nil
	}
	return nil, store.NotFound("org_not_found")
}

func (m *memStore) GetOrgs(_ context.Context, ids []uuid.UUID) (map[uuid.UUID]*store.Org, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("GetOrgs"); err != nil {
		return nil, err
	}
	out := map[uuid.UUID]*store.Org{}
	for _, id := range ids {
		if o := m.orgs[id]; o != nil {
			cp := *o
			out[id] = &cp
		}
	}
	return out, nil
}

func (m *memStore) ChargeCrawlsExec(_ context.Context, charges []store.CrawlExecCharge) []store.ExecTick {
	if m.slowCharges != nil {
		<-m.slowCharges
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ticks := make([]store.ExecTick, len(charges))
	if err := m.enter("ChargeCrawlsExec"); err != nil {
		for i := range ticks {
			ticks[i].Err = err
		}
		return ticks
	}
	for i, c := range charges {
		ticks[i] = m.chargeCrawlExec(c.CrawlID, c.Since, c.Now, c.Seconds)
	}
	return ticks
}

func (m *memStore) chargeCrawlExec(id string, since *time.Time, now time.Time, seconds int64) store.ExecTick {
	c := m.crawls[id]
	if c == nil {
		return store.ExecTick{Err: store.NotFound("crawl_not_found")}
	}
	if since == nil || c.LastExecUpdate != nil && !c.LastExecUpdate.Equal(*since) {
		tick := store.ExecTick{LastUpdate: now, CrawlExecSeconds: c.CrawlExecSeconds}
		if c.LastExecUpdate != nil {
			tick.LastUpdate = *c.LastExecUpdate
		}
		return tick
	}
	c.CrawlExecSeconds += seconds
	c.LastExecUpdate = &now
	tick := store.ExecTick{Counted: true, LastUpdate: now, CrawlExecSeconds: c.CrawlExecSeconds}
	if o := m.orgs[c.OID]; o != nil && seconds > 0 {
		ch := store.SplitExecCharge(o, now, seconds)
		if o.CrawlExecSeconds == nil {
			o.CrawlExecSeconds, o.MonthlyExecSeconds = map[string]int64{}, map[string]int64{}
		}
		o.CrawlExecSeconds[ch.Month] += ch.Total
		o.MonthlyExecSeconds[ch.Month] += ch.Monthly
		o.GiftedExecSecondsAvailable -= ch.Gifted
		o.ExtraExecSecondsAvailable -= ch.Extra
		cp := *o
		tick.Org = &cp
	}
	return tick
}

func (m *memStore) RequestCrawlPause(_ context.Context, id string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.enter("RequestCrawlPause")
}

func (m *memStore) ClaimAutoPauseEmail(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("ClaimAutoPauseEmail"); err != nil {
		return false, err
	}
	c := m.crawls[id]
	if c == nil || c.AutoPausedEmailsSent {
		return false, nil
	}
	c.AutoPausedEmailsSent = true
	return true, nil
}

func (m *memStore) OrgOwnerEmails(context.Context, uuid.UUID) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return nil, m.enter("OrgOwnerEmails")
}

// eventually polls cond every 20 ms until it holds or the timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

func (m *memStore) AddPages(_ context.Context, pages []store.Page) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("AddPages"); err != nil {
		return 0, err
	}
	added := 0
	for _, p := range pages {
		if _, ok := m.pages[p.ID]; !ok {
			m.pages[p.ID] = p
			added++
		}
	}
	return added, nil
}
