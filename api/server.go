// Package api is trawler's Browsertrix-compatible REST API: echo routes per
// resource, JWT auth, org/role checks, request and response DTOs with named
// converters to store types, the one error-to-HTTP mapping, the OpenAPI
// document and the cron scheduler of workflows.
//
// Paths, JSON field names, nulls, status codes and detail strings follow the
// Browsertrix API of ad9bca2 (shared/spec/upstream-behaviour.md §5), with the
// upstream bugs of §8 fixed.
//
// Of trawler it imports store (the database's types and error
// vocabulary), k8s (CrawlJob and ProfileJob types, launch requests and
// naming rules), s3 (object storage), crawlredis (a running crawl's
// Redis), jsregex (the crawler's regex rules) and netpolicy (which
// addresses are internal). It reads running crawls' Redis and calls
// profile browser pods itself; the store, the launchers, object storage,
// the mailer and the webhook notifier it takes through the interfaces in
// deps.go, which main fills.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"
	"k8s.io/utils/clock"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/netpolicy"
)

// Config holds the API's settings. main fills it from the settings table
// (config.go), the one home of the defaults.
type Config struct {
	// CrawlerChannels are the crawler images workflows choose from by
	// crawlerChannel; one is k8s.DefaultChannel. Required.
	CrawlerChannels k8s.CrawlerChannels
	// CrawlerProxies are the proxies workflows and profiles choose by
	// proxyId, with the default proxy of crawls that choose none (nil:
	// no proxies).
	CrawlerProxies *k8s.ProxySource
	// JWTSecret signs login tokens (HS256). Required.
	JWTSecret []byte
	// TokenLifetime is how long a login token is valid.
	TokenLifetime time.Duration
	// MaxCrawlScale bounds workflow and crawl scale.
	MaxCrawlScale int
	// PausedCrawlLimit is how long a crawl may stay paused before the
	// operator ends it (the workflow's lastCrawlPausedExpiry, the
	// settings' pausedExpiryMinutes).
	PausedCrawlLimit time.Duration
	// MaxPagesPerCrawl is reported by /api/settings (0 = no limit).
	MaxPagesPerCrawl int
	// DefaultFilenameTemplate names WACZ files of workflows that set none.
	DefaultFilenameTemplate string
	// CrawlerNamespace is where crawl Redis services live.
	CrawlerNamespace string
	// ClusterDomain completes per-crawl Redis host names.
	ClusterDomain string
	// PresignDuration is how long a download link stays valid (upstream's
	// PRESIGN_DURATION_MINUTES); links are cached on the files and signed
	// again when less than a tenth of it is left.
	PresignDuration time.Duration

	// SuperuserEmail and SuperuserPassword are the account Bootstrap creates
	// or resets.
	SuperuserEmail, SuperuserPassword string
	// DefaultOrgName is the org Bootstrap creates.
	DefaultOrgName string

	// RegistrationEnabled lets people register without an invite; it is
	// reported by /api/settings, as are DefaultBehaviorTimeSeconds and
	// DefaultPageLoadTimeSeconds.
	RegistrationEnabled        bool
	DefaultBehaviorTimeSeconds int
	DefaultPageLoadTimeSeconds int

	// InviteLifetime is how long an invite can be accepted.
	InviteLifetime time.Duration
	// AppOrigin (scheme://host) starts the links in e-mails and webhook
	// download URLs when a request carries no X-Forwarded-Proto (default:
	// the request's own scheme and Host).
	AppOrigin string

	// SeedFileCleanupSchedule is when the leader deletes old seed files
	// that nothing references (UTC; nil never), and SeedFileCleanupAfter
	// how old they must be (upstream's CLEANUP_JOB_CRON_SCHEDULE and
	// CLEANUP_FILES_AFTER_MINUTES).
	SeedFileCleanupSchedule cron.Schedule
	SeedFileCleanupAfter    time.Duration

	// ScheduleRescan is how often the scheduler re-reads the schedules of
	// all workflows, catching changes made through other replicas.
	ScheduleRescan time.Duration

	// EventsPollInterval is how often a watched crawl is read for its
	// event streams: the document where the store has no change streams,
	// and the live progress in its Redis while it runs.
	EventsPollInterval time.Duration
	// EventsKeepAlive is the longest an event stream stays silent; a
	// comment is sent then, so proxies and clients keep it open.
	EventsKeepAlive time.Duration
	// LoginFailuresPerAccount is how many failed logins an account may
	// have from one client address in one LoginFailureWindow before that
	// address gets 429s for the account until the window ends, and from
	// all addresses before the account's logins are paced (loginLimiter).
	// LoginFailuresPerAddress is how many one client address may have,
	// over all accounts, before it gets 429s until the window ends.
	LoginFailuresPerAccount int
	LoginFailuresPerAddress int
	LoginFailureWindow      time.Duration
	// LoginAccountMaxDelay is the longest pause between the attempts at
	// a paced account (0: no pacing).
	LoginAccountMaxDelay time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For is believed
	// (ParseTrustedProxies); without any, the client address is the
	// connection's peer.
	TrustedProxies []netip.Prefix
	// AllowedInternal are the internal ranges crawl seeds and
	// profile-browser URLs may name (crawler.allowed_internal_cidrs);
	// other internal IP literals get 422 (internalurls.go).
	AllowedInternal netpolicy.AllowList
	// AllowedOutbound are the internal ranges webhook URLs and orgs' own
	// storage endpoints may name (outbound.allowed_cidrs); empty: none.
	AllowedOutbound netpolicy.AllowList
	// PasswordHashConcurrency is how many bcrypt hashes or checks may run
	// at once (0: half the CPUs, at least one).
	PasswordHashConcurrency int
	// PasswordHashCost is the bcrypt cost of the password hashes it makes
	// (0: bcrypt's default, 10). A stored hash is checked at the cost it
	// was made with, so changing it affects only new and changed passwords.
	PasswordHashCost int

	// Version is trawler's version, named as the software that wrote a
	// download's datapackage.json (default "dev").
	Version string

	// Logger receives request logs and 5xx details (default slog.Default()).
	Logger *slog.Logger
}

