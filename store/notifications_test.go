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

// TestNotificationOutbox: a stored notification is due at once, a claim
// leases it, attempts are counted as upstream counts them, and a manual
// retry makes it due again. The body keeps its key order.
func TestNotificationOutbox(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	oid := uuid.New()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	body := `{"downloadUrls":[],"orgId":"o","itemId":"c","scheduled":true,"event":"crawlStarted"}`
	n := &store.Notification{ID: uuid.New(), Event: "crawlStarted", OID: oid, Body: []byte(body), Created: t0}
	if added, err := m.AddNotification(ctx, n); err != nil || !added {
		t.Fatalf("add: %v, %v", added, err)
	}
	if added, err := m.AddNotification(ctx, n); err != nil || added {
		t.Fatalf("adding the same id again: %v, %v; want false, nil", added, err)
	}
	stale, err := m.ClaimNotification(ctx, t0, time.Minute)
	if err != nil || stale == nil || stale.ID != n.ID || string(stale.Body) != body {
		t.Fatalf("claim: %+v, %v", stale, err)
	}
	if again, err := m.ClaimNotification(ctx, t0.Add(30*time.Second), time.Minute); err != nil || again != nil {
		t.Fatalf("claimed twice within the lease: %+v, %v", again, err)
	}
	claim, err := m.ClaimNotification(ctx, t0.Add(61*time.Second), time.Minute)
	if err != nil || claim == nil || claim.Lease == stale.Lease {
		t.Fatalf("lease ran out but not claimable: %+v, %v", claim, err)
	}
	// The first holder's attempt, recorded after the takeover, counts but
	// schedules nothing.
	if err := m.RecordNotificationAttempt(ctx, n.ID, stale.Lease, store.DeliveryAttempt{At: t0}); !errors.Is(err, store.ErrNotificationLeaseLost) {
		t.Fatalf("recording under a lost lease: %v", err)
	}
	next := t0.Add(2 * time.Minute)
	if err := m.RecordNotificationAttempt(ctx, n.ID, claim.Lease, store.DeliveryAttempt{At: t0, Next: &next}); err != nil {
		t.Fatal(err)
	}
	got, err := m.GetNotification(ctx, oid, n.ID)
	if err != nil || got.Attempts != 2 || got.AutoAttempts != 1 || got.Success || got.LastAttempted == nil ||
		!got.LastAttempted.Equal(t0) || got.NextAttempt == nil || !got.NextAttempt.Equal(next) {
		t.Fatalf("after a failed attempt: %+v, %v", got, err)
	}
	if c, err := m.ClaimNotification(ctx, next.Add(-time.Millisecond), time.Minute); err != nil || c != nil {
		t.Fatalf("claimed before its retry is due: %+v, %v", c, err)
	}

	// A manual retry is due at once, and one attempt.
	if err := m.RetryNotification(ctx, oid, n.ID, t0); err != nil {
		t.Fatal(err)
	}
	claim, err = m.ClaimNotification(ctx, t0, time.Minute)
	if err != nil || claim == nil || claim.RetriesRequested != 1 {
		t.Fatalf("claiming the manual retry: %+v, %v", claim, err)
	}
	// Asked for again while the first is in flight: due once that ends.
	if err := m.RetryNotification(ctx, oid, n.ID, t0); err != nil {
		t.Fatal(err)
	}
	if c, _ := m.ClaimNotification(ctx, t0, time.Minute); c != nil {
		t.Fatalf("claimed while held: %+v", c)
	}
	if err := m.RecordNotificationAttempt(ctx, n.ID, claim.Lease, store.DeliveryAttempt{At: t0, Success: true, Manual: true}); err != nil {
		t.Fatal(err)
	}
	claim, err = m.ClaimNotification(ctx, t0, time.Minute)
	if err != nil || claim == nil || claim.RetriesRequested != 1 || !claim.Success || claim.Attempts != 3 || claim.AutoAttempts != 1 {
		t.Fatalf("claiming the second manual retry: %+v, %v", claim, err)
	}
	if err := m.RecordNotificationAttempt(ctx, n.ID, claim.Lease, store.DeliveryAttempt{At: t0, Manual: true}); err != nil {
		t.Fatal(err)
	}
	got, err = m.GetNotification(ctx, oid, n.ID)
	if err != nil || got.Attempts != 4 || !got.Success || got.NextAttempt != nil || got.RetriesRequested != 0 {
		t.Fatalf("after both manual retries: %+v, %v", got, err)
	}
	if c, _ := m.ClaimNotification(ctx, next.Add(time.Hour), time.Minute); c != nil {
		t.Fatalf("delivered notification claimed: %+v", c)
	}

	// Without a URL every pending attempt is dropped.
	if err := m.RetryNotification(ctx, oid, n.ID, t0); err != nil {
		t.Fatal(err)
	}
	claim, err = m.ClaimNotification(ctx, t0, time.Minute)
	if err != nil || claim == nil {
		t.Fatalf("claim: %+v, %v", claim, err)
	}
	if err := m.CancelNotificationDelivery(ctx, n.ID, claim.Lease); err != nil {
		t.Fatal(err)
	}
	if got, err := m.GetNotification(ctx, oid, n.ID); err != nil || got.Attempts != 4 || got.NextAttempt != nil || got.RetriesRequested != 0 {
		t.Fatalf("after cancelling: %+v, %v", got, err)
	}

	if err := m.RetryNotification(ctx, uuid.New(), n.ID, t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("retrying another org's notification: %v", err)
	}
	if _, err := m.GetNotification(ctx, uuid.New(), n.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other org's notification: %v", err)
	}
	list, total, err := m.ListNotifications(ctx, oid, store.Paging{})
	if err != nil || total != 1 || len(list) != 1 {
		t.Fatalf("list: %d %v", total, err)
	}
}

