package store_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestCrawlConfigPatternsStoredAsUpstream(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := newWorkflow(uuid.New(), "p", "https://a.example/")
	wf.Config.Exclude = store.Patterns{Values: []string{"x"}, Single: true, Set: true}
	wf.Config.Include = store.Patterns{Values: []string{"a", "b"}, Set: true}
	wf.Config.Seeds[0].Exclude = store.Patterns{Values: []string{}, Set: true}
	if err := m.CreateCrawlConfig(ctx, wf); err != nil {
		t.Fatal(err)
	}
	var raw bson.Raw
	if err := m.Raw().Collection("crawl_configs").FindOne(ctx, bson.M{"_id": wf.ID}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	cfg := raw.Lookup("config").Document()
	if s, ok := cfg.Lookup("exclude").StringValueOK(); !ok || s != "x" {
		t.Errorf("exclude stored as %v, want the string x", cfg.Lookup("exclude"))
	}
	if _, ok := cfg.Lookup("include").ArrayOK(); !ok {
		t.Errorf("include stored as %v, want an array", cfg.Lookup("include"))
	}
	seed := cfg.Lookup("seeds").Array().Index(0).Document()
	if _, err := seed.LookupErr("include"); err == nil {
		t.Errorf("unset seed include stored: %v", seed)
	}
	if v := raw.Lookup("firstSeed").StringValue(); v != "https://a.example/" {
		t.Errorf("firstSeed = %q", v)
	}
	got, err := m.GetCrawlConfig(ctx, wf.OID, wf.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Config.Exclude, wf.Config.Exclude) || !reflect.DeepEqual(got.Config.Include, wf.Config.Include) ||
		got.Config.Seeds[0].Include.Set || !got.Config.Seeds[0].Exclude.Set {
		t.Fatalf("round trip: include %+v exclude %+v seed %+v", got.Config.Include, got.Config.Exclude, got.Config.Seeds[0])
	}
}

func TestListCrawlConfigs(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	oid := uuid.New()
	t0 := now()
	mk := func(name, seed, schedule string, tags []string, created time.Duration, lastRun *time.Time) *store.CrawlConfig {
		wf := newWorkflow(oid, name, seed)
		wf.Schedule, wf.Tags = schedule, tags
		wf.Created, wf.Modified = t0.Add(created), t0.Add(created)
		wf.LastRun = lastRun
		if err := m.CreateCrawlConfig(ctx, wf); err != nil {
			t.Fatal(err)
		}
		return wf
	}
	runAt := t0.Add(time.Hour)
	a := mk("a", "https://b.example/", "0 0 * * *", []string{"x", "y"}, 1*time.Minute, nil)
	b := mk("b", "https://a.example/", "", []string{"x"}, 2*time.Minute, &runAt)
	c := mk("b", "https://c.example/", "", nil, 3*time.Minute, &runAt)
	inactive := mk("z", "https://z.example/", "", []string{"x"}, 4*time.Minute, nil)
	if err := m.DeactivateCrawlConfig(ctx, oid, inactive.ID); err != nil {
		t.Fatal(err)
	}
	mustWorkflow(t, m, uuid.New(), "other org", "https://o.example/")

	tests := []struct {
		name string
		f    store.CrawlConfigFilter
		want []*store.CrawlConfig
	}{
		{"All", store.CrawlConfigFilter{SortBy: "created", SortDirection: 1}, []*store.CrawlConfig{a, b, c}},
		{"CreatedDesc", store.CrawlConfigFilter{SortBy: "created"}, []*store.CrawlConfig{c, b, a}},
		{"Name", store.CrawlConfigFilter{Name: ptr("b"), SortBy: "created"}, []*store.CrawlConfig{c, b}},
		{"FirstSeed", store.CrawlConfigFilter{FirstSeed: ptr("https://a.example/")}, []*store.CrawlConfig{b}},
		{"TagsAll", store.CrawlConfigFilter{Tags: []string{"x", "y"}}, []*store.CrawlConfig{a}},
		{"Scheduled", store.CrawlConfigFilter{Schedule: ptr(true)}, []*store.CrawlConfig{a}},
		{"Unscheduled", store.CrawlConfigFilter{Schedule: ptr(false), SortBy: "created", SortDirection: 1}, []*store.CrawlConfig{b, c}},
		{"SortNameThenFirstSeed", store.CrawlConfigFilter{SortBy: "name", SortDirection: 1}, []*store.CrawlConfig{a, b, c}},
		{"SortFirstSeed", store.CrawlConfigFilter{SortBy: "firstSeed", SortDirection: 1}, []*store.CrawlConfig{b, a, c}},
		{"SortLastRunThenModified", store.CrawlConfigFilter{SortBy: "lastRun"}, []*store.CrawlConfig{c, b, a}},
		{"Page2", store.CrawlConfigFilter{SortBy: "created", SortDirection: 1, Paging: store.Paging{Page: 2, PageSize: 2}}, []*store.CrawlConfig{c}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total, err := m.ListCrawlConfigs(ctx, oid, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			wantTotal := int64(len(tt.want))
			if tt.f.PageSize > 0 {
				wantTotal = 3
			}
			if ids(got) != idsOf(tt.want) || total != wantTotal {
				t.Fatalf("got %v total %d, want %v total %d", ids(got), total, idsOf(tt.want), wantTotal)
			}
		})
	}
	for _, tt := range []struct {
		name, detail string
		f            store.CrawlConfigFilter
	}{
		{"ErrInvalidSortBy", "invalid_sort_by", store.CrawlConfigFilter{SortBy: "rev"}},
		{"ErrInvalidSortDirection", "invalid_sort_direction", store.CrawlConfigFilter{SortBy: "name", SortDirection: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := m.ListCrawlConfigs(ctx, oid, tt.f)
			if !errors.Is(err, store.ErrInvalid) || store.Detail(err) != tt.detail {
				t.Fatalf("err = %v, want invalid %s", err, tt.detail)
			}
		})
	}
}

func TestUpdateCrawlConfig(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	wf := mustWorkflow(t, m, uuid.New(), "wf", "https://a.example/")
	editor := uuid.New()

	t.Run("OKWithRevision", func(t *testing.T) {
		cfg := wf.Config
		cfg.Seeds = []store.Seed{{URL: "https://new.example/"}}
		rev := &store.ConfigRevision{ID: uuid.New(), CID: wf.ID, Config: wf.Config, Scale: 1, Rev: wf.Rev, Modified: wf.Modified, ModifiedBy: wf.ModifiedBy}
		upd := store.CrawlConfigUpdate{
			Config: store.Some(cfg), Scale: store.Some(2), Name: store.Some[*string](nil), Tags: store.Some([]string{}),
			Modified: now(), ModifiedBy: editor,
		}
		got, err := m.UpdateCrawlConfig(ctx, wf.OID, wf.ID, upd, rev)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rev != 1 || got.Scale != 2 || got.Name != nil || got.Tags == nil || len(got.Tags) != 0 ||
			got.FirstSeed != "https://new.example/" || got.ModifiedBy != editor {
			t.Fatalf("updated %+v", got)
		}
		revs, total, err := m.ListRevisions(ctx, wf.ID, store.Paging{Page: 1, PageSize: 10})
		if err != nil || total != 1 || revs[0].ID != rev.ID || revs[0].Config.Seeds[0].URL != "https://a.example/" {
			t.Fatalf("revisions %+v total %d, %v", revs, total, err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		upd := store.CrawlConfigUpdate{Modified: now(), ModifiedBy: editor}
		for name, oid := range map[string]uuid.UUID{"OtherOrg": uuid.New(), "Inactive": wf.OID} {
			if name == "Inactive" {
				if err := m.DeactivateCrawlConfig(ctx, wf.OID, wf.ID); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.UpdateCrawlConfig(ctx, oid, wf.ID, upd, nil); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s: err = %v, want not found", name, err)
			}
		}
		got, err := m.GetCrawlConfig(ctx, wf.OID, wf.ID)
		if err != nil || !got.Inactive {
			t.Fatalf("inactive workflow: %+v, %v", got, err)
		}
		if _, err := m.GetCrawlConfig(ctx, uuid.New(), wf.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("other org get: %v", err)
		}
	})
}

func TestCrawlConfigValuesAndSchedule(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	oid := uuid.New()
	a := newWorkflow(oid, "a", "https://a.example/")
	a.Tags, a.Description, a.Schedule = []string{"t1", "t2"}, ptr("desc"), "@daily"
	b := newWorkflow(oid, "", "https://b.example/")
	b.Tags = []string{"t2", "t3"}
	for _, wf := range []*store.CrawlConfig{a, b} {
		if err := m.CreateCrawlConfig(ctx, wf); err != nil {
			t.Fatal(err)
		}
	}
	other := mustWorkflow(t, m, uuid.New(), "other", "https://o.example/")
	if err := m.DeactivateCrawlConfig(ctx, oid, b.ID); err != nil {
		t.Fatal(err)
	}
	// A deadline on ctx: distinct with maxTimeMS is what breaks on FerretDB.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()

	tags, err := m.CrawlConfigTags(ctx, oid)
	if err != nil || !slices.Equal(tags, []string{"t1", "t2", "t3"}) {
		t.Fatalf("tags %v, %v", tags, err)
	}
	sv, err := m.CrawlConfigSearchValues(ctx, oid)
	if err != nil || !slices.Equal(sv.Names, []string{"a"}) || !slices.Equal(sv.Descriptions, []string{"desc"}) ||
		!slices.Equal(sv.FirstSeeds, []string{"https://a.example/", "https://b.example/"}) || len(sv.WorkflowIDs) != 2 {
		t.Fatalf("search values %+v, %v", sv, err)
	}
	sched, err := m.ListScheduledCrawlConfigs(ctx)
	if err != nil || len(sched) != 1 || sched[0].ID != a.ID {
		t.Fatalf("scheduled %v, %v", sched, err)
	}
	if err := m.DeleteCrawlConfig(ctx, other.OID, other.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteCrawlConfig(ctx, other.OID, other.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func ids(cs []store.CrawlConfig) string {
	s := ""
	for _, c := range cs {
		s += *c.Name + c.FirstSeed + " "
	}
	return s
}

func idsOf(cs []*store.CrawlConfig) string {
	s := ""
	for _, c := range cs {
		s += *c.Name + c.FirstSeed + " "
	}
	return s
}
