package store

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestPostCrawlTasksCrashRestart kills RunPostCrawlTasks before each of
// its database commands in turn (by cancelling its ctx from a command
// monitor, so the command may or may not have been applied), then runs it
// again as a restarted operator would, and checks that usage, bytesStored,
// workflow stats and collection counts are exactly what one clean run
// gives: nothing counted twice, nothing skipped.
func TestPostCrawlTasksCrashRestart(t *testing.T) {
	uri := serverURI(t)
	ctx := context.Background()
	var want string
	for k := 1; ; k++ {
		db := fmt.Sprintf("crash%d_%d", os.Getpid(), k)
		m, ids := openCrashFixture(t, uri, db)

		var commands atomic.Int64
		cctx, cancel := context.WithCancel(ctx)
		monitor := &event.CommandMonitor{Started: func(context.Context, *event.CommandStartedEvent) {
			if commands.Add(1) == int64(k) {
				cancel()
			}
		}}
		crashing := monitoredMongo(t, uri, db, monitor)
		_, crashErr := crashing.RunPostCrawlTasks(cctx, ids.crawl)
		cancel()
		_ = crashing.Close(ctx)

		if _, err := m.RunPostCrawlTasks(ctx, ids.crawl); err != nil {
			t.Fatalf("crash before command %d: restart: %v", k, err)
		}
		got := crashOutcome(t, m, ids)
		_ = m.db.Drop(ctx)
		_ = m.Close(ctx)

		if k == 1 {
			want = got
		}
		if got != want {
			t.Fatalf("crash before command %d (%v): outcome\n%s\nwant\n%s", k, crashErr, got, want)
		}
		if crashErr == nil { // ran to the end: every crash point covered
			t.Logf("covered %d crash points", k-1)
			if k < 10 {
				t.Fatalf("only %d commands: the monitor did not see the store's commands", k)
			}
			return
		}
	}
}

// monitoredMongo is a Mongo on database db of the server at uri whose
// commands monitor sees; the caller closes it.
func monitoredMongo(t *testing.T, uri, db string, monitor *event.CommandMonitor) *Mongo {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetRegistry(Registry()).SetMonitor(monitor))
	if err != nil {
		t.Fatal(err)
	}
	return &Mongo{client: client, db: client.Database(db)}
}

// stallingAggregates is a Mongo on database db of the server at uri whose
// aggregates on collection coll are held until their context ends: a scan
// that outlasts its caller on a loaded database.
func stallingAggregates(t *testing.T, uri, db, coll string) *Mongo {
	t.Helper()
	monitor := &event.CommandMonitor{Started: func(ctx context.Context, e *event.CommandStartedEvent) {
		if c, _ := e.Command.Lookup("aggregate").StringValueOK(); c == coll {
			<-ctx.Done()
		}
	}}
	m := monitoredMongo(t, uri, db, monitor)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

type crashIDs struct {
	org, wf, coll uuid.UUID
	crawl         string
}

// openCrashFixture sets up an org with a collection, a workflow that
// auto-adds to it, one crawl already finished and processed, and crawl
// "c2" complete but not yet processed.
func openCrashFixture(t *testing.T, uri, db string) (*Mongo, crashIDs) {
	t.Helper()
	ctx := context.Background()
	m, err := Open(ctx, uri, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	ids := crashIDs{org: uuid.New(), wf: uuid.New(), coll: uuid.New(), crawl: "c2"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.CreateOrg(ctx, &Org{ID: ids.org, Name: "org"}))
	_, err = m.coll(collCollections).InsertOne(ctx, &Collection{ID: ids.coll, OID: ids.org, Name: "coll", Tags: []string{}})
	must(err)
	name := "wf"
	must(m.CreateCrawlConfig(ctx, &CrawlConfig{
		ID: ids.wf, OID: ids.org, Name: &name, AutoAddCollections: []uuid.UUID{ids.coll},
		Config: RawCrawlConfig{Seeds: []Seed{{URL: "https://a.example/"}}},
	}))
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for i, id := range []string{"c1", "c2"} {
		started := t0.Add(time.Duration(i) * time.Hour)
		finished := started.Add(time.Duration(60*(i+1)) * time.Second)
		must(m.AddCrawl(ctx, &Crawl{ID: id, OID: ids.org, CID: ids.wf, Started: started, State: StateRunning, Tags: []string{id}}))
		_, err := m.AddCrawlFile(ctx, id, CrawlFile{Filename: id + ".wacz", Size: int64(100 * (i + 1))})
		must(err)
		_, err = m.RecordCrawlProgress(ctx, id, &CrawlStats{Found: 5, Done: int64(3 + i)}, nil)
		must(err)
		_, _, err = m.SetCrawlState(ctx, id, StateComplete, RunningStates, CrawlStateExtra{Finished: &finished})
		must(err)
		if id == "c1" {
			_, err = m.RunPostCrawlTasks(ctx, id)
			must(err)
		}
	}
	return m, ids
}

// crashOutcome renders everything the post-crawl tasks derive.
func crashOutcome(t *testing.T, m *Mongo, ids crashIDs) string {
	t.Helper()
	ctx := context.Background()
	o, err := m.GetOrg(ctx, ids.org)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := m.GetCrawlConfig(ctx, ids.org, ids.wf)
	if err != nil {
		t.Fatal(err)
	}
	var coll Collection
	if err := m.coll(collCollections).FindOne(ctx, bson.M{"_id": ids.coll}).Decode(&coll); err != nil {
		t.Fatal(err)
	}
	c, err := m.GetCrawlByID(ctx, ids.crawl)
	if err != nil {
		t.Fatal(err)
	}
	s := wf.WorkflowStats
	return fmt.Sprintf("org bytes=%d usage=%v\nworkflow attempts=%d count=%d ok=%d size=%d last=%s/%s/%d running=%v\n"+
		"collection crawls=%d pages=%d size=%d tags=%v\ncrawl in collection=%v done=%v",
		o.BytesStored, o.Usage, s.CrawlAttemptCount, s.CrawlCount, s.CrawlSuccessfulCount, s.TotalSize,
		*s.LastCrawlID, *s.LastCrawlState, *s.LastCrawlSize, s.IsCrawlRunning,
		coll.CrawlCount, coll.PageCount, coll.TotalSize, coll.Tags,
		len(c.CollectionIDs) == 1 && c.CollectionIDs[0] == ids.coll, c.PostCrawlDone)
}
