package store

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestPostCrawlTasksMarkedBeforeASlowHeal: the org's bytesStored
// recomputation is best effort, so a scan that outlasts the tasks' time
// must not cost the mark that they are done (a retry would run every
// step again). Its scan of the org's profiles is held here until the
// tasks' context has ended.
func TestPostCrawlTasksMarkedBeforeASlowHeal(t *testing.T) {
	uri := serverURI(t)
	bg := context.Background()
	db := fmt.Sprintf("heal%d", os.Getpid())
	m, ids := openCrashFixture(t, uri, db)
	t.Cleanup(func() { _ = m.db.Drop(bg); _ = m.Close(bg) })

	slow := stallingAggregates(t, uri, db, collProfiles)

	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	if _, err := slow.RunPostCrawlTasks(ctx, ids.crawl); err != nil {
		t.Fatalf("the tasks failed for their best-effort step: %v", err)
	}
	var doc struct {
		PostCrawlDone bool `bson:"postCrawlDone"`
	}
	if err := m.coll(collCrawls).FindOne(bg, bson.M{"_id": ids.crawl}).Decode(&doc); err != nil || !doc.PostCrawlDone {
		t.Fatalf("postCrawlDone %v (%v), want true", doc.PostCrawlDone, err)
	}
}
