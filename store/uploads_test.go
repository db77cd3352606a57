package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestSaveUpload(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	user := uuid.New()
	a := mustCollection(t, m, org.ID, "a", nil, now())
	b := mustCollection(t, m, org.ID, "b", nil, now())
	at := now()
	u := &store.Upload{ID: "upload-1", UserID: user, OID: org.ID, Name: "My Upload", Description: "Testing\nData",
		Tags: []string{"one", "two"}, CollectionIDs: []uuid.UUID{a.ID}, At: at,
		Files: []store.CrawlFile{{Filename: org.ID.String() + "/uploads/upload-1/x-abcdefgh.wacz", Hash: "h1", Size: 100, DefStorageName: ptr("default")}}}
	if old, err := m.SaveUpload(ctx, u, false); err != nil || old != nil {
		t.Fatalf("%v %v", old, err)
	}
	if _, err := m.SaveUpload(ctx, u, false); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("same id again: %v", err)
	}
	got, err := m.GetCrawl(ctx, org.ID, "upload-1")
	if err != nil || got.Type != store.TypeUpload || got.State != store.StateComplete || *got.Name != "My Upload" ||
		got.FileSize != 100 || got.FileCount != 1 || got.Stats != nil || !got.Started.Equal(at) || !got.Finished.Equal(at) ||
		got.CID != uuid.Nil || len(got.Errors) != 0 {
		t.Fatalf("upload %+v %v", got, err)
	}
	counts := func(id uuid.UUID) (int, int64) {
		c, err := m.GetCollection(ctx, org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		return c.CrawlCount, c.TotalSize
	}
	if n, size := counts(a.ID); n != 1 || size != 100 {
		t.Fatalf("collection a %d %d", n, size)
	}
	o, _ := m.GetOrg(ctx, org.ID)
	if o.BytesStored != 100 {
		t.Fatalf("bytesStored %d", o.BytesStored)
	}

	// Replacing: new files, collections and metadata; the old upload is
	// returned for its files; counts follow.
	r := &store.Upload{ID: "upload-1", UserID: uuid.New(), OID: org.ID, Name: "Replacement", CollectionIDs: []uuid.UUID{b.ID},
		At: at.Add(time.Minute), Files: []store.CrawlFile{{Filename: "new.wacz", Size: 30}}}
	old, err := m.SaveUpload(ctx, r, true)
	if err != nil || old == nil || old.Files[0].Size != 100 {
		t.Fatalf("replace: %+v %v", old, err)
	}
	if n, _ := counts(a.ID); n != 0 {
		t.Fatalf("old collection still counts it")
	}
	if n, size := counts(b.ID); n != 1 || size != 30 {
		t.Fatalf("collection b %d %d", n, size)
	}
	o, _ = m.GetOrg(ctx, org.ID)
	if o.BytesStored != 30 {
		t.Fatalf("bytesStored after replace %d", o.BytesStored)
	}
	got, _ = m.GetCrawl(ctx, org.ID, "upload-1")
	if *got.Name != "Replacement" || *got.Description != "" || len(got.Tags) != 0 || got.UserID != r.UserID {
		t.Fatalf("replaced upload %+v", got)
	}

	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	mustCrawl(t, m, wf, "a-crawl", now())
	for _, id := range []string{"a-crawl", "nope"} {
		if _, err := m.SaveUpload(ctx, &store.Upload{ID: id, OID: org.ID}, true); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("replacing %s: %v", id, err)
		}
	}
	if _, err := m.SaveUpload(ctx, &store.Upload{ID: "upload-1", OID: uuid.New()}, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("replacing another org's upload: %v", err)
	}
}