// Deps are the collaborators the API consumes, declared here on the
// consumer side; main passes the concrete store, launcher and clock.
type Deps struct {
	Store    Store
	Launcher CrawlLauncher
	// Storage holds the crawls' files; nil leaves download links empty
	// and deletes only documents (tests without object storage).
	Storage ObjectStorage
	// Secrets syncs an org's own storage to the crawler namespace.
	Secrets  StorageSecrets
	Browsers BrowserLauncher
	// OrgObjects removes a deleted org's objects from Kubernetes (nil:
	// the org deletion leaves Kubernetes alone).
	OrgObjects OrgObjects
	// RedisDialer, when set, dials a running crawl's Redis instead of the
	// network's resolver; tests pass the sandbox's. Nil in production.
	RedisDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// BrowserDialer is the same for profile browser pods.
	BrowserDialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Clock is the time source (default the real clock).
	Clock clock.PassiveClock
	// Ready reports whether the process can serve (/readyz); nil = ready.
	Ready func(ctx context.Context) error
	// Mailer sends invites, verification and password-reset e-mails
	// (default: log them).
	Mailer Mailer
	// Webhooks, when set, is told of the crawls the API ends.
	Webhooks Webhooks
	// Metrics is where the API registers its Prometheus metrics (nil: a
	// registry of its own, which nobody scrapes).
	Metrics prometheus.Registerer
	// RedisHook, when set, is added to every client of a crawl's Redis
	// (crawlredis.NewMetrics).
	RedisHook redis.Hook
}

// Server is the REST API. Build it with New and serve Handler.
type Server struct {
	cfg      Config
	store    Store
	launcher CrawlLauncher
	objects  ObjectStorage
	secrets  StorageSecrets
	clock    clock.PassiveClock
	redis    *liveCrawls
	browsers BrowserLauncher
	// browserPods calls the HTTP API of profile browser pods.
	browserPods *browserPods
	ready       func(ctx context.Context) error
	log         *slog.Logger
	mail        Mailer
	webhooks    Webhooks
	echo        *echo.Echo

	// background tracks e-mails being sent after their request answered.
	background sync.WaitGroup

	passwords *passwordHasher
	logins    *loginLimiter
	// liveStatsBudget bounds what live stats add to a request
	// (liveStatsTimeout; tests shorten it).
	liveStatsBudget time.Duration
	// verifyBudget is how long an org storage's verification may take and
	// a failed one takes (verifyBudget in orgstorage.go; tests shorten it).
	verifyBudget time.Duration

	openAPIDoc openAPIDoc
	scheduler  *Scheduler
	orgDeleter *OrgDeleter

	metrics *httpMetrics
	feeds   *crawlFeeds
	// streamsDone is closed by EndStreams: event streams return.
	streamsDone chan struct{}
	endStreams  sync.Once
}

