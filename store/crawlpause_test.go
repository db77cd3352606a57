package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/event"
)

// TestSetCrawlPauseRoundTrips: a pause or resume is the org check and one
// write that returns the crawl as it is after it (a hundred pauses at
// once wait on the store in line, so each round trip counts), and a crawl
// of another org is not written.
func TestSetCrawlPauseRoundTrips(t *testing.T) {
	uri := serverURI(t)
	ctx := context.Background()
	var mu sync.Mutex
	commands := map[string]int{}
	monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		commands[e.CommandName]++
		mu.Unlock()
	}}
	m := monitoredMongo(t, uri, fmt.Sprintf("pause%d", os.Getpid()), monitor)
	t.Cleanup(func() { _ = m.db.Drop(ctx); _ = m.Close(ctx) })
	org := uuid.New()
	if err := m.AddCrawl(ctx, &Crawl{ID: "c1", OID: org, State: StateRunning}); err != nil {
		t.Fatal(err)
	}
	sent := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := commands
		commands = map[string]int{}
		return out
	}
	sent()

	at := time.Now().UTC().Truncate(time.Second)
	c, err := m.SetCrawlPause(ctx, org, "c1", &at)
	if err != nil {
		t.Fatal(err)
	}
	if !c.ShouldPause || c.PausedAt == nil || !c.PausedAt.Equal(at) {
		t.Fatalf("after the pause: shouldPause %v, pausedAt %v", c.ShouldPause, c.PausedAt)
	}
	if got := sent(); len(got) != 2 || got["find"] != 1 || got["findAndModify"] != 1 {
		t.Fatalf("a pause sent %v, want one find and one findAndModify", got)
	}
	if c, err = m.SetCrawlPause(ctx, org, "c1", nil); err != nil {
		t.Fatal(err)
	}
	if c.ShouldPause || c.PausedAt != nil || c.AutoPausedEmailsSent {
		t.Fatalf("after the resume: shouldPause %v, pausedAt %v, autoPausedEmailsSent %v", c.ShouldPause, c.PausedAt, c.AutoPausedEmailsSent)
	}
	sent()

	for _, tc := range []struct {
		org uuid.UUID
		id  string
	}{{uuid.New(), "c1"}, {org, "nothere"}} {
		if _, err := m.SetCrawlPause(ctx, tc.org, tc.id, &at); !errors.Is(err, ErrNotFound) {
			t.Errorf("SetCrawlPause(%s in another org or unknown) = %v, want not found", tc.id, err)
		}
	}
	if got := sent(); got["findAndModify"] != 0 || got["update"] != 0 {
		t.Fatalf("pauses refused by the org check wrote: %v", got)
	}
}
