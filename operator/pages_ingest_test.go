package operator

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/crawlredis"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// TestIngestPages: page records are stored oldest first in batches of
// pageBatch, one store write each, unusable ones dropped, then trimmed
// from the list; a record pushed meanwhile stays; a batch read again (a
// crash between the write and the trim) adds nothing; drain empties the
// list.
func TestIngestPages(t *testing.T) {
	_, cfg, c := testRedis(t)
	ctx := context.Background()
	st := newMemStore()
	k := crawlredis.Keys(testID)
	oid := uuid.New()
	rec := func(i int) string {
		return fmt.Sprintf(`{"id":%q,"url":"https://example.com/%d","loadState":4}`, uuid.NewSHA1(uuid.Nil, fmt.Append(nil, i)), i)
	}
	for i := range pageBatch + 10 {
		c.LPush(ctx, k.Pages(), rec(i))
	}
	c.LPush(ctx, k.Pages(), "not json")
	client, _ := newRedisClient(cfg, testID)
	defer client.Close()
	in := newIngester(newJob(1, func(cj *trawlerv1.CrawlJob) { cj.Spec.OID = oid.String() }), st, time.Second, slog.Default())

	s, err := readAndControl(ctx, client, testID, redisControl{})
	if err != nil || len(s.Pages) != pageBatch || s.Pages[0] != rec(0) {
		t.Fatalf("snapshot: %d pages, first %q, %v", len(s.Pages), s.Pages[0], err)
	}
	// Part of the batch was stored before a crash: storing it again adds
	// only the rest.
	var early []store.Page
	for _, raw := range s.Pages[:5] {
		p, _ := store.PageFromRecord([]byte(raw), store.PageSource{OID: oid, CrawlID: testID}, time.Now())
		early = append(early, p)
	}
	if _, err := st.AddPages(ctx, early); err != nil {
		t.Fatal(err)
	}
	c.LPush(ctx, k.Pages(), rec(1000)) // pushed while the batch is handled
	if err := in.pages(ctx, client, s); err != nil {
		t.Fatal(err)
	}
	if n := c.LLen(ctx, k.Pages()).Val(); n != 12 {
		t.Errorf("%d records left, want the 10 + bad + new one", n)
	}
	if err := in.drain(ctx, client); err != nil {
		t.Fatal(err)
	}
	if n := c.LLen(ctx, k.Pages()).Val(); n != 0 {
		t.Errorf("%d records left after the drain", n)
	}
	writes := st.callCount("AddPages") - 1
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.pages) != pageBatch+11 || writes != 2 {
		t.Errorf("%d pages in %d writes, want %d in 2", len(st.pages), writes, pageBatch+11)
	}
	for _, p := range st.pages {
		if p.OID != oid || p.CrawlID != testID {
			t.Fatalf("page %+v", p)
		}
	}
}