// New builds the API server and registers every route. It panics if
// deps.Metrics already holds the API's metrics (a wiring bug).
func New(cfg Config, deps Deps) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Metrics == nil {
		deps.Metrics = prometheus.NewRegistry()
	}
	metrics, err := newHTTPMetrics(deps.Metrics)
	if err != nil {
		panic(fmt.Sprintf("api: %v", err))
	}
	s := &Server{
		cfg:         cfg,
		store:       deps.Store,
		launcher:    deps.Launcher,
		objects:     deps.Storage,
		secrets:     deps.Secrets,
		clock:       deps.Clock,
		ready:       deps.Ready,
		log:         cfg.Logger,
		mail:        deps.Mailer,
		webhooks:    deps.Webhooks,
		redis:       newLiveCrawls(cfg.CrawlerNamespace, cfg.ClusterDomain, deps.RedisDialer, deps.RedisHook),
		browsers:    deps.Browsers,
		browserPods: newBrowserPods(cfg.CrawlerNamespace, cfg.ClusterDomain, deps.BrowserDialer),
		metrics:     metrics,
		streamsDone: make(chan struct{}),

		passwords:       newPasswordHasher(cfg.PasswordHashConcurrency, cfg.PasswordHashCost),
		liveStatsBudget: liveStatsTimeout,
		verifyBudget:    verifyBudget,
		logins: &loginLimiter{store: deps.Store, clock: deps.Clock, window: cfg.LoginFailureWindow,
			perAccount: int64(cfg.LoginFailuresPerAccount), perAddress: int64(cfg.LoginFailuresPerAddress),
			maxPause: cfg.LoginAccountMaxDelay},
	}
	if s.mail == nil {
		s.mail = logMailer{log: cfg.Logger}
	}
	s.feeds = newCrawlFeeds(deps.Store, s.redis, cfg.EventsPollInterval, cfg.Logger, metrics)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = clientAddress(cfg.TrustedProxies)
	e.HTTPErrorHandler = s.handleError
	e.JSONSerializer = sizedJSON{}
	// Every route answers with or without a trailing slash, by rewriting
	// the path before routing (no redirect: clients POST to both forms).
	e.Pre(middleware.RemoveTrailingSlash())
	routes := s.routes()
	streaming := map[string]bool{}
	for _, r := range routes {
		streaming[r.path] = r.streaming()
	}
	e.Use(s.countRequests(streaming), s.logRequests, s.recoverPanics, refuseInvalidUTF8)
	s.echo = e
	s.scheduler = newScheduler(s, cfg.ScheduleRescan)
	s.orgDeleter = newOrgDeleter(s, deps.OrgObjects, cfg.ScheduleRescan)
	for _, r := range routes {
		e.Add(r.method, r.path, r.handler, s.middleware(r)...)
	}
	return s
}

// EndStreams ends every event stream (and refuses none: a client that
// reconnects is served until the server closes). main calls it when
// shutting down, as streams never go idle by themselves.
func (s *Server) EndStreams() { s.endStreams.Do(func() { close(s.streamsDone) }) }

// Handler is the http.Handler serving the API, /healthz and /readyz.
func (s *Server) Handler() http.Handler { return s.echo }

// now is the current time at the second precision the API stores and
// shows (upstream strips microseconds).
func (s *Server) now() time.Time { return s.clock.Now().UTC().Truncate(time.Second) }

// notifyWorkflowsChanged tells this process's scheduler that schedules
// may differ (other replicas' schedulers notice on their next rescan).
func (s *Server) notifyWorkflowsChanged() { s.scheduler.Reload() }

func (s *Server) healthz(c echo.Context) error { return c.JSON(http.StatusOK, struct{}{}) }

// readyz answers 503 while the process cannot serve. Why is logged, not
// shown: it names internal hosts and errors, and /readyz is public.
func (s *Server) readyz(c echo.Context) error {
	if s.ready != nil {
		if err := s.ready(c.Request().Context()); err != nil {
			s.log.Warn("not ready", "err", err)
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"detail": detailServiceUnavailable})
		}
	}
	return c.JSON(http.StatusOK, struct{}{})
}

// logRequests logs one line per request (probes only at debug level);
// 5xx causes are logged by handleError.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // writes the response, so the status below is final
		}
		req := c.Request()
		level := slog.LevelInfo
		if c.Path() == "/healthz" || c.Path() == "/readyz" {
			level = slog.LevelDebug // probes would drown the log
		}
		s.log.LogAttrs(req.Context(), level, "http request",
			slog.String("method", req.Method),
			slog.String("path", req.URL.Path),
			slog.Int("status", c.Response().Status),
			slog.Duration("duration", time.Since(start)))
		return nil
	}
}

// recoverPanics turns a handler panic into a 500 and keeps the server up.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("panic serving %s: %v\n%s", c.Path(), r, debug.Stack())
			}
		}()
		return next(c)
	}
}
