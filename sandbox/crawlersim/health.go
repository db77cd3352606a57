package crawlersim

import (
	"errors"
	"net"
	"net/http"
	"strconv"
)

// serveHealthCheck answers GET /healthz on ListenHost:--healthCheckPort
// with 200 until the process exits, as the crawler's health checker does
// for the pod's liveness probe. Without a port or a listen address (a
// crawler run outside a pod) there is nothing to serve.
func (p *process) serveHealthCheck(port int) {
	if port <= 0 || p.opts.ListenHost == "" {
		return
	}
	l, err := net.Listen("tcp", net.JoinHostPort(p.opts.ListenHost, strconv.Itoa(port)))
	if err != nil {
		p.log.warn("healthcheck", "Health check server not started", map[string]any{"error": err.Error()})
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	srv := &http.Server{Handler: mux}
	p.wg.Go(func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.warn("healthcheck", "Health check server stopped", map[string]any{"error": err.Error()})
		}
	})
	p.wg.Go(func() {
		<-p.ctx.Done()
		_ = srv.Close()
	})
}
