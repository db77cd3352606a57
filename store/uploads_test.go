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
	if _, err := m.SaveUpload(ctx, u, false); !errors.Is(err, store.ErrCrawlExists) {
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

// TestSaveUploadReplaceRoundTrips: a replace reads the old upload with
// the write that replaces it (the caller has read it once already), and
// still refuses another org's upload and a crawl, changing nothing. The
// uploads are in no collection, so no recount reads the crawls either.
func TestSaveUploadReplaceRoundTrips(t *testing.T) {
	var cmds mongotest.Commands
	m := mongotest.Open(t, cmds.Option())
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	first := &store.Upload{ID: "upload-1", OID: org.ID, Name: "first", At: now(),
		Files: []store.CrawlFile{{Filename: "old.wacz", Size: 100}}}
	if _, err := m.SaveUpload(ctx, first, false); err != nil {
		t.Fatal(err)
	}

	cmds.Reset()
	second := &store.Upload{ID: "upload-1", OID: org.ID, Name: "second", At: now(), Files: []store.CrawlFile{{Filename: "new.wacz", Size: 30}}}
	old, err := m.SaveUpload(ctx, second, true)
	if err != nil || old == nil || len(old.Files) != 1 || old.Files[0].Filename != "old.wacz" || *old.Name != "first" {
		t.Fatalf("replace: %+v %v", old, err)
	}
	finds, writes, updates := cmds.Count("find", "crawls"), cmds.Count("findAndModify", "crawls"), cmds.Count("update", "crawls")
	if finds != 0 || writes != 1 || updates != 0 {
		t.Errorf("crawls: %d finds, %d findAndModify, %d updates; want 0, 1 (the replace), 0", finds, writes, updates)
	}

	wf := mustWorkflow(t, m, org.ID, "wf", "https://a.example/")
	mustCrawl(t, m, wf, "a-crawl", now())
	for _, r := range []*store.Upload{{ID: "upload-1", OID: uuid.New()}, {ID: "a-crawl", OID: org.ID}} {
		if _, err := m.SaveUpload(ctx, r, true); store.Detail(err) != "crawl_not_found" {
			t.Errorf("replacing %s from org %s: %v", r.ID, r.OID, err)
		}
	}
	if got, err := m.GetCrawl(ctx, org.ID, "upload-1"); err != nil || *got.Name != "second" {
		t.Fatalf("upload after refused replaces %+v %v", got, err)
	}
	if got, err := m.GetCrawl(ctx, org.ID, "a-crawl"); err != nil || got.Type != store.TypeCrawl {
		t.Fatalf("crawl after a refused replace %+v %v", got, err)
	}
}
