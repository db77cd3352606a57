package store_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// TestOrgExportImportRoundTrip exports an org's documents through
// Extended JSON (as the API writes them), deletes the org and imports
// them back: the documents are as they were, and importing twice is
// refused.
func TestOrgExportImportRoundTrip(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	org := mustOrg(t, m, "round trip")
	wf := newWorkflow(org.ID, "wf", "https://example.com/")
	if err := m.CreateCrawlConfig(ctx, wf); err != nil {
		t.Fatal(err)
	}
	crawl := &store.Crawl{ID: "c1", Type: store.TypeCrawl, OID: org.ID, CID: wf.ID, State: store.StateComplete,
		Started: now(), Finished: ptr(now()), FileSize: 1 << 40, Stats: &store.CrawlStats{Found: 3, Done: 3, Size: 9}}
	if err := m.AddCrawl(ctx, crawl); err != nil {
		t.Fatal(err)
	}
	page := bson.M{"_id": uuid.New(), "oid": org.ID, "crawl_id": "c1", "url": "https://example.com/"}
	if _, err := m.Raw().Collection("pages").InsertOne(ctx, page); err != nil {
		t.Fatal(err)
	}
	wantCrawl, _ := m.GetCrawlByID(ctx, "c1")
	wantWF, _ := m.GetCrawlConfig(ctx, org.ID, wf.ID)

	in := &store.OrgImport{Sections: map[string][]bson.D{}}
	err := m.ExportOrg(ctx, org.ID, func(section string, raw bson.Raw) error {
		js, err := bson.MarshalExtJSON(raw, true, false)
		if err != nil {
			return err
		}
		var doc bson.D
		if err := bson.UnmarshalExtJSON(js, false, &doc); err != nil {
			return err
		}
		if section == "org" {
			in.Org = doc
		} else {
			in.Sections[section] = append(in.Sections[section], doc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Sections["workflows"]) != 1 || len(in.Sections["items"]) != 1 || len(in.Sections["pages"]) != 1 {
		t.Fatalf("export: %v", in.Sections)
	}
	if err := m.ImportOrg(ctx, in, nil, nil, ""); store.Detail(err) != "org_already_exists" {
		t.Fatalf("import of an existing org: %v", err)
	}
	if err := m.DeleteOrgItems(ctx, org.ID, []string{"c1"}); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteOrgDocuments(ctx, org.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetCrawlByID(ctx, "c1"); err == nil {
		t.Fatal("the crawl survived its org's deletion")
	}
	if err := m.ImportOrg(ctx, in, map[uuid.UUID]store.Role{uuid.New(): store.RoleOwner}, nil, "other"); err != nil {
		t.Fatal(err)
	}
	gotCrawl, err := m.GetCrawlByID(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotCrawl, wantCrawl) {
		t.Errorf("crawl after the round trip:\n%+v\nwant\n%+v", gotCrawl, wantCrawl)
	}
	gotWF, err := m.GetCrawlConfig(ctx, org.ID, wf.ID)
	if err != nil || !reflect.DeepEqual(gotWF, wantWF) {
		t.Errorf("workflow after the round trip: %+v, %v\nwant %+v", gotWF, err, wantWF)
	}
	gotOrg, err := m.GetOrg(ctx, org.ID)
	if err != nil || gotOrg.Name != "round trip" || gotOrg.Storage.Name != "other" || len(gotOrg.Users) != 1 {
		t.Errorf("org after the round trip: %+v, %v", gotOrg, err)
	}
	if n, _ := m.Raw().Collection("pages").CountDocuments(ctx, bson.M{"oid": org.ID}); n != 1 {
		t.Errorf("%d pages after the round trip", n)
	}
	if err := m.ImportOrg(ctx, in, nil, nil, ""); store.Detail(err) != "org_already_exists" {
		t.Errorf("second import: %v", err)
	}
}
