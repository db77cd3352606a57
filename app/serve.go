package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/viper"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/trawlerhq/trawler/api"
	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/email"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/web"
	"github.com/trawlerhq/trawler/webhook"
)

// Deps are the seams `trawler dev` and tests fill in; production leaves
// them zero.
type Deps struct {
	// ClusterDialer reaches pods by their cluster DNS names (per-crawl
	// Redis, profile browsers): the sandbox has no cluster DNS.
	ClusterDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logs reads pod logs where the pods/log API cannot (the sandbox).
	Logs operator.LogReader
	// Listening, when set, receives the API's address once it accepts
	// connections.
	Listening chan<- string
	// Logger, when set, replaces the configured logger.
	Logger *slog.Logger
	// StorageTransport, when set, carries object storage requests (the
	// sandbox's reaches its S3 server by a cluster name).
	StorageTransport http.RoundTripper
}

// Serve runs the configured roles until ctx is cancelled, then shuts down
// gracefully: the HTTP server drains, the operator and scheduler stop and
// the Lease is released so another replica takes over at once.
func Serve(ctx context.Context, v *viper.Viper, deps Deps) error {
	logger := deps.Logger
	if logger == nil {
		var err error
		if logger, err = NewLogger(v, os.Stderr); err != nil {
			return err
		}
	}
	routeLibraryLogs(logger)
	ready := &readiness{}
	reg, err := newMetricsRegistry(ready)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, v.GetString("mongo.uri"), v.GetString("mongo.database"), store.WithMetrics(reg),
		store.WithTimeout(v.GetDuration("mongo.timeout")))
	if err != nil {
		return fmt.Errorf("opening store: %w", err)
	}
	defer func() { _ = st.Close(context.Background()) }()

	restCfg, err := kubeRESTConfig(v)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("building kubernetes client: %w", err)
	}
	trawler, err := versioned.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("building trawler client: %w", err)
	}
	if v.GetBool("kubernetes.install_crds") {
		if err := k8s.InstallCRDs(ctx, restCfg); err != nil {
			return err
		}
		if err := k8s.EnsurePriorityClasses(ctx, kube, v.GetInt("max_crawl_scale")); err != nil {
			return err
		}
	}

	ready.store, ready.kube = st, kube
	apiCfg, err := apiConfig(v, logger)
	if err != nil {
		return err
	}
	redisHook, err := crawlredis.NewMetrics(reg)
	if err != nil {
		return err
	}
	objects, err := objectStorage(v, deps.StorageTransport, logger)
	if err != nil {
		return err
	}
	deliveries, err := webhook.NewMetrics(reg)
	if err != nil {
		return err
	}
	// The webhooks' download URLs are the API's links, signed as
	// replay.json signs them; the API is built right below.
	var apiSrv *api.Server
	downloadURLs := func(ctx context.Context, c *store.Crawl) ([]string, error) { return apiSrv.DownloadURLs(ctx, c) }
	notifier, err := webhook.New(WebhookConfig(v), webhook.Deps{Store: st, Resources: downloadURLs,
		Observer: deliveries, Log: logger.With("component", "webhooks")})
	if err != nil {
		return err
	}
	launcher := k8s.NewLauncher(kube, trawler, v.GetString("crawler_namespace"))
	apiDeps := api.Deps{
		Store:         st,
		Launcher:      launcher,
		Secrets:       launcher,
		Browsers:      launcher,
		RedisDialer:   deps.ClusterDialer,
		BrowserDialer: deps.ClusterDialer,
		Ready:         ready.check,
		Mailer:        email.New(emailConfig(v), logger.With("component", "email")),
		Webhooks:      notifier,
		Metrics:       reg,
		RedisHook:     redisHook,
	}
	if objects != nil {
		apiDeps.Storage = objects
	}
	apiSrv = api.New(apiCfg, apiDeps)

	var opCfg operator.Config
	var opDeps operator.Deps
	if v.GetBool("operator.enabled") {
		if opCfg, err = operatorConfig(v); err != nil {
			return err
		}
		opCfg.RedisDialer, opCfg.RedisHook = deps.ClusterDialer, redisHook
		metrics, err := metricsclient.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("building metrics client: %w", err)
		}
		telemetry, err := operator.NewTelemetry(reg)
		if err != nil {
			return err
		}
		opDeps = operator.Deps{Kube: kube, Trawler: trawler, Metrics: metrics, Store: st, Logs: deps.Logs, Log: logger,
			Events: notifier, Telemetry: telemetry}
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	wg.Go(func() { prepareDatabase(ctx, st, apiSrv, ready, logger) })
	// Every replica delivers webhooks: the outbox's leases share the work,
	// and deliveries left pending by a stopped process are taken up here.
	wg.Go(func() { notifier.Run(ctx) })

	// One slot per sender (HTTP and the operator), so neither blocks on a
	// fatal error the other already reported.
	fatal := make(chan error, 2)
	srv, err := startHTTP(v, apiSrv, reg, deps.Listening, fatal, logger)
	if err != nil {
		return err
	}
	if v.GetBool("operator.enabled") {
		wg.Go(func() {
			if err := lead(ctx, v, opCfg, opDeps, apiSrv.Scheduler(), ready, logger); err != nil {
				fatal <- err
			}
		})
	}

	select {
	case err = <-fatal:
		logger.Error("stopping", "err", err)
	case <-ctx.Done():
		logger.Info("shutting down")
	}
	cancel()
	shutdownCtx, stop := context.WithTimeout(context.Background(), 15*time.Second)
	defer stop()
	for _, s := range srv {
		if e := s.Shutdown(shutdownCtx); e != nil && !errors.Is(e, http.ErrServerClosed) && err == nil {
			err = fmt.Errorf("shutting down http: %w", e)
		}
	}
	return err
}

