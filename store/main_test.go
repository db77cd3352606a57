package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestMain(m *testing.M) { mongotest.Main(m, mongotest.Options{}) }

// now is a second-precision UTC time, as the API stores times.
func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

func ptr[T any](v T) *T { return &v }

// mustOrg creates an org named name.
func mustOrg(t testing.TB, m *mongotest.DB, name string) *store.Org {
	t.Helper()
	o := &store.Org{ID: uuid.New(), Name: name}
	if err := m.CreateOrg(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return o
}

// newWorkflow returns a workflow of org oid with one seed.
func newWorkflow(oid uuid.UUID, name, seed string) *store.CrawlConfig {
	user := uuid.New()
	return &store.CrawlConfig{
		ID: uuid.New(), OID: oid, Name: ptr(name), JobType: "custom",
		Config: store.RawCrawlConfig{Seeds: []store.Seed{{URL: seed}}, ScopeType: "prefix", Depth: -1},
		Tags:   []string{}, Scale: 1, AutoAddCollections: []uuid.UUID{},
		Created: now(), CreatedBy: user, Modified: now(), ModifiedBy: user,
	}
}

func mustWorkflow(t testing.TB, m *mongotest.DB, oid uuid.UUID, name, seed string) *store.CrawlConfig {
	t.Helper()
	c := newWorkflow(oid, name, seed)
	if err := m.CreateCrawlConfig(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// newCrawl returns a starting crawl of workflow wf.
func newCrawl(wf *store.CrawlConfig, id string, started time.Time) *store.Crawl {
	return &store.Crawl{
		ID: id, UserID: wf.CreatedBy, OID: wf.OID, CID: wf.ID, CIDRev: wf.Rev,
		Name: wf.Name, Started: started, State: store.StateStarting,
		Config: wf.Config, Scale: 1, Manual: true,
	}
}

func mustCrawl(t testing.TB, m *mongotest.DB, wf *store.CrawlConfig, id string, started time.Time) *store.Crawl {
	t.Helper()
	c := newCrawl(wf, id, started)
	if err := m.AddCrawl(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// finish moves crawl id to state (via running), with the given files.
func finish(t testing.TB, m *mongotest.DB, id, state string, at time.Time, sizes ...int64) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := m.SetCrawlState(ctx, id, store.StateRunning, store.StartingStates, store.CrawlStateExtra{}); err != nil {
		t.Fatal(err)
	}
	for i, s := range sizes {
		f := store.CrawlFile{Filename: id + "-" + string(rune('a'+i)) + ".wacz", Size: s}
		if _, err := m.AddCrawlFile(ctx, id, f); err != nil {
			t.Fatal(err)
		}
	}
	allowed := store.ActiveStates
	ok, cur, err := m.SetCrawlState(ctx, id, state, allowed, store.CrawlStateExtra{Finished: &at})
	if err != nil || !ok {
		t.Fatalf("finishing %s as %s: ok=%v state=%v err=%v", id, state, ok, cur, err)
	}
}

// orgBytesStored reads org oid's bytesStored.
func orgBytesStored(t testing.TB, m *mongotest.DB, oid uuid.UUID) int64 {
	t.Helper()
	o, err := m.GetOrg(context.Background(), oid)
	if err != nil {
		t.Fatal(err)
	}
	return o.BytesStored
}