// TestInvites: one live invite per address and org (ignoring case),
// expired ones replaced, and an existing user's invite taken once.
func TestInvites(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	oid := uuid.New()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	inv := &store.Invite{ID: uuid.New(), Created: t0, InviterEmail: "a@example.com", OID: oid, Role: store.RoleCrawler, Email: "New@Example.com"}
	if err := m.CreateInvite(ctx, inv, t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	dup := *inv
	dup.ID, dup.Email = uuid.New(), "new@example.com"
	if err := m.CreateInvite(ctx, &dup, t0.Add(-time.Hour)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate invite: %v", err)
	}
	if _, err := m.GetInvite(ctx, inv.ID, t0.Add(time.Second)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired invite found: %v", err)
	}
	if err := m.CreateInvite(ctx, &dup, t0.Add(time.Second)); err != nil {
		t.Fatalf("replacing an expired invite: %v", err)
	}
	list, total, err := m.ListInvites(ctx, store.InviteFilter{OID: &oid, NotBefore: t0.Add(-time.Hour)})
	if err != nil || total != 1 || list[0].ID != dup.ID {
		t.Fatalf("list: %+v %d %v", list, total, err)
	}
	if n, err := m.DeleteInvitesByEmail(ctx, oid, "NEW@example.com"); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}

	u := &store.User{ID: uuid.New(), Email: "old@example.com", IsActive: true}
	if err := m.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := m.AddUserInvite(ctx, u.ID, *inv); err != nil {
		t.Fatal(err)
	}
	key := store.InviteKey(inv.ID)
	if got, err := m.GetUser(ctx, u.ID); err != nil || got.Invites[key].OID != oid {
		t.Fatalf("user invites: %+v, %v", got, err)
	}
	if got, err := m.TakeUserInvite(ctx, u.ID, key); err != nil || got.ID != inv.ID || got.Role != store.RoleCrawler {
		t.Fatalf("take: %+v, %v", got, err)
	}
	if _, err := m.TakeUserInvite(ctx, u.ID, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("taken twice: %v", err)
	}
	if _, err := m.TakeUserInvite(ctx, u.ID, "$where"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("malformed key: %v", err)
	}
}
