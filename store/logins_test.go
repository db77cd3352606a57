package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
)

func TestLoginAttempts(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	start := now()
	end := start.Add(time.Minute)
	keys := []string{"account:ann@example.org", "address:192.0.2.1"}

	// Concurrent attempts each get their own count: none is lost.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var seen []int64
	for range 8 {
		wg.Go(func() {
			counts, err := m.AddLoginAttempt(ctx, keys, start, end)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen = append(seen, counts[0])
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(seen)
	if !slices.Equal(seen, []int64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("counts %v, want 1..8 once each", seen)
	}

	// A success forgets its account's failures and releases its address.
	if err := m.ReleaseLoginAttempt(ctx, keys[0], start, true); err != nil {
		t.Fatal(err)
	}
	if err := m.ReleaseLoginAttempt(ctx, keys[1], start, false); err != nil {
		t.Fatal(err)
	}
	counts, err := m.AddLoginAttempt(ctx, keys, start, end)
	if err != nil || counts[0] != 1 || counts[1] != 8 {
		t.Fatalf("after release: %v, %v; want [1 8]", counts, err)
	}

	// The next window counts from one.
	counts, err = m.AddLoginAttempt(ctx, keys, end, end.Add(time.Minute))
	if err != nil || counts[0] != 1 || counts[1] != 1 {
		t.Fatalf("next window: %v, %v", counts, err)
	}

	// Ended windows are swept; the current one stays.
	if err := m.DeleteEndedLoginWindows(ctx, end); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Raw().Collection("login_attempts").CountDocuments(ctx, map[string]any{}); err != nil || n != 2 {
		t.Fatalf("%d counters left, %v; want the current window's 2", n, err)
	}
}

// A paced key's turn is taken by one attempt at a time, however many
// race for it, and is free again once its pause is over.
func TestLoginPace(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	start := now()
	end := start.Add(time.Minute)
	key := "account:ann@example.org"
	if _, err := m.AddLoginAttempt(ctx, []string{key}, start, end); err != nil {
		t.Fatal(err)
	}
	next := start.Add(5 * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var taken, busy int
	for range 8 {
		wg.Go(func() {
			until, err := m.PaceLoginAttempt(ctx, key, start, start, next)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case until.IsZero():
				taken++
			case until.Equal(next):
				busy++
			default:
				t.Errorf("busy until %v, want %v", until, next)
			}
		})
	}
	wg.Wait()
	if taken != 1 || busy != 7 {
		t.Fatalf("%d took the turn and %d found it busy, want 1 and 7", taken, busy)
	}
	if until, err := m.PaceLoginAttempt(ctx, key, start, next, next.Add(time.Second)); err != nil || !until.IsZero() {
		t.Fatalf("after the pause: busy until %v, %v", until, err)
	}
}

// Remembered logins are known until they expire, and swept after.
func TestRememberLogin(t *testing.T) {
	m := mongotest.Open(t)
	ctx := context.Background()
	t0 := now()
	key := "known:ann@example.org|192.0.2.1"
	if ok, err := m.LoginRemembered(ctx, key, t0); err != nil || ok {
		t.Fatalf("before: %v %v", ok, err)
	}
	if err := m.RememberLogin(ctx, key, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.LoginRemembered(ctx, key, t0.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("remembered: %v %v", ok, err)
	}
	if ok, err := m.LoginRemembered(ctx, key, t0.Add(time.Hour)); err != nil || ok {
		t.Fatalf("expired: %v %v", ok, err)
	}
	if err := m.DeleteEndedLoginWindows(ctx, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Raw().Collection("login_attempts").CountDocuments(ctx, map[string]any{}); err != nil || n != 0 {
		t.Fatalf("%d left after the sweep, %v", n, err)
	}
}
