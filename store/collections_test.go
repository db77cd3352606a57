package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func mustCollection(t testing.TB, m *mongotest.DB, oid uuid.UUID, name string, desc *string, modified time.Time) *store.Collection {
	t.Helper()
	c := &store.Collection{ID: uuid.New(), OID: oid, Name: name, Description: desc, Modified: modified}
	if err := m.CreateCollection(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

func collectionNames(cs []store.Collection) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func TestListCollections(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	oid := uuid.New()
	t0 := now()
	mustCollection(t, m, oid, "Updated tést cöllection", ptr("b desc"), t0)
	mustCollection(t, m, oid, "second-collection", nil, t0.Add(time.Minute))
	mustCollection(t, m, oid, "a.b (c)", ptr("A desc"), t0.Add(2*time.Minute))
	mustCollection(t, m, uuid.New(), "other org", nil, t0)

	if err := m.CreateCollection(ctx, &store.Collection{ID: uuid.New(), OID: oid, Name: "second-collection"}); !errors.Is(err, store.ErrConflict) ||
		store.Detail(err) != "collection_name_taken" {
		t.Fatalf("duplicate name: %v", err)
	}
	tests := []struct {
		name string
		f    store.CollectionFilter
		want []string
	}{
		{"NameAsc", store.CollectionFilter{SortBy: "name"}, []string{"a.b (c)", "second-collection", "Updated tést cöllection"}},
		{"NameDesc", store.CollectionFilter{SortBy: "name", SortDirection: -1}, []string{"Updated tést cöllection", "second-collection", "a.b (c)"}},
		// A null description sorts first; then case-insensitively.
		{"Description", store.CollectionFilter{SortBy: "description"}, []string{"second-collection", "a.b (c)", "Updated tést cöllection"}},
		{"Modified", store.CollectionFilter{SortBy: "modified", SortDirection: -1}, []string{"a.b (c)", "second-collection", "Updated tést cöllection"}},
		{"Exact", store.CollectionFilter{Name: ptr("second-collection")}, []string{"second-collection"}},
		{"ExactIsCaseSensitive", store.CollectionFilter{Name: ptr("Second-collection")}, []string{}},
		{"PrefixAnyCase", store.CollectionFilter{NamePrefix: ptr("UPDA")}, []string{"Updated tést cöllection"}},
		{"PrefixIsNotARegex", store.CollectionFilter{NamePrefix: ptr("a.b (")}, []string{"a.b (c)"}},
		{"PrefixDotIsLiteral", store.CollectionFilter{NamePrefix: ptr("a.")}, []string{"a.b (c)"}},
		// MongoDB refuses a regex holding a NUL byte.
		{"PrefixWithNUL", store.CollectionFilter{NamePrefix: ptr("a.\x00")}, []string{}},
		{"Page", store.CollectionFilter{SortBy: "name", Paging: store.Paging{Page: 2, PageSize: 2}}, []string{"Updated tést cöllection"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total, err := m.ListCollections(ctx, oid, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if names := collectionNames(got); !slices.Equal(names, tt.want) {
				t.Fatalf("got %q, want %q", names, tt.want)
			}
			if tt.f.Paging.PageSize == 0 && total != int64(len(tt.want)) {
				t.Fatalf("total %d", total)
			}
		})
	}
	for _, f := range []store.CollectionFilter{{SortBy: "crawlCount"}, {SortBy: "name", SortDirection: 2}} {
		if _, _, err := m.ListCollections(ctx, oid, f); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%+v: %v", f, err)
		}
	}
	names, err := m.CollectionNames(ctx, oid)
	if err != nil || !slices.Equal(names, []string{"Updated tést cöllection", "a.b (c)", "second-collection"}) {
		t.Fatalf("names %q %v", names, err)
	}
}

func TestUpdateCollection(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	oid := uuid.New()
	a := mustCollection(t, m, oid, "zeta", nil, now())
	mustCollection(t, m, oid, "beta", nil, now())
	later := now().Add(time.Hour)
	err := m.UpdateCollection(ctx, oid, a.ID, store.CollectionUpdate{Name: store.Some("alpha"),
		Description: store.Some(ptr("d")), IsPublic: store.Some(true), Modified: later})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.GetCollection(ctx, oid, a.ID)
	if err != nil || got.Name != "alpha" || *got.Description != "d" || !got.IsPublic || !got.Modified.Equal(later) {
		t.Fatalf("%+v %v", got, err)
	}
	list, _, _ := m.ListCollections(ctx, oid, store.CollectionFilter{SortBy: "name"})
	if names := collectionNames(list); !slices.Equal(names, []string{"alpha", "beta"}) {
		t.Fatalf("sort key not updated: %q", names)
	}
	if err := m.UpdateCollection(ctx, oid, a.ID, store.CollectionUpdate{Name: store.Some("beta")}); store.Detail(err) != "collection_name_taken" {
		t.Fatalf("rename to a taken name: %v", err)
	}
	if err := m.UpdateCollection(ctx, uuid.New(), a.ID, store.CollectionUpdate{IsPublic: store.Some(false)}); store.Detail(err) != "collection_not_found" {
		t.Fatalf("other org: %v", err)
	}
	if _, err := m.GetCollection(ctx, uuid.New(), a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get from other org: %v", err)
	}
}

// TestChangeItemCollections: all changed collections are checked before
// anything changes; the item is checked as /add and /remove would.
func TestChangeItemCollections(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	mustCrawl(t, m, wf, "c", now())
	a := mustCollection(t, m, org.ID, "a", nil, now())
	b := mustCollection(t, m, org.ID, "b", nil, now())
	theirs := mustCollection(t, m, uuid.New(), "theirs", nil, now())
	member := func(want ...uuid.UUID) {
		t.Helper()
		c, err := m.GetCrawl(ctx, org.ID, "c")
		if err != nil || !slices.Equal(c.CollectionIDs, want) {
			t.Fatalf("collections of c %v, %v; want %v", c.CollectionIDs, err, want)
		}
	}

	for _, missing := range []uuid.UUID{uuid.New(), theirs.ID} {
		err := m.ChangeItemCollections(ctx, org.ID, "c", []uuid.UUID{a.ID, missing}, nil, now())
		if store.Detail(err) != "collection_not_found" {
			t.Fatalf("add to %v: %v", missing, err)
		}
		member()
	}
	if err := m.ChangeItemCollections(ctx, org.ID, "c", []uuid.UUID{a.ID, b.ID}, nil, now()); err != nil {
		t.Fatal(err)
	}
	member(a.ID, b.ID)
	if err := m.ChangeItemCollections(ctx, org.ID, "c", nil, []uuid.UUID{a.ID}, now()); err != nil {
		t.Fatal(err)
	}
	member(b.ID)
	if got, _ := m.GetCollection(ctx, org.ID, b.ID); got.CrawlCount != 0 { // c has not succeeded
		t.Fatalf("b counts %d crawls", got.CrawlCount)
	}

	if err := m.ChangeItemCollections(ctx, org.ID, "nope", []uuid.UUID{a.ID}, nil, now()); store.Detail(err) != "Crawl not found: nope" {
		t.Fatalf("add of a missing item: %v", err)
	}
	if err := m.ChangeItemCollections(ctx, org.ID, "nope", nil, []uuid.UUID{a.ID}, now()); err != nil {
		t.Fatalf("removal of a missing item: %v", err)
	}
}

// TestCollectionMembers: counts follow adds, removes, finishes, tag edits
// and deletes; only successful members count.
func TestCollectionMembers(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	coll := mustCollection(t, m, org.ID, "c", nil, now())
	t0 := now()
	crawl := func(id string, tags []string, started time.Time) {
		c := newCrawl(wf, id, started)
		c.Tags = tags
		if err := m.AddCrawl(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// A workflow has one unfinished crawl at a time: each ends before the
	// next starts.
	crawl("one", []string{"wr-test-1", "wr-test-2"}, t0)
	finish(t, m, "one", store.StateComplete, t0.Add(time.Hour), 100, 20)
	crawl("two", []string{"wr-test-2"}, t0.Add(time.Minute))
	if _, err := m.RecordCrawlProgress(ctx, "two", &store.CrawlStats{Done: 3}, nil); err != nil {
		t.Fatal(err)
	}
	finish(t, m, "two", store.StatePartialComplete, t0.Add(time.Hour), 5)
	crawl("running", []string{"x"}, t0.Add(2*time.Minute))
	other := mustWorkflow(t, m, uuid.New(), "o", "https://o.example/")
	mustCrawl(t, m, other, "other-org", t0)

	want := func(crawls int, pages, size int64, tags ...string) {
		t.Helper()
		got, err := m.GetCollection(ctx, org.ID, coll.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.CrawlCount != crawls || got.PageCount != pages || got.TotalSize != size || !slices.Equal(got.Tags, nonNilTags(tags)) {
			t.Fatalf("collection %d crawls %d pages %d bytes %q, want %d %d %d %q",
				got.CrawlCount, got.PageCount, got.TotalSize, got.Tags, crawls, pages, size, tags)
		}
	}

	// A change returns the collection as it is afterwards.
	returned := func(c *store.Collection) {
		t.Helper()
		got, err := m.GetCollection(ctx, org.ID, coll.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, c); diff != "" {
			t.Fatalf("returned collection (-stored +returned):\n%s", diff)
		}
	}

	// An unknown or foreign id fails the whole add.
	for _, bad := range []string{"nope", "other-org"} {
		_, err := m.AddToCollection(ctx, org.ID, coll.ID, []string{"one", bad}, now())
		if !errors.Is(err, store.ErrNotFound) || store.Detail(err) != "Crawl not found: "+bad {
			t.Fatalf("add %s: %v", bad, err)
		}
		want(0, 0, 0)
	}
	if _, err := m.AddToCollection(ctx, org.ID, uuid.New(), []string{"one"}, now()); store.Detail(err) != "collection_not_found" {
		t.Fatalf("add to missing collection: %v", err)
	}
	added, err := m.AddToCollection(ctx, org.ID, coll.ID, []string{"one", "two", "running", "one"}, now())
	if err != nil {
		t.Fatal(err)
	}
	want(2, 3, 125, "wr-test-2", "wr-test-1")
	returned(added)
	one, _ := m.GetCrawl(ctx, org.ID, "one")
	if len(one.CollectionIDs) != 1 {
		t.Fatalf("added twice: %v", one.CollectionIDs)
	}
	items, err := m.CollectionItems(ctx, org.ID, coll.ID)
	if err != nil || len(items) != 2 || items[0].ID != "one" || len(items[0].Files) != 2 {
		t.Fatalf("items %+v %v", items, err)
	}

	// The running member counts once it succeeds.
	finish(t, m, "running", store.StateComplete, t0.Add(2*time.Hour), 1)
	if _, err := m.RunPostCrawlTasks(ctx, "running"); err != nil {
		t.Fatal(err)
	}
	want(3, 3, 126, "wr-test-2", "wr-test-1", "x")

	// Tag edits are recounted.
	if err := m.UpdateCrawl(ctx, org.ID, "one", store.CrawlUpdate{Tags: store.Some([]string{"x"})}); err != nil {
		t.Fatal(err)
	}
	want(3, 3, 126, "x", "wr-test-2")

	removed, err := m.RemoveFromCollection(ctx, org.ID, coll.ID, []string{"two", "nope", "other-org"}, now())
	if err != nil {
		t.Fatal(err)
	}
	want(2, 0, 121, "x")
	returned(removed)
	if _, err := m.DeleteCrawls(ctx, org.ID, []string{"running"}); err != nil {
		t.Fatal(err)
	}
	want(1, 0, 120, "x")

	// Delete takes the collection off its items and its workflows.
	if _, err := m.UpdateCrawlConfig(ctx, org.ID, wf.ID, store.CrawlConfigUpdate{AutoAddCollections: store.Some([]uuid.UUID{coll.ID})}, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteCollection(ctx, org.ID, coll.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteCollection(ctx, org.ID, coll.ID); store.Detail(err) != "collection_not_found" {
		t.Fatalf("second delete: %v", err)
	}
	one, _ = m.GetCrawl(ctx, org.ID, "one")
	w, _ := m.GetCrawlConfig(ctx, org.ID, wf.ID)
	if len(one.CollectionIDs) != 0 || len(w.AutoAddCollections) != 0 {
		t.Fatalf("left behind: crawl %v workflow %v", one.CollectionIDs, w.AutoAddCollections)
	}
	n, err := m.Raw().Collection("crawls").CountDocuments(ctx, bson.M{"collectionIds": coll.ID})
	if err != nil || n != 0 {
		t.Fatalf("%d items still in the collection (%v)", n, err)
	}
}

func nonNilTags(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}
