package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestEnsureDefaultOrg(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	first, err := m.EnsureDefaultOrg(ctx, "My Organization")
	if err != nil {
		t.Fatal(err)
	}
	if !first.Default || first.Storage.Path != first.ID.String()+"/" || first.Users == nil {
		t.Fatalf("default org %+v", first)
	}
	again, err := m.EnsureDefaultOrg(ctx, "My Organization")
	if err != nil || again.ID != first.ID {
		t.Fatalf("second call: %+v, %v; want the same org", again, err)
	}
	renamed, err := m.EnsureDefaultOrg(ctx, "Archive")
	if err != nil || renamed.ID != first.ID || renamed.Name != "Archive" {
		t.Fatalf("rename: %+v, %v", renamed, err)
	}
	if got, err := m.GetDefaultOrg(ctx); err != nil || got.Name != "Archive" {
		t.Fatalf("GetDefaultOrg: %+v, %v", got, err)
	}
}

func TestOrgs(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	def, err := m.EnsureDefaultOrg(ctx, "Zeta default")
	if err != nil {
		t.Fatal(err)
	}
	a := mustOrg(t, m, "alpha")
	b := mustOrg(t, m, "beta")
	viewer, owner := uuid.New(), uuid.New()

	t.Run("ErrDuplicateName", func(t *testing.T) {
		err := m.CreateOrg(ctx, &store.Org{ID: uuid.New(), Name: "alpha"})
		if !errors.Is(err, store.ErrConflict) || store.Detail(err) != "duplicate_org_name" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("GetOrgs", func(t *testing.T) {
		missing := uuid.New()
		got, err := m.GetOrgs(ctx, []uuid.UUID{a.ID, missing, b.ID})
		if err != nil || len(got) != 2 || got[a.ID].Name != "alpha" || got[b.ID].Name != "beta" || got[missing] != nil {
			t.Fatalf("GetOrgs = %v, %v; want alpha and beta, no missing", got, err)
		}
	})
	t.Run("Rename", func(t *testing.T) {
		if err := m.RenameOrg(ctx, b.ID, "alpha"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("rename to a taken name: %v, want conflict", err)
		}
		if err := m.RenameOrg(ctx, uuid.New(), "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("rename missing org: %v", err)
		}
		if err := m.RenameOrg(ctx, b.ID, "bravo"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Roles", func(t *testing.T) {
		for _, step := range []struct {
			org  uuid.UUID
			user uuid.UUID
			role store.Role
		}{{a.ID, viewer, store.RoleViewer}, {a.ID, owner, store.RoleOwner}, {b.ID, owner, store.RoleCrawler}} {
			if err := m.SetOrgUserRole(ctx, step.org, step.user, step.role); err != nil {
				t.Fatal(err)
			}
		}
		got, err := m.GetOrg(ctx, a.ID)
		if err != nil || got.RoleOf(&store.User{ID: viewer}) != store.RoleViewer || got.RoleOf(&store.User{ID: owner}) != store.RoleOwner {
			t.Fatalf("org a users %v, %v", got.Users, err)
		}
		if err := m.SetOrgUserRole(ctx, uuid.New(), viewer, store.RoleViewer); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing org: %v", err)
		}
	})
	t.Run("List", func(t *testing.T) {
		tests := []struct {
			name  string
			f     store.OrgFilter
			want  []string
			wantN int64
		}{
			{"AllDefaultFirst", store.OrgFilter{}, []string{def.Name, "alpha", "bravo"}, 3},
			{"Member", store.OrgFilter{Member: &owner}, []string{"alpha", "bravo"}, 2},
			{"Viewer", store.OrgFilter{Member: &viewer}, []string{"alpha"}, 1},
			{"Page2", store.OrgFilter{Paging: store.Paging{Page: 2, PageSize: 2}}, []string{"bravo"}, 3},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				orgs, total, err := m.ListOrgs(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, o := range orgs {
					names = append(names, o.Name)
				}
				if total != tt.wantN || !slices.Equal(names, tt.want) {
					t.Fatalf("got %v (total %d), want %v (%d)", names, total, tt.want, tt.wantN)
				}
			})
		}
	})
	t.Run("ChangeMember", func(t *testing.T) {
		role := func(r store.Role) *store.Role { return &r }
		if err := m.ChangeOrgMember(ctx, a.ID, uuid.New(), role(store.RoleViewer)); !errors.Is(err, store.ErrNoSuchOrgUser) {
			t.Fatalf("a non-member: %v", err)
		}
		for _, r := range []*store.Role{role(store.RoleCrawler), nil} {
			if err := m.ChangeOrgMember(ctx, a.ID, owner, r); !errors.Is(err, store.ErrLastOwner) {
				t.Fatalf("the only owner to %v: %v", r, err)
			}
		}
		if err := m.ChangeOrgMember(ctx, a.ID, viewer, role(store.RoleOwner)); err != nil {
			t.Fatal(err)
		}
		if err := m.ChangeOrgMember(ctx, a.ID, owner, nil); err != nil {
			t.Fatalf("an owner leaving another owner: %v", err)
		}
		if err := m.ChangeOrgMember(ctx, a.ID, viewer, role(store.RoleViewer)); !errors.Is(err, store.ErrLastOwner) {
			t.Fatalf("the owner left: %v", err)
		}
		if orgs, _, err := m.ListOrgs(ctx, store.OrgFilter{Member: &owner}); err != nil || len(orgs) != 1 || orgs[0].ID != b.ID {
			t.Fatalf("after removal from a: %v, %v", orgs, err)
		}
		if err := m.ChangeOrgMember(ctx, uuid.New(), viewer, nil); store.Detail(err) != "org_not_found" {
			t.Fatalf("missing org: %v", err)
		}
	})
	t.Run("Quotas", func(t *testing.T) {
		q := store.OrgQuotas{MaxConcurrentCrawls: 2, MaxPagesPerCrawl: 100, StorageQuota: 10}
		if err := m.SetOrgQuotas(ctx, a.ID, q); err != nil {
			t.Fatal(err)
		}
		got, err := m.GetOrg(ctx, a.ID)
		if err != nil || got.Quotas != q {
			t.Fatalf("got %+v, %v", got, err)
		}
		if got.StorageQuotaReached() {
			t.Fatal("quota reached with 0 bytes stored")
		}
	})
}
