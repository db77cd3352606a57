package store

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// Every replica, and every restart of one, runs EnsureIndexes against the
// same database: the second run must find the indexes and succeed.
func TestEnsureIndexesTwice(t *testing.T) {
	uri := serverURI(t)
	ctx := context.Background()
	for run := range 2 {
		m, err := Open(ctx, uri, fmt.Sprintf("indexes%d", os.Getpid()))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.EnsureIndexes(ctx); err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
		if run == 1 {
			_ = m.db.Drop(ctx)
		}
		_ = m.Close(ctx)
	}
}
