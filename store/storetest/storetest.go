// Package storetest starts a Mongo-wire server for tests and benchmarks of
// the store and its users, hands each test a database of its own, and seeds
// bulk data.
//
// By default the server is the sandbox's mongotestd (FerretDB on SQLite);
// when the environment variable MONGO_URI is set, a real MongoDB at that
// URI is used instead, so the same tests check real MongoDB semantics.
package storetest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/store"
)

// EnvURI names the variable that points the tests at a real MongoDB.
const EnvURI = "MONGO_URI"

var dbCounter atomic.Int64

// Main runs a package's tests (call it from TestMain) with a server for
// the whole run: mongotestd in a temporary folder unless MONGO_URI is set.
// It sets MONGO_URI for the run, so tests of the package under test itself
// (which cannot import storetest) find the server there too.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv(EnvURI) != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "storetest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "storetest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	srv, err := sandbox.StartMongo(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "storetest: starting mongotestd:", err)
		return 1
	}
	defer func() { _ = srv.Stop(5 * time.Second) }()
	os.Setenv(EnvURI, srv.URI())
	defer os.Unsetenv(EnvURI)
	return m.Run()
}

// URI returns the server's URI; tests fail if Main did not run.
func URI(tb testing.TB) string {
	tb.Helper()
	uri := os.Getenv(EnvURI)
	if uri == "" {
		tb.Fatal("storetest: no server; call storetest.Main from TestMain or set " + EnvURI)
	}
	return uri
}

// dbName returns a database name no other test of this run (or of a
// concurrent run against the same server) uses.
func dbName() string {
	return fmt.Sprintf("t%d_%d", os.Getpid(), dbCounter.Add(1))
}

// Open returns a store on a fresh database with its indexes; the database
// is dropped and the store closed when the test ends.
func Open(tb testing.TB) *store.Mongo {
	tb.Helper()
	ctx := context.Background()
	m, err := store.Open(ctx, URI(tb), dbName())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = m.DB().Drop(ctx)
		_ = m.Close(ctx)
	})
	if err := m.EnsureIndexes(ctx); err != nil {
		tb.Fatal(err)
	}
	return m
}
