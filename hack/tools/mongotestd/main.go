// Command mongotestd serves the MongoDB wire protocol from an embedded FerretDB
// v1 with its SQLite backend. It stands in for mongod in trawler's sandbox and
// tests, because no mongod can be installed on our machines. FerretDB is
// built with the patches of this folder (see README.md), which make lookups
// by _id and equality filters use SQL instead of full scans.
//
// Usage: mongotestd -listen 127.0.0.1:0 -dir ./mongo-data
//
// With $MONGOTESTD_PPROF set to an address, it serves net/http/pprof there
// (how its CPU was found to go to aggregates at 10,000 crawls).
//
// Once listening it prints the connection URI on one stdout line; scripts and
// the sandbox use that line as the ready signal. SIGTERM or SIGINT stops it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on (port 0 picks a free one)")
	dir := flag.String("dir", "mongo-data", "directory for the SQLite database files")
	logLevel := flag.String("log-level", "error", "log level: debug, info, warn or error")
	flag.Parse()

	// FerretDB decodes every document a query scans into short-lived
	// garbage; with Go's default GOGC=100 the collector took a noticeable
	// share of the CPU of 10,000-document scans (README.md). A test server
	// can trade memory for that. An explicit GOGC still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if addr := os.Getenv("MONGOTESTD_PPROF"); addr != "" {
		go func() {
			fmt.Fprintln(os.Stderr, "mongotestd: pprof:", http.ListenAndServe(addr, nil))
		}()
	}

	if err := run(*listen, *dir, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "mongotestd:", err)
		os.Exit(1)
	}
}

func run(listen, dir, logLevel string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolving data dir: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("parsing log level: %w", err)
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listen},
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/",
		Logger:    slog.New(lazyAttrs{Handler: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})}),
	})
	if err != nil {
		return fmt.Errorf("configuring ferretdb: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx)
	}()
	fmt.Println(f.MongoDBURI())
	<-done
	return nil
}

// lazyAttrs holds a handler's attributes until a record is handled.
// FerretDB adds a connection's attributes to its logger for every command,
// and slog's text handler formats them at once: 5 % of mongotestd's CPU
// under load, for loggers whose records the level then drops.
type lazyAttrs struct {
	slog.Handler
	attrs []slog.Attr
}

func (h lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return lazyAttrs{Handler: h.Handler, attrs: append(slices.Clip(h.attrs), attrs...)}
}

// WithGroup applies the held attributes first: they belong outside it.
func (h lazyAttrs) WithGroup(name string) slog.Handler {
	return lazyAttrs{Handler: h.Handler.WithAttrs(h.attrs).WithGroup(name)}
}

func (h lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return h.Handler.WithAttrs(h.attrs).Handle(ctx, r)
}
