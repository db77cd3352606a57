package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestOperatorWritesWithMongoFilters runs the operator's conditional
// writes with the filters used on MongoDB (condition kept in the filter)
// whatever the server is, so that path also runs where no MongoDB exists.
func TestOperatorWritesWithMongoFilters(t *testing.T) {
	m := openTestDB(t, "full")
	ctx := context.Background()
	m.kindKnown, m.isFerret = true, false
	if err := m.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.AddCrawl(ctx, &Crawl{ID: "c", OID: uuid.New(), CID: uuid.New(), State: StateStarting}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Second)
	progress := func(p CrawlProgress) (bool, error) {
		n, err := m.RecordCrawlsProgress(ctx, []CrawlProgress{p})
		return n > 0, err
	}
	steps := []struct {
		name string
		do   func() (bool, error)
		want bool
	}{
		{"Running", func() (bool, error) {
			ok, _, err := m.SetCrawlState(ctx, "c", StateRunning, StartingStates, CrawlStateExtra{})
			return ok, err
		}, true},
		{"NotFromStarting", func() (bool, error) {
			ok, _, err := m.SetCrawlState(ctx, "c", StateWaitingOrgLimit, []string{StateStarting}, CrawlStateExtra{})
			return ok, err
		}, false},
		{"Stats", func() (bool, error) {
			return progress(CrawlProgress{CrawlID: "c", Stats: &CrawlStats{Found: 2, Done: 1}})
		}, true},
		{"File", func() (bool, error) {
			r, err := m.AddCrawlFile(ctx, "c", CrawlFile{Filename: "a", Size: 3})
			return r.Added == 1, err
		}, true},
		{"FileAgain", func() (bool, error) {
			r, err := m.AddCrawlFile(ctx, "c", CrawlFile{Filename: "a", Size: 3})
			return r.Added == 1, err
		}, false},
		{"Complete", func() (bool, error) {
			ok, _, err := m.SetCrawlState(ctx, "c", StateComplete, RunningStates, CrawlStateExtra{Finished: &at})
			return ok, err
		}, true},
		{"StatsAfterFinish", func() (bool, error) { return progress(CrawlProgress{CrawlID: "c", Stats: &CrawlStats{Found: 9}}) }, false},
		{"PodsAfterFinish", func() (bool, error) {
			return progress(CrawlProgress{CrawlID: "c", Stats: &CrawlStats{Found: 9}, Pods: map[string]PodStatus{"0": {Phase: "Succeeded"}}})
		}, true},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil || got != st.want {
			t.Fatalf("%s: %v, %v; want %v", st.name, got, err, st.want)
		}
	}
	c, err := m.GetCrawlByID(ctx, "c")
	if err != nil || c.State != StateComplete || c.FileCount != 1 || c.FileSize != 3 || c.Stats.Done != 1 || c.Pods["0"].Phase != "Succeeded" {
		t.Fatalf("crawl %+v, %v", c, err)
	}
}
