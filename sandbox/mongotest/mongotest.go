// Package mongotest runs a package's tests and benchmarks against a
// Mongo-wire server (and, when asked, a redis-server and Mailpit), hands each test a
// store on a database of its own, and seeds bulk data.
//
// By default the server is the sandbox's mongotestd (FerretDB on SQLite);
// when the environment variable MONGO_URI is set, a real MongoDB at that
// URI is used instead, so the same tests check real MongoDB semantics.
package mongotest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/store"
)

// EnvURI names the variable that points the tests at a real MongoDB.
const EnvURI = "MONGO_URI"

// Options say what Main starts besides the Mongo-wire server.
type Options struct {
	// Redis starts a redis-server for the run; RedisAddr returns it.
	Redis bool
	// Mailpit starts an SMTP server with an API for the run; Mailpit
	// returns it.
	Mailpit bool
	// URIParams are appended to a started mongotestd's URI, e.g.
	// "&serverSelectionTimeoutMS=600000" for benchmarks whose queued
	// callers wait on FerretDB's single connection longer than the
	// driver's default 30 s.
	URIParams string
}

var (
	dbCounter atomic.Int64
	runDir    string
	redisAddr string
	mailpit   *sandbox.Mailpit
)

// Main runs a package's tests (call it from TestMain) with the servers of
// opts for the whole run: mongotestd in a temporary folder unless
// MONGO_URI is set. It sets MONGO_URI for the run, so tests inside the
// package under test (which cannot import mongotest) find the server there
// too.
func Main(m *testing.M, opts Options) {
	os.Exit(run(m, opts))
}

func run(m *testing.M, opts Options) int {
	dir, err := os.MkdirTemp("", "mongotest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mongotest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	runDir = dir
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if os.Getenv(EnvURI) == "" {
		srv, err := sandbox.StartMongo(ctx, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mongotest: starting mongotestd:", err)
			return 1
		}
		defer func() { _ = srv.Stop(5 * time.Second) }()
		os.Setenv(EnvURI, srv.URI()+opts.URIParams)
		defer os.Unsetenv(EnvURI)
	}
	if opts.Redis {
		rdir, err := os.MkdirTemp(dir, "redis")
		if err != nil {
			fmt.Fprintln(os.Stderr, "mongotest:", err)
			return 1
		}
		rds, err := sandbox.StartRedis(ctx, rdir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mongotest: starting redis-server:", err)
			return 1
		}
		defer func() { _ = rds.Stop(5 * time.Second) }()
		redisAddr = rds.Addr()
	}
	if opts.Mailpit {
		mdir, err := os.MkdirTemp(dir, "mailpit")
		if err != nil {
			fmt.Fprintln(os.Stderr, "mongotest:", err)
			return 1
		}
		if mailpit, err = sandbox.StartMailpit(ctx, mdir); err != nil {
			fmt.Fprintln(os.Stderr, "mongotest: starting mailpit:", err)
			return 1
		}
		defer func() { _ = mailpit.Stop(5 * time.Second) }()
	}
	cancel()
	return m.Run()
}

// TempDir makes a folder for a server the package starts itself (on first
// use, say); it goes with the run's folder when the run ends.
func TempDir(pattern string) (string, error) {
	if runDir == "" {
		return "", errors.New("mongotest: no run folder; call mongotest.Main from TestMain")
	}
	return os.MkdirTemp(runDir, pattern)
}

// URI returns the server's URI; tests fail if Main did not run.
func URI(tb testing.TB) string {
	tb.Helper()
	uri := os.Getenv(EnvURI)
	if uri == "" {
		tb.Fatal("mongotest: no server; call mongotest.Main from TestMain or set " + EnvURI)
	}
	return uri
}

// RedisAddr returns the redis-server's host:port; tests fail if Main did
// not start one.
func RedisAddr(tb testing.TB) string {
	tb.Helper()
	if redisAddr == "" {
		tb.Fatal("mongotest: no redis-server; pass Options{Redis: true} to Main")
	}
	return redisAddr
}

// Mailpit returns the run's Mailpit; tests fail if Main did not start one.
func Mailpit(tb testing.TB) *sandbox.Mailpit {
	tb.Helper()
	if mailpit == nil {
		tb.Fatal("mongotest: no mailpit; pass Options{Mailpit: true} to Main")
	}
	return mailpit
}

// DB is a store on a database no other test uses, plus direct access to
// that database for tests that read or write documents as they are stored.
type DB struct {
	*store.Mongo
	tb   testing.TB
	name string

	rawOnce sync.Once
	raw     *mongo.Database
}

// Open returns a store on a fresh database with its indexes, opened with
// opts; the database is dropped and the store closed when the test ends.
func Open(tb testing.TB, opts ...store.Option) *DB {
	tb.Helper()
	ctx := context.Background()
	db := &DB{tb: tb, name: fmt.Sprintf("t%d_%d", os.Getpid(), dbCounter.Add(1))}
	m, err := store.Open(ctx, URI(tb), db.name, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	db.Mongo = m
	tb.Cleanup(func() {
		_ = db.Raw().Drop(ctx)
		_ = m.Close(ctx)
	})
	if err := m.EnsureIndexes(ctx); err != nil {
		tb.Fatal(err)
	}
	return db
}

// Name is the database's name.
func (db *DB) Name() string { return db.name }

// Raw is the database itself, through a client of its own that encodes
// uuid.UUID as the store does (BSON binary subtype 4).
func (db *DB) Raw() *mongo.Database {
	db.rawOnce.Do(func() {
		client, err := mongo.Connect(options.Client().ApplyURI(URI(db.tb)).SetRegistry(store.Registry()))
		if err != nil {
			db.tb.Fatal(err)
		}
		db.tb.Cleanup(func() { _ = client.Disconnect(context.Background()) })
		db.raw = client.Database(db.name)
	})
	return db.raw
}
