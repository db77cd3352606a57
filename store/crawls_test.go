package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestAddCrawl(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	started := now()
	c := mustCrawl(t, m, wf, "crawl-1", started)

	t.Run("OK", func(t *testing.T) {
		got, err := m.GetCrawl(ctx, wf.OID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Type != store.TypeCrawl || got.FirstSeed != "https://a.example/" || got.Files == nil ||
			got.CollectionIDs == nil || got.Stats != nil || got.Finished != nil || !got.Started.Equal(started) {
			t.Fatalf("crawl %+v", got)
		}
		w, err := m.GetCrawlConfig(ctx, wf.OID, wf.ID)
		if err != nil {
			t.Fatal(err)
		}
		if w.CrawlAttemptCount != 1 || *w.LastCrawlID != c.ID || !w.IsCrawlRunning || w.LastCrawlTime != nil ||
			!w.LastRun.Equal(started) || *w.LastCrawlState != store.StateStarting {
			t.Fatalf("workflow stats %+v", w.WorkflowStats)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		err := m.AddCrawl(ctx, newCrawl(wf, c.ID, started))
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("err = %v", err)
		}
		if w, _ := m.GetCrawlConfig(ctx, wf.OID, wf.ID); w.CrawlAttemptCount != 1 {
			t.Fatalf("duplicate counted an attempt: %d", w.CrawlAttemptCount)
		}
	})
	t.Run("ErrNotFoundOtherOrg", func(t *testing.T) {
		if _, err := m.GetCrawl(ctx, uuid.New(), c.ID); !errors.Is(err, store.ErrNotFound) || store.Detail(err) != "crawl_not_found" {
			t.Fatalf("err = %v", err)
		}
		if err := m.SetCrawlStopping(ctx, uuid.New(), c.ID, true); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("stop in other org: %v", err)
		}
	})
	t.Run("Setters", func(t *testing.T) {
		cfg := wf.Config
		cfg.Exclude = store.Patterns{Values: []string{"bad"}, Set: true}
		for _, err := range []error{
			m.SetCrawlStopping(ctx, wf.OID, c.ID, true),
			m.SetCrawlScale(ctx, wf.OID, c.ID, 3),
			m.SetCrawlConfig(ctx, wf.OID, c.ID, cfg),
			m.UpdateCrawl(ctx, wf.OID, c.ID, store.CrawlUpdate{Name: store.Some(ptr("renamed")), Tags: store.Some([]string{"t"})}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, err := m.GetCrawlByID(ctx, c.ID)
		if err != nil || !got.Stopping || got.Scale != 3 || got.Config.Exclude.Values[0] != "bad" || *got.Name != "renamed" || got.Tags[0] != "t" {
			t.Fatalf("crawl %+v, %v", got, err)
		}
		err = m.UpdateCrawl(ctx, wf.OID, c.ID, store.CrawlUpdate{})
		if !errors.Is(err, store.ErrInvalid) || store.Detail(err) != "no_update_data" {
			t.Fatalf("empty update: %v", err)
		}
	})
}

// TestUpdateCrawlRoundTrips: an edit checks the crawl's org, then writes
// and reads back its collections in one findAndModify; it does not read
// the crawl again after writing it.
func TestUpdateCrawlRoundTrips(t *testing.T) {
	var cmds mongotest.Commands
	m := mongotest.Open(t, cmds.Option())
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	c := mustCrawl(t, m, wf, "crawl-1", now())

	cmds.Reset()
	upd := store.CrawlUpdate{Name: store.Some(ptr("renamed")), Tags: store.Some([]string{"t"})}
	if err := m.UpdateCrawl(ctx, wf.OID, c.ID, upd); err != nil {
		t.Fatal(err)
	}
	finds, writes, updates := cmds.Count("find", "crawls"), cmds.Count("findAndModify", "crawls"), cmds.Count("update", "crawls")
	if finds != 1 || writes != 1 || updates != 0 {
		t.Errorf("crawls: %d finds, %d findAndModify, %d updates; want 1 (the org check), 1, 0", finds, writes, updates)
	}
	got, err := m.GetCrawl(ctx, wf.OID, c.ID)
	if err != nil || *got.Name != "renamed" || !slices.Equal(got.Tags, []string{"t"}) {
		t.Fatalf("crawl after the edit %+v, %v", got, err)
	}

	if err := m.UpdateCrawl(ctx, uuid.New(), c.ID, upd); store.Detail(err) != "crawl_not_found" {
		t.Errorf("edit from another org: %v", err)
	}
	if err := m.UpdateCrawl(ctx, wf.OID, "nope", upd); store.Detail(err) != "crawl_not_found" {
		t.Errorf("edit of a missing crawl: %v", err)
	}
}

func TestListCrawls(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	oid := uuid.New()
	wfA := mustWorkflow(t, m, oid, "A", "https://a.example/")
	wfB := mustWorkflow(t, m, oid, "B", "https://b.example/")
	coll := uuid.New()
	if err := m.CreateCollection(ctx, &store.Collection{ID: coll, OID: oid, Name: "c", Modified: now()}); err != nil {
		t.Fatal(err)
	}
	t0 := now()
	c1 := mustCrawl(t, m, wfA, "c1", t0)
	c2 := mustCrawl(t, m, wfB, "c2", t0.Add(time.Minute))
	finish(t, m, c1.ID, store.StateComplete, t0.Add(10*time.Minute), 300) // a workflow runs one crawl at a time
	mustCrawl(t, m, wfA, "c3", t0.Add(2*time.Minute))
	finish(t, m, c2.ID, store.StateFailed, t0.Add(5*time.Minute), 100)
	if err := m.UpdateCrawl(ctx, oid, c2.ID, store.CrawlUpdate{Description: store.Some(ptr("d"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddToCollection(ctx, oid, coll, []string{c2.ID}, now()); err != nil {
		t.Fatal(err)
	}
	// An upload and a crawl without a type (older data) share the collection.
	up := bson.M{"_id": "u1", "type": store.TypeUpload, "oid": oid, "state": store.StateComplete, "started": t0, "fileSize": 5}
	legacy := bson.M{"_id": "l1", "oid": oid, "state": store.StateComplete, "started": t0.Add(-time.Hour), "fileSize": 1}
	if _, err := m.Raw().Collection("crawls").InsertMany(ctx, []any{up, legacy}); err != nil {
		t.Fatal(err)
	}
	other := mustWorkflow(t, m, uuid.New(), "O", "https://o.example/")
	mustCrawl(t, m, other, "o1", t0)

	tests := []struct {
		name  string
		f     store.CrawlFilter
		want  []string
		total int64
	}{
		{"CrawlsOnlyStartedAsc", store.CrawlFilter{SortBy: "started", SortDirection: 1}, []string{"l1", "c1", "c2", "c3"}, 4},
		{"AllTypes", store.CrawlFilter{Types: []string{store.TypeCrawl, store.TypeUpload}, SortBy: "started", SortDirection: 1}, []string{"l1", "c1", "u1", "c2", "c3"}, 5},
		{"Uploads", store.CrawlFilter{Types: []string{store.TypeUpload}}, []string{"u1"}, 1},
		{"Workflow", store.CrawlFilter{CID: &wfA.ID, SortBy: "started"}, []string{"c3", "c1"}, 2},
		{"States", store.CrawlFilter{States: store.FinishedStates, SortBy: "finished"}, []string{"c1", "c2", "l1"}, 3},
		{"Running", store.CrawlFilter{States: store.ActiveStates}, []string{"c3"}, 1},
		{"FileSize", store.CrawlFilter{SortBy: "fileSize", States: store.FinishedStates}, []string{"c1", "c2", "l1"}, 3},
		{"FirstSeed", store.CrawlFilter{FirstSeed: ptr("https://b.example/")}, []string{"c2"}, 1},
		{"Name", store.CrawlFilter{Name: ptr("A"), SortBy: "started"}, []string{"c3", "c1"}, 2},
		{"Description", store.CrawlFilter{Description: ptr("d")}, []string{"c2"}, 1},
		{"Collection", store.CrawlFilter{CollectionID: &coll}, []string{"c2"}, 1},
		{"User", store.CrawlFilter{UserID: &wfB.CreatedBy}, []string{"c2"}, 1},
		{"AllOrgs", store.CrawlFilter{AllOrgs: true, States: store.ActiveStates, SortBy: "started"}, []string{"c3", "o1"}, 2},
		{"Page2", store.CrawlFilter{SortBy: "started", SortDirection: 1, Paging: store.Paging{Page: 2, PageSize: 3}}, []string{"c3"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total, err := m.ListCrawls(ctx, oid, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs []string
			for _, c := range got {
				gotIDs = append(gotIDs, c.ID)
				if c.Files != nil {
					t.Errorf("list item %s carries files", c.ID)
				}
			}
			if !slices.Equal(gotIDs, tt.want) || total != tt.total {
				t.Fatalf("got %v total %d, want %v total %d", gotIDs, total, tt.want, tt.total)
			}
		})
	}
	t.Run("ErrInvalidSortBy", func(t *testing.T) {
		if _, _, err := m.ListCrawls(ctx, oid, store.CrawlFilter{SortBy: "name"}); store.Detail(err) != "invalid_sort_by" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("Active", func(t *testing.T) {
		act, err := m.ActiveCrawls(ctx, oid, wfA.ID)
		if err != nil || len(act) != 1 || act[0].ID != "c3" {
			t.Fatalf("active %v, %v", act, err)
		}
	})
	t.Run("SearchValues", func(t *testing.T) {
		sv, err := m.CrawlSearchValues(ctx, oid, nil)
		if err != nil || !slices.Equal(sv.Names, []string{"A", "B"}) || !slices.Equal(sv.Descriptions, []string{"d"}) ||
			!slices.Equal(sv.FirstSeeds, []string{"https://a.example/", "https://b.example/"}) {
			t.Fatalf("search values %+v, %v", sv, err)
		}
	})
}

func TestDeleteCrawls(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	t0 := now()
	for i, state := range []string{store.StateComplete, store.StatePartialComplete, store.StateFailed} {
		id := fmt.Sprintf("c%d", i)
		mustCrawl(t, m, wf, id, t0.Add(time.Duration(i)*time.Minute))
		finish(t, m, id, state, t0.Add(time.Duration(i)*time.Minute+time.Second), int64(100*(i+1)))
		if _, err := m.RunPostCrawlTasks(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.AddCrawlErrors(ctx, "c1", 0, []string{"e"}); err != nil {
		t.Fatal(err)
	}

	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := m.DeleteCrawls(ctx, uuid.New(), []string{"c0"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other org: %v", err)
		}
	})
	t.Run("OKRecomputes", func(t *testing.T) {
		// Deleting the newest successful crawl restores the previous one as
		// the last crawl (upstream TEST), and failed crawls never count as
		// successful.
		res, err := m.DeleteCrawls(ctx, org.ID, []string{"c1", "missing"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != 1 || res.Size != 200 || res.SizeByWorkflow[wf.ID] != 200 {
			t.Fatalf("result %+v", res)
		}
		w, err := m.GetCrawlConfig(ctx, org.ID, wf.ID)
		if err != nil {
			t.Fatal(err)
		}
		s := w.WorkflowStats
		if s.CrawlCount != 2 || s.CrawlSuccessfulCount != 1 || s.TotalSize != 100 || *s.LastCrawlID != "c2" ||
			*s.LastCrawlState != store.StateFailed || s.IsCrawlRunning || s.CrawlAttemptCount != 3 {
			t.Fatalf("workflow stats %+v", s)
		}
		o, err := m.GetOrg(ctx, org.ID)
		if err != nil || o.BytesStored != 400 {
			t.Fatalf("bytesStored %d, %v; want 400 (the files of c0 and c2 that remain)", o.BytesStored, err)
		}
		if _, total, _ := m.ListCrawlErrors(ctx, "c1", store.Paging{}); total != 0 {
			t.Fatalf("errors of deleted crawl remain: %d", total)
		}
	})
	t.Run("DeleteAll", func(t *testing.T) {
		res, err := m.DeleteCrawls(ctx, org.ID, []string{"c0", "c2"})
		if err != nil || res.Deleted != 2 {
			t.Fatalf("%+v, %v", res, err)
		}
		w, _ := m.GetCrawlConfig(ctx, org.ID, wf.ID)
		s := w.WorkflowStats
		if s.CrawlCount != 0 || s.CrawlSuccessfulCount != 0 || s.TotalSize != 0 || s.LastCrawlID != nil || s.LastRun != nil {
			t.Fatalf("workflow stats %+v", s)
		}
	})
}

// TestOneUnfinishedCrawlPerWorkflow: AddCrawl refuses a second crawl of a
// workflow while one has not ended, also when two processes (two API
// replicas, each with its own client) start it at the same moment.
func TestOneUnfinishedCrawlPerWorkflow(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "W", "https://w.example/")
	t0 := now()
	first := mustCrawl(t, m, wf, "first", t0)
	err := m.AddCrawl(ctx, newCrawl(wf, "second", t0))
	if !errors.Is(err, store.ErrCrawlAlreadyRunning) {
		t.Fatalf("second crawl while the first runs: %v", err)
	}
	if w, _ := m.GetCrawlConfig(ctx, wf.OID, wf.ID); w.CrawlAttemptCount != 1 {
		t.Errorf("a refused start counted an attempt: %d", w.CrawlAttemptCount)
	}
	if _, err := m.GetCrawlByID(ctx, "second"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused crawl was stored: %v", err)
	}
	if err := m.AddCrawl(ctx, newCrawl(wf, "first", t0)); !errors.Is(err, store.ErrCrawlExists) {
		t.Errorf("taken id: %v", err)
	}
	other := mustWorkflow(t, m, wf.OID, "O", "https://o.example/")
	mustCrawl(t, m, other, "other", t0) // another workflow runs alongside

	finish(t, m, first.ID, store.StateCanceled, t0.Add(time.Minute))
	mustCrawl(t, m, wf, "second", t0.Add(2*time.Minute))

	// A slot whose release was lost (a finished crawl still holding it) is
	// freed by the next start.
	finish(t, m, "second", store.StateComplete, t0.Add(3*time.Minute))
	if _, err := m.Raw().Collection("crawls").UpdateOne(ctx, bson.M{"_id": "second"}, bson.M{"$set": bson.M{"activeCid": wf.ID}}); err != nil {
		t.Fatal(err)
	}
	mustCrawl(t, m, wf, "third", t0.Add(4*time.Minute))
	finish(t, m, "third", store.StateComplete, t0.Add(5*time.Minute))

	// Two processes start the workflow at once, many times over: one wins
	// each time.
	replicas := make([]*store.Mongo, 2)
	for i := range replicas {
		r, err := store.Open(ctx, mongotest.URI(t), m.Name())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		replicas[i] = r
	}
	for round := range 10 {
		var wg sync.WaitGroup
		var won atomic.Int32
		for i, r := range replicas {
			wg.Go(func() {
				err := r.AddCrawl(ctx, newCrawl(wf, fmt.Sprintf("round%d-%d", round, i), t0.Add(time.Hour)))
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, store.ErrCrawlAlreadyRunning):
					t.Errorf("round %d replica %d: %v", round, i, err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("round %d: %d crawls started", round, won.Load())
		}
		active, err := m.ActiveCrawls(ctx, wf.OID, wf.ID)
		if err != nil || len(active) != 1 {
			t.Fatalf("round %d: active crawls %d, %v", round, len(active), err)
		}
		finish(t, m, active[0].ID, store.StateComplete, t0.Add(time.Hour))
	}
}
