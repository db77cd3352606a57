package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestProfiles(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "org")
	alice, bob := uuid.New(), uuid.New()
	newProfile := func(user uuid.UUID, name string, size int64) *store.Profile {
		id := uuid.New()
		return &store.Profile{ID: id, Name: name, UserID: user, OID: org.ID, Created: now(),
			Resource: store.ProfileFile{Filename: "profile-" + id.String() + ".tar.gz", Hash: "h", Size: size, DefStorageName: ptr("default")}}
	}
	bytesStored := func() int64 { t.Helper(); return orgBytesStored(t, m, org.ID) }
	a := newProfile(alice, "a", 100)
	b := newProfile(bob, "b", 20)
	for _, p := range []*store.Profile{a, b} {
		if err := m.SaveProfile(ctx, p, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := bytesStored(); got != 120 {
		t.Fatalf("bytesStored %d", got)
	}
	// A re-commit replaces the size instead of adding to it.
	a.Resource.Size = 70
	a.Origins = []string{"https://example.com"}
	if err := m.SaveProfile(ctx, a, true); err != nil {
		t.Fatal(err)
	}
	if got := bytesStored(); got != 90 {
		t.Fatalf("bytesStored after re-commit %d", got)
	}
	foreign := *a
	foreign.OID = uuid.New()
	if err := m.SaveProfile(ctx, &foreign, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("re-commit into another org's profile: %v", err)
	}

	got, err := m.GetProfile(ctx, org.ID, a.ID)
	if err != nil || got.Resource.Size != 70 || got.Origins[0] != "https://example.com" || got.Description != "" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := m.GetProfile(ctx, uuid.New(), a.ID); store.Detail(err) != "profile_not_found" {
		t.Fatalf("other org: %v", err)
	}
	list, total, err := m.ListProfiles(ctx, org.ID, &bob, store.Paging{})
	if err != nil || total != 1 || list[0].ID != b.ID {
		t.Fatalf("bob's profiles %+v %d %v", list, total, err)
	}
	if _, total, _ := m.ListProfiles(ctx, org.ID, nil, store.Paging{Page: 1, PageSize: 1}); total != 2 {
		t.Fatalf("total %d", total)
	}

	if err := m.UpdateProfileMetadata(ctx, org.ID, a.ID, "renamed", ptr("d")); err != nil {
		t.Fatal(err)
	}
	if err := m.UpdateProfileMetadata(ctx, org.ID, a.ID, "again", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.GetProfile(ctx, org.ID, a.ID); got.Name != "again" || got.Description != "d" {
		t.Fatalf("after metadata update %+v", got)
	}
	if err := m.UpdateProfileMetadata(ctx, uuid.New(), a.ID, "x", nil); store.Detail(err) != "profile_not_found" {
		t.Fatalf("other org update: %v", err)
	}

	wf := newWorkflow(org.ID, "uses a", "https://a.example/")
	wf.ProfileID = &a.ID
	if err := m.CreateCrawlConfig(ctx, wf); err != nil {
		t.Fatal(err)
	}
	refs, err := m.ProfileWorkflows(ctx, org.ID, a.ID)
	if err != nil || len(refs) != 1 || refs[0].ID != wf.ID || *refs[0].Name != "uses a" {
		t.Fatalf("workflows %+v %v", refs, err)
	}
	if err := m.DeactivateCrawlConfig(ctx, org.ID, wf.ID); err != nil {
		t.Fatal(err)
	}
	if refs, _ := m.ProfileWorkflows(ctx, org.ID, a.ID); len(refs) != 0 {
		t.Fatalf("inactive workflow listed: %+v", refs)
	}
	names, err := m.ProfileNames(ctx, org.ID, []uuid.UUID{a.ID, b.ID, uuid.New()})
	if err != nil || len(names) != 2 || names[a.ID] != "again" {
		t.Fatalf("names %v %v", names, err)
	}
	if names, err := m.ProfileNames(ctx, uuid.New(), []uuid.UUID{a.ID, b.ID}); err != nil || len(names) != 0 {
		t.Fatalf("another org sees the names %v %v", names, err)
	}

	if err := m.DeleteProfile(ctx, org.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteProfile(ctx, org.ID, a.ID); store.Detail(err) != "profile_not_found" {
		t.Fatalf("second delete: %v", err)
	}
	if got := bytesStored(); got != 20 {
		t.Fatalf("bytesStored after delete %d", got)
	}
}
