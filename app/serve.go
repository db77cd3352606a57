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
	"time"

	"github.com/google/uuid"
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
	objects, storage, err := objectStorage(ctx, v, deps.StorageTransport, apiCfg.AllowedOutbound, logger)
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
	notifier, err := webhook.New(WebhookConfig(v), webhook.Deps{Store: st, Resources: downloadURLs, Allowed: apiCfg.AllowedOutbound,
		Observer: deliveries, Log: logger.With("component", "webhooks")})
	if err != nil {
		return err
	}
	launcher := k8s.NewLauncher(kube, trawler, v.GetString("crawler_namespace"))
	mailer := email.New(emailConfig(v), logger.With("component", "email"))
	apiDeps := api.Deps{
		Store:         st,
		Launcher:      launcher,
		Secrets:       launcher,
		Browsers:      launcher,
		OrgObjects:    launcher,
		RedisDialer:   deps.ClusterDialer,
		BrowserDialer: deps.ClusterDialer,
		Ready:         ready.check,
		Mailer:        mailer,
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
		progress, err := versioned.NewForConfig(progressRESTConfig(restCfg, opCfg.ProgressQPS))
		if err != nil {
			return fmt.Errorf("building progress client: %w", err)
		}
		opDeps = operator.Deps{Kube: kube, Trawler: trawler, ProgressTrawler: progress, Metrics: metrics, Store: st,
			Logs: deps.Logs, Log: logger, Events: notifier, Telemetry: telemetry, Pages: apiSrv, Files: apiSrv, Mailer: mailer}
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
	srv, err := startHTTP(v, apiSrv, storage, reg, deps.Listening, fatal, logger)
	if err != nil {
		return err
	}
	if v.GetBool("operator.enabled") {
		wg.Go(func() {
			if err := lead(ctx, v, opCfg, opDeps, apiSrv, ready, logger); err != nil {
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

// lead runs the operator, the crawl scheduler and the org deletion jobs
// while this replica holds the Lease, and campaigns again with a fresh
// controller after losing it.
func lead(ctx context.Context, v *viper.Viper, cfg operator.Config, deps operator.Deps, apiSrv *api.Server,
	ready *readiness, logger *slog.Logger) error {
	host, _ := os.Hostname()
	sched, deleter := apiSrv.Scheduler(), apiSrv.OrgDeleter()
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
				// A deletion cut short by the last leader's end resumes.
				deleter.Start(ctx)
			},
		}
		if v.GetBool("leader_election.enabled") {
			err = ctrl.RunWithLeaderElection(ctx, le)
		} else {
			le.OnLeading()
			ctrl.Run(ctx)
		}
		sched.Stop()
		deleter.Stop()
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

// progressRESTConfig is the REST config of the operator's progress
// writes: a token bucket of their own (operator.progress_qps), which the
// operator's global progress budget keeps them within, so they never
// take tokens from state changes and child creates.
func progressRESTConfig(base *rest.Config, qps float64) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = float32(qps), max(int(qps), 1), nil
	return cfg
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
