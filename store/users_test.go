package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

func TestUsers(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	u := &store.User{ID: uuid.New(), Email: "Ann@Example.org", Name: "ann", HashedPassword: "h1", IsActive: true}
	if err := m.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}

	t.Run("ErrDuplicateEmail", func(t *testing.T) {
		dup := &store.User{ID: uuid.New(), Email: "ann@EXAMPLE.org"}
		if err := m.CreateUser(ctx, dup); !errors.Is(err, store.ErrConflict) || store.Detail(err) != "user_already_exists" {
			t.Fatalf("err = %v, want conflict user_already_exists", err)
		}
	})
	t.Run("GetByEmailIgnoresCase", func(t *testing.T) {
		got, err := m.GetUserByEmail(ctx, "ANN@example.ORG")
		if err != nil || got.ID != u.ID || got.Email != "Ann@Example.org" || got.HashedPassword != "h1" {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := m.GetUserByEmail(ctx, "bob@example.org"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("by email: %v", err)
		}
		if _, err := m.GetUser(ctx, uuid.New()); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("by id: %v", err)
		}
		if err := m.UpdateUser(ctx, uuid.New(), store.UserUpdate{Name: store.Some("x")}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("update: %v", err)
		}
	})
	t.Run("Update", func(t *testing.T) {
		upd := store.UserUpdate{HashedPassword: store.Some("h2"), IsSuperuser: store.Some(true)}
		if err := m.UpdateUser(ctx, u.ID, upd); err != nil {
			t.Fatal(err)
		}
		got, err := m.GetUser(ctx, u.ID)
		if err != nil || got.HashedPassword != "h2" || !got.IsSuperuser || got.Name != "ann" || !got.IsActive {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("ListByIDs", func(t *testing.T) {
		got, err := m.ListUsersByIDs(ctx, []uuid.UUID{u.ID, uuid.New()})
		if err != nil || len(got) != 1 || got[u.ID].Name != "ann" || got[u.ID].HashedPassword != "" {
			t.Fatalf("got %+v, %v (want ann only, without password hash)", got, err)
		}
	})
}
