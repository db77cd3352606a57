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
}

var errDown = errors.New("server selection timeout")

func newMemStore() *memStore {
	return &memStore{crawls: map[string]*store.Crawl{}, errLines: map[string]map[int64]string{},
		opLines: map[string][]string{}, orgs: map[uuid.UUID]*store.Org{}, calls: map[string]int{}}
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

func (m *memStore) RecordCrawlProgress(_ context.Context, id string, s *store.CrawlStats, pods map[string]store.PodStatus) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("RecordCrawlProgress"); err != nil {
		return false, err
	}
	c, err := m.crawl(id)
	if err != nil {
		return false, err
	}
	wrote := false
	if s != nil && !store.IsFinished(c.State) && (c.Stats == nil || *c.Stats != *s) {
		st := *s
		c.Stats, wrote = &st, true
	}
	if pods != nil {
		c.Pods, wrote = pods, true
	}
	return wrote, nil
}

func (m *memStore) AddCrawlFiles(_ context.Context, id string, files []store.CrawlFile) (store.FileResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.enter("AddCrawlFiles"); err != nil {
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
