package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestRunPostCrawlTasks(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	coll := &store.Collection{ID: uuid.New(), OID: org.ID, Name: "auto", Modified: now(), Tags: []string{}}
	if _, err := m.Raw().Collection("collections").InsertOne(ctx, coll); err != nil {
		t.Fatal(err)
	}
	wf := newWorkflow(org.ID, "wf", "https://a.example/")
	wf.AutoAddCollections = []uuid.UUID{coll.ID}
	wf.Tags = []string{"t"}
	if err := m.CreateCrawlConfig(ctx, wf); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

	t.Run("ErrNotFinished", func(t *testing.T) {
		mustCrawl(t, m, wf, "running", t0.Add(-time.Hour))
		if _, err := m.RunPostCrawlTasks(ctx, "running"); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
		if _, err := m.RunPostCrawlTasks(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}
		finish(t, m, "running", store.StateCanceled, t0.Add(-50*time.Minute))
		if _, err := m.RunPostCrawlTasks(ctx, "running"); err != nil {
			t.Fatal(err)
		}
	})

	// A successful crawl of 90 s, then a failed one: the failed one must
	// not count as successful nor add usage (#3011); its file takes
	// storage like any other.
	c := newCrawl(wf, "ok", t0)
	c.Tags = []string{"t"}
	if err := m.AddCrawl(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RecordCrawlProgress(ctx, "ok", &store.CrawlStats{Found: 10, Done: 7, Size: 1000}, nil); err != nil {
		t.Fatal(err)
	}
	finish(t, m, "ok", store.StateComplete, t0.Add(90*time.Second), 600, 400)
	mustCrawl(t, m, wf, "bad", t0.Add(time.Hour))
	finish(t, m, "bad", store.StateFailed, t0.Add(time.Hour+time.Minute), 50)

	for _, id := range []string{"ok", "bad", "ok", "bad"} { // twice: idempotent
		got, err := m.RunPostCrawlTasks(ctx, id)
		if err != nil || !got.PostCrawlDone {
			t.Fatalf("%s: %+v, %v", id, got, err)
		}
	}

	t.Run("WorkflowStats", func(t *testing.T) {
		w, err := m.GetCrawlConfig(ctx, org.ID, wf.ID)
		if err != nil {
			t.Fatal(err)
		}
		s := w.WorkflowStats
		if s.CrawlAttemptCount != 3 || s.CrawlCount != 3 || s.CrawlSuccessfulCount != 1 || s.TotalSize != 1000 {
			t.Fatalf("counts %+v", s)
		}
		if *s.LastCrawlID != "bad" || *s.LastCrawlState != store.StateFailed || *s.LastCrawlSize != 50 ||
			!s.LastCrawlTime.Equal(t0.Add(time.Hour+time.Minute)) || s.IsCrawlRunning || *s.LastStartedBy != wf.CreatedBy {
			t.Fatalf("last crawl %+v", s)
		}
	})
	t.Run("OrgBytesAndUsage", func(t *testing.T) {
		// Usage counts the successful crawl only; bytesStored counts every
		// stored file, the failed crawl's 50 bytes too.
		o, err := m.GetOrg(ctx, org.ID)
		if err != nil || o.BytesStored != 1050 || o.Usage["2026-11"] != 90 || len(o.Usage) != 1 {
			t.Fatalf("bytesStored %d usage %v, %v; want 1050 and 2026-11: 90", o.BytesStored, o.Usage, err)
		}
	})
	t.Run("AutoAddCollection", func(t *testing.T) {
		ok, _ := m.GetCrawlByID(ctx, "ok")
		bad, _ := m.GetCrawlByID(ctx, "bad")
		if len(ok.CollectionIDs) != 1 || ok.CollectionIDs[0] != coll.ID || len(bad.CollectionIDs) != 0 {
			t.Fatalf("collectionIds ok %v bad %v", ok.CollectionIDs, bad.CollectionIDs)
		}
		var got store.Collection
		err := m.Raw().Collection("collections").FindOne(ctx, bson.M{"_id": coll.ID}).Decode(&got)
		if err != nil || got.CrawlCount != 1 || got.PageCount != 7 || got.TotalSize != 1000 || len(got.Tags) != 1 {
			t.Fatalf("collection %+v, %v", got, err)
		}
	})
	t.Run("RunningCrawlShownOnWorkflow", func(t *testing.T) {
		mustCrawl(t, m, wf, "next", t0.Add(2*time.Hour))
		if err := m.RecomputeWorkflowStats(ctx, wf.ID); err != nil {
			t.Fatal(err)
		}
		w, _ := m.GetCrawlConfig(ctx, org.ID, wf.ID)
		s := w.WorkflowStats
		if !s.IsCrawlRunning || *s.LastCrawlID != "next" || s.LastCrawlTime != nil || s.CrawlCount != 3 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestConcurrentPostCrawlTasks finishes several crawls of one workflow at
// once: the interleaved recomputations must leave the totals of all of
// them (the generation check in recompute), and usage must count each
// crawl once.
func TestConcurrentPostCrawlTasks(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const n = 8
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		mustCrawl(t, m, wf, id, t0.Add(time.Duration(i)*time.Minute))
		finish(t, m, id, store.StateComplete, t0.Add(time.Duration(i)*time.Minute+10*time.Second), 100)
	}
	var wg sync.WaitGroup
	for i := range n {
		for range 2 { // every crawl processed twice, concurrently
			wg.Go(func() {
				if _, err := m.RunPostCrawlTasks(ctx, fmt.Sprintf("c%d", i)); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	w, err := m.GetCrawlConfig(ctx, org.ID, wf.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s := w.WorkflowStats; s.CrawlCount != n || s.CrawlSuccessfulCount != n || s.TotalSize != 100*n || *s.LastCrawlID != "c7" {
		t.Fatalf("workflow stats %+v", s)
	}
	o, err := m.GetOrg(ctx, org.ID)
	if err != nil || o.BytesStored != 100*n || o.Usage["2026-11"] != 10*n {
		t.Fatalf("org bytes %d usage %v, %v", o.BytesStored, o.Usage, err)
	}
}
