package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/trawlerhq/trawler/sandbox/metricstest"
	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// states returns the states of a history.
func states(h []store.StateChange) []string {
	out := make([]string, len(h))
	for i, c := range h {
		out[i] = fmt.Sprintf("%d:%s", c.Seq, c.State)
	}
	return out
}

func TestStateHistory(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	started := now()
	mustCrawl(t, m, wf, "c", started)

	set := func(to string, from ...string) {
		t.Helper()
		if _, _, err := m.SetCrawlState(ctx, "c", to, from, store.CrawlStateExtra{}); err != nil {
			t.Fatal(err)
		}
	}
	set(store.StateRunning)
	set(store.StateRunning)                                // the same state again: no entry
	set(store.StateWaitingOrgLimit, store.StateStarting)   // not allowed: no entry
	set(store.StateGenerateWACZ, store.RunningStates...)   // back to back,
	set(store.StateUploadingWACZ, store.StateGenerateWACZ) // as fast as the
	set(store.StateComplete, store.StateUploadingWACZ)     // operator goes
	c, err := m.GetCrawlProgress(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:starting", "2:running", "3:generate-wacz", "4:uploading-wacz", "5:complete"}
	if diff := cmp.Diff(want, states(c.StateHistory)); diff != "" {
		t.Fatalf("history (-want +got):\n%s", diff)
	}
	if !c.StateHistory[0].At.Equal(started) {
		t.Errorf("first state at %v, want the start %v", c.StateHistory[0].At, started)
	}
	for i := 1; i < len(c.StateHistory); i++ {
		if c.StateHistory[i].At.Before(c.StateHistory[i-1].At) {
			t.Errorf("entry %d is older than entry %d", i, i-1)
		}
	}

	t.Run("BoundedKeepsCounting", func(t *testing.T) {
		mustCrawl(t, m, wf, "flap", now())
		for i := range store.MaxStateHistory + 10 {
			to := store.StateRunning
			if i%2 == 1 {
				to = store.StateWaitingCapacity
			}
			if _, _, err := m.SetCrawlState(ctx, "flap", to, nil, store.CrawlStateExtra{}); err != nil {
				t.Fatal(err)
			}
		}
		c, err := m.GetCrawlProgress(ctx, "flap")
		if err != nil {
			t.Fatal(err)
		}
		h := c.StateHistory
		if len(h) != store.MaxStateHistory || h[len(h)-1].Seq != store.MaxStateHistory+11 || h[len(h)-1].State != c.State {
			t.Fatalf("%d entries, last %+v, state %s", len(h), h[len(h)-1], c.State)
		}
	})

	t.Run("CrawlStoredWithoutHistory", func(t *testing.T) {
		c := newCrawl(wf, "old", started)
		c.Type = store.TypeCrawl
		if _, err := m.Raw().Collection("crawls").InsertOne(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := m.GetCrawlProgress(ctx, "old")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"1:starting"}, states(got.History())); diff != "" {
			t.Fatalf("history before a change (-want +got):\n%s", diff)
		}
		if _, _, err := m.SetCrawlState(ctx, "old", store.StateRunning, nil, store.CrawlStateExtra{}); err != nil {
			t.Fatal(err)
		}
		if got, err = m.GetCrawlProgress(ctx, "old"); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"1:starting", "2:running"}, states(got.StateHistory)); diff != "" {
			t.Fatalf("history after a change (-want +got):\n%s", diff)
		}
	})
}

func TestGetCrawlProgress(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	if _, err := m.AddCrawlFile(ctx, "c", store.CrawlFile{Filename: "a.wacz", Size: 7}); err != nil {
		t.Fatal(err)
	}
	pods := map[string]store.PodStatus{"0": {Phase: "Running", Restarts: 1}}
	if _, err := m.RecordCrawlProgress(ctx, "c", &store.CrawlStats{Found: 4, Done: 2, Size: 9}, pods); err != nil {
		t.Fatal(err)
	}
	c, err := m.GetCrawlProgress(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if c.OID != wf.OID || c.State != store.StateStarting || c.Stats == nil || c.Stats.Done != 2 || c.Scale != 1 ||
		c.FileCount != 1 || c.FileSize != 7 || c.Pods["0"].Restarts != 1 || c.Type != store.TypeCrawl {
		t.Fatalf("progress %+v", c)
	}
	if c.Files != nil || len(c.Config.Seeds) != 0 {
		t.Fatalf("progress read the files or config: %+v", c)
	}
	if _, err := m.GetCrawlProgress(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing crawl: %v", err)
	}
}

// TestWatchCrawl checks the change stream where the server has one (a
// MongoDB replica set given by MONGO_URI), and that the test server says
// it has none, which sends watchers to polling.
func TestWatchCrawl(t *testing.T) {
	m := mongotest.Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	changed, err := m.WatchCrawl(ctx, "c")
	ferret := isFerret(t, m)
	if errors.Is(err, store.ErrNoChangeStreams) {
		if !ferret {
			t.Skip("this MongoDB is not a replica set: no change streams to test")
		}
		return // FerretDB v1 has none, as expected
	}
	if err != nil {
		t.Fatal(err)
	}
	if ferret {
		t.Fatal("FerretDB v1 claims a change stream")
	}
	if _, _, err := m.SetCrawlState(ctx, "c", store.StateRunning, nil, store.CrawlStateExtra{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change seen within 10 s of a state change")
	}
	cancel()
	for range changed { // closed once ctx ends
	}
}

func TestWithMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := mongotest.Open(t, store.WithMetrics(reg))
	ctx := context.Background()
	for range 3 {
		if _, err := m.GetCrawlProgress(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if n, _ := metricstest.Sum(t, reg, "trawler_mongo_command_duration_seconds", map[string]string{"command": "find"}); n != 3 {
		t.Fatalf("%v find commands counted, want 3", n)
	}
	if err := store.WithMetrics(reg)(options.Client()); err == nil {
		t.Fatal("registering the metrics twice on one registry did not fail")
	}
}

// isFerret asks the server whether it is FerretDB.
func isFerret(t *testing.T, m *mongotest.DB) bool {
	t.Helper()
	raw, err := m.Raw().RunCommand(context.Background(), bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.LookupErr("ferretdbVersion")
	return err == nil
}
