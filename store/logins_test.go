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