// startHTTP serves the API, /healthz and /readyz, the dashboard and
// /metrics (on a listener of its own when metrics.listen is set).
func startHTTP(v *viper.Viper, apiSrv *api.Server, reg *prometheus.Registry, listening chan<- string, errc chan<- error,
	logger *slog.Logger) ([]*http.Server, error) {
	mux := http.NewServeMux()
	apiHandler := apiSrv.Handler()
	mux.Handle("/healthz", apiHandler)
	mux.Handle("/readyz", apiHandler)
	if v.GetBool("api.enabled") {
		mux.Handle("/api/", apiHandler)
		mux.Handle("/api", apiHandler)
		mux.Handle("/", apiSrv.Instrument("/", web.Handler(web.Config{MaxScale: v.GetInt("max_crawl_scale")})))
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
	addr, err := serveOn(v.GetString("api.listen"), mux, "http")
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

// prepareDatabase creates the indexes, the superuser and the default org,
// retrying until MongoDB answers: the process serves /healthz meanwhile
// and /readyz says why it is not ready.
func prepareDatabase(ctx context.Context, st *store.Mongo, apiSrv *api.Server, ready *readiness, logger *slog.Logger) {
	for delay := 500 * time.Millisecond; ; delay = min(2*delay, 15*time.Second) {
		err := st.EnsureIndexes(ctx)
		if err == nil {
			err = apiSrv.Bootstrap(ctx)
		}
		if err == nil {
			ready.dbReady.Store(true)
			logger.Info("database ready")
			return
		}
		logger.Warn("preparing database, will retry", "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// lead runs the operator and the crawl scheduler while this replica holds
// the Lease, and campaigns again with a fresh controller after losing it.
func lead(ctx context.Context, v *viper.Viper, cfg operator.Config, deps operator.Deps, sched *api.Scheduler,
	ready *readiness, logger *slog.Logger) error {
	host, _ := os.Hostname()
	for ctx.Err() == nil {
		ctrl, err := operator.New(cfg, deps)
		if err != nil {
			return fmt.Errorf("building operator: %w", err)
		}
		synced := ctrl.HasSynced
		ready.synced.Store(&synced)
		le := operator.LeaderElection{
			Namespace:     v.GetString("leader_election.namespace"),
			Name:          v.GetString("leader_election.name"),
			Identity:      host + "_" + uuid.NewString(),
			LeaseDuration: v.GetDuration("leader_election.lease_duration"),
			RenewDeadline: v.GetDuration("leader_election.renew_deadline"),
			RetryPeriod:   v.GetDuration("leader_election.retry_period"),
			OnLeading: func() {
				ready.leading.Store(true)
				if err := sched.Start(ctx); err != nil {
					logger.Error("starting crawl scheduler", "err", err)
				}
			},
		}
		if v.GetBool("leader_election.enabled") {
			err = ctrl.RunWithLeaderElection(ctx, le)
		} else {
			le.OnLeading()
			ctrl.Run(ctx)
		}
		sched.Stop()
		ready.leading.Store(false)
		switch {
		case errors.Is(err, operator.ErrLostLeadership):
			logger.Warn("lost leadership; campaigning again")
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("running operator: %w", err)
		}
	}
	return nil
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

// kubeRESTConfig loads the kubeconfig named by kubernetes.kubeconfig, or
// the in-cluster config.
func kubeRESTConfig(v *viper.Viper) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if path := v.GetString("kubernetes.kubeconfig"); path != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("loading kubernetes config: %w", err)
	}
	cfg.QPS = float32(v.GetFloat64("operator.kube_qps"))
	cfg.Burst = v.GetInt("operator.kube_burst")
	cfg.UserAgent = "trawler/" + Version
	return cfg, nil
}
