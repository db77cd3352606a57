package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/viper"
)

// serveDeps are the seams `trawler dev` and tests fill in; production
// leaves them zero.
type serveDeps struct {
	// redisDialer reaches per-crawl Redis pods by their cluster DNS names
	// (the sandbox has no cluster DNS).
	redisDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// listening, when set, receives the API's address once it accepts
	// connections.
	listening chan<- string
}

// serve runs the configured roles until ctx is cancelled, then shuts down
// gracefully: the HTTP server drains, the operator stops and the Lease is
// released so another replica takes over at once.
func serve(ctx context.Context, v *viper.Viper, deps serveDeps) error {
	logger, err := newLogger(v, os.Stderr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	})
	ln, err := net.Listen("tcp", v.GetString("api.listen"))
	if err != nil {
		return fmt.Errorf("listening on %s: %w", v.GetString("api.listen"), err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("serving", "addr", ln.Addr().String(), "version", version)
	if deps.listening != nil {
		deps.listening <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down: %w", err)
	}
	logger.Info("stopped")
	return nil
}
