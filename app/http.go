package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/viper"
	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/api"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/web"
)

// startHTTP serves the API, /healthz and /readyz, the dashboard with
// ReplayWeb.page's entry points, the storages' access paths (see
// storageAccess) and /metrics (on a listener of its own when
// metrics.listen is set).
func startHTTP(v *viper.Viper, apiSrv *api.Server, storage map[string]http.Handler, reg *prometheus.Registry,
	listening chan<- string, errc chan<- error, logger *slog.Logger) ([]*http.Server, error) {
	mux := http.NewServeMux()
	apiHandler := apiSrv.Handler()
	mux.Handle("/healthz", apiHandler)
	mux.Handle("/readyz", apiHandler)
	if v.GetBool("api.enabled") {
		mux.Handle("/api/", apiHandler)
		mux.Handle("/api", apiHandler)
		mux.Handle("/", apiSrv.Instrument("/", web.Handler(web.Config{
			MaxScale:      v.GetInt("max_crawl_scale"),
			ReplayBaseURL: v.GetString("replay.base_url"),
		})))
	}
	files := map[string]http.Handler{}
	if v.GetBool("api.enabled") {
		for path, proxy := range storage {
			files[path] = apiSrv.Instrument(path, proxy)
		}
	}
	metrics := apiSrv.Instrument("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	metricsMux := mux
	if v.GetString("metrics.listen") != "" {
		metricsMux = http.NewServeMux()
	}
	metricsMux.Handle("/metrics", metrics)

	var servers []*http.Server
	serveOn := func(addr string, h http.Handler, what string) (string, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return "", fmt.Errorf("listening on %s: %w", addr, err)
		}
		// Every request gets whole-request read and write deadlines, so a
		// client that sends or reads slowly cannot hold a connection
		// forever; streaming routes lift them for themselves.
		srv := &http.Server{Handler: h,
			ReadHeaderTimeout: v.GetDuration("api.read_header_timeout"),
			ReadTimeout:       v.GetDuration("api.read_timeout"),
			WriteTimeout:      v.GetDuration("api.write_timeout"),
			IdleTimeout:       v.GetDuration("api.idle_timeout"),
		}
		// Event streams never go idle: end them, or Shutdown waits for
		// its whole timeout.
		srv.RegisterOnShutdown(apiSrv.EndStreams)
		servers = append(servers, srv)
		logger.Info("serving "+what, "addr", ln.Addr().String(), "version", Version, "api", v.GetBool("api.enabled"))
		go func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("serving %s: %w", what, err)
			}
		}()
		return ln.Addr().String(), nil
	}
	addr, err := serveOn(v.GetString("api.listen"), withStorageAccess(mux, files), "http")
	if err != nil {
		return nil, err
	}
	if metricsMux != mux {
		if _, err := serveOn(v.GetString("metrics.listen"), metricsMux, "metrics"); err != nil {
			_ = servers[0].Close()
			return nil, err
		}
	}
	if listening != nil {
		listening <- addr
	}
	return servers, nil
}

// newMetricsRegistry is the registry /metrics serves: the Go runtime and
// process collectors, and whether this replica leads (the other parts
// register their own metrics on it).
func newMetricsRegistry(ready *readiness) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	leader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "trawler_leader",
		Help: "1 while this replica holds the leader Lease and runs the operator and the crawl scheduler, else 0.",
	}, func() float64 {
		if ready.leading.Load() {
			return 1
		}
		return 0
	})
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), leader} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	return reg, nil
}

// readiness is what /readyz checks: MongoDB prepared and answering, the
// Kubernetes API answering, and, on the leader, the operator's caches
// synced. Followers are ready too: they serve the API.
type readiness struct {
	store   *store.Mongo
	kube    kubernetes.Interface
	dbReady atomic.Bool
	leading atomic.Bool
	// synced reports the operator's informer caches; set while leading.
	synced atomic.Pointer[func() bool]
}

func (r *readiness) check(ctx context.Context) error {
	if !r.dbReady.Load() {
		return errors.New("database not prepared yet")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.store.Ping(ctx); err != nil {
		return fmt.Errorf("mongo: %w", err)
	}
	if _, err := r.kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return fmt.Errorf("kubernetes: %w", err)
	}
	if r.leading.Load() {
		if synced := r.synced.Load(); synced != nil && !(*synced)() {
			return errors.New("operator caches not synced yet")
		}
	}
	return nil
}
