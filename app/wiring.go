package app

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/robfig/cron/v3"
	"github.com/spf13/viper"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/trawlerhq/trawler/api"
	"github.com/trawlerhq/trawler/email"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/webhook"
)

// maxEventsKeepAlive bounds api.events_keepalive.
const maxEventsKeepAlive = 15 * time.Second

// apiConfig maps settings to the API's configuration.
func apiConfig(v *viper.Viper, logger *slog.Logger) (api.Config, error) {
	// A stream silent for longer than this is dropped by common proxies.
	if d := v.GetDuration("api.events_keepalive"); d <= 0 || d > maxEventsKeepAlive {
		return api.Config{}, fmt.Errorf("api.events_keepalive is %v: it must be above 0 and at most %v", d, maxEventsKeepAlive)
	}
	if d := v.GetDuration("api.events_poll_interval"); d <= 0 {
		return api.Config{}, fmt.Errorf("api.events_poll_interval is %v: it must be above 0", d)
	}
	trusted, err := api.ParseTrustedProxies(v.GetString("api.trusted_proxies"))
	if err != nil {
		return api.Config{}, fmt.Errorf("api.trusted_proxies: %w", err)
	}
	allowed, err := netpolicy.ParseAllowList(v.GetString("crawler.allowed_internal_cidrs"))
	if err != nil {
		return api.Config{}, fmt.Errorf("crawler.allowed_internal_cidrs: %w", err)
	}
	outbound, err := netpolicy.ParseAllowList(v.GetString("outbound.allowed_cidrs"))
	if err != nil {
		return api.Config{}, fmt.Errorf("outbound.allowed_cidrs: %w", err)
	}
	secret := []byte(v.GetString("api.jwt_secret"))
	if len(secret) == 0 {
		// Tokens then die with the process and other replicas reject them;
		// fine for one replica and for `trawler dev`, not for a fleet.
		logger.Warn("api.jwt_secret is empty: using a random key for this process")
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return api.Config{}, fmt.Errorf("generating jwt secret: %w", err)
		}
	}
	var cleanup cron.Schedule
	if spec := v.GetString("seed_files.cleanup_schedule"); spec != "" {
		if cleanup, err = cron.ParseStandard(spec); err != nil {
			return api.Config{}, fmt.Errorf("seed_files.cleanup_schedule %q: %w", spec, err)
		}
	}
	channels, err := CrawlerChannelsConfig(v)
	if err != nil {
		return api.Config{}, err
	}
	proxies, err := CrawlerProxiesConfig(v)
	if err != nil {
		return api.Config{}, err
	}
	return api.Config{
		CrawlerChannels:            channels,
		CrawlerProxies:             proxies,
		JWTSecret:                  secret,
		TokenLifetime:              time.Duration(v.GetInt("api.jwt_lifetime_minutes")) * time.Minute,
		MaxCrawlScale:              v.GetInt("max_crawl_scale"),
		PausedCrawlLimit:           time.Duration(v.GetInt("paused_crawl_limit_minutes")) * time.Minute,
		MaxPagesPerCrawl:           v.GetInt("max_pages_per_crawl"),
		DefaultFilenameTemplate:    v.GetString("api.default_crawl_filename_template"),
		CrawlerNamespace:           v.GetString("crawler_namespace"),
		ClusterDomain:              v.GetString("cluster_domain"),
		SuperuserEmail:             v.GetString("superuser.email"),
		SuperuserPassword:          v.GetString("superuser.password"),
		DefaultOrgName:             v.GetString("default_org"),
		RegistrationEnabled:        v.GetBool("api.registration_enabled"),
		InviteLifetime:             v.GetDuration("api.invite_lifetime"),
		AppOrigin:                  v.GetString("api.app_origin"),
		DefaultBehaviorTimeSeconds: v.GetInt("api.default_behavior_time_seconds"),
		DefaultPageLoadTimeSeconds: v.GetInt("api.default_page_load_time_seconds"),
		ScheduleRescan:             v.GetDuration("api.schedule_rescan"),
		SeedFileCleanupSchedule:    cleanup,
		SeedFileCleanupAfter:       time.Duration(v.GetInt("seed_files.cleanup_after_minutes")) * time.Minute,
		PresignDuration:            time.Duration(v.GetInt("storage.presign_duration_minutes")) * time.Minute,
		EventsPollInterval:         v.GetDuration("api.events_poll_interval"),
		EventsKeepAlive:            v.GetDuration("api.events_keepalive"),
		LoginFailuresPerAccount:    v.GetInt("api.login_failures_per_account"),
		LoginFailuresPerAddress:    v.GetInt("api.login_failures_per_address"),
		LoginFailureWindow:         v.GetDuration("api.login_failure_window"),
		LoginAccountMaxDelay:       v.GetDuration("api.login_account_max_delay"),
		TrustedProxies:             trusted,
		AllowedInternal:            allowed,
		AllowedOutbound:            outbound,
		PasswordHashConcurrency:    v.GetInt("api.password_hash_concurrency"),
		Version:                    Version,
		Logger:                     logger,
	}, nil
}

// emailConfig maps settings to the e-mail sender's configuration.
func emailConfig(v *viper.Viper) email.Config {
	return email.Config{
		Host:     v.GetString("email.smtp_host"),
		Port:     v.GetInt("email.smtp_port"),
		Sender:   v.GetString("email.sender"),
		Password: v.GetString("email.password"),
		ReplyTo:  v.GetString("email.reply_to"),
		UseTLS:   v.GetBool("email.use_tls"),
	}
}

// WebhookConfig maps settings to the webhook deliverer's configuration.
func WebhookConfig(v *viper.Viper) webhook.Config {
	return webhook.Config{
		MaxAttempts:   v.GetInt("webhooks.max_attempts"),
		RetryDelay:    v.GetDuration("webhooks.retry_delay"),
		MaxRetryDelay: v.GetDuration("webhooks.max_retry_delay"),
		Timeout:       v.GetDuration("webhooks.timeout"),
		PollInterval:  v.GetDuration("webhooks.poll_interval"),
		Workers:       v.GetInt("webhooks.workers"),
	}
}

// operatorConfig maps settings to the operator's configuration. The
// operator's client rate limits (operator.kube_qps, operator.kube_burst)
// are set on the REST config by kubeRESTConfig, its progress client's by
// progressRESTConfig.
func operatorConfig(v *viper.Viper) (operator.Config, error) {
	var c operator.Config
	c.Namespace = v.GetString("crawler_namespace")
	c.ClusterDomain = v.GetString("cluster_domain")
	c.MaxCrawlScale = v.GetInt("max_crawl_scale")
	c.Workers = v.GetInt("operator.workers")
	c.ProgressWorkers = v.GetInt("operator.progress_workers")
	c.ProgressQPS = v.GetFloat64("operator.progress_qps")
	c.Resync = v.GetDuration("operator.resync")
	c.RedisPollInterval = v.GetDuration("operator.redis_poll_interval")
	c.RedisIdlePollInterval = v.GetDuration("operator.redis_idle_poll_interval")
	c.StatsInterval = v.GetDuration("operator.stats_interval")
	c.RedisTimeout = v.GetDuration("operator.redis_timeout")
	c.LogFailedCrawlLines = v.GetInt("operator.log_failed_crawl_lines")
	c.CrashLoopRestarts = v.GetInt("operator.crash_loop_restarts")
	c.MaxCrawlerRestarts = v.GetInt("operator.max_crawler_restarts")
	c.MetricsInterval = v.GetDuration("operator.metrics_interval")
	c.RedisUnreachableGrace = v.GetDuration("operator.redis_unreachable_grace")
	c.StartingTimeout = v.GetDuration("operator.starting_timeout")
	c.RedisIdle = v.GetDuration("operator.redis_idle")
	c.PausedCrawlLimit = time.Duration(v.GetInt("paused_crawl_limit_minutes")) * time.Minute
	c.ExecAccountingInterval = v.GetDuration("operator.exec_accounting_interval")
	c.ExecIdleAccountingInterval = v.GetDuration("operator.exec_idle_accounting_interval")
	c.DefaultTTL = v.GetDuration("operator.finished_crawljob_ttl")
	c.StuckPodTimeout = v.GetDuration("operator.stuck_pod_timeout")
	c.StoreTimeout = v.GetDuration("operator.store_timeout")

	channels, err := CrawlerChannelsConfig(v)
	if err != nil {
		return c, err
	}
	c.CrawlerChannels = channels
	if c.CrawlerProxies, err = CrawlerProxiesConfig(v); err != nil {
		return c, err
	}
	c.ProxyMatchHosts = v.GetBool("crawler.proxy_match_hosts")
	// Profile browsers run the default channel's image.
	def, _ := channels.Lookup(k8s.DefaultChannel)
	c.CrawlerImage = def.Image
	c.CrawlerPullPolicy = v.GetString("crawler.image_pull_policy")
	c.CrawlerBrowsers = v.GetInt("crawler.browser_instances")
	c.TerminationGraceSeconds = int64(v.GetInt("crawler.termination_grace_seconds"))
	c.CrawlerLivenessPort = v.GetInt("crawler.liveness_port")
	c.CrawlerNodeType = v.GetString("crawler.node_type")
	c.SocksProxyHost = v.GetString("crawler.socks_proxy_host")
	c.SocksProxyPort = v.GetInt("crawler.socks_proxy_port")
	c.StorageClass = v.GetString("crawler.volume_storage_class")
	c.RedisImage = v.GetString("redis.image")
	c.RedisPullPolicy = v.GetString("redis.image_pull_policy")
	c.RedisNodeType = v.GetString("redis.node_type")

	quantities := []struct {
		key string
		dst *resource.Quantity
	}{
		{"crawler.cpu_base", &c.CrawlerCPUBase},
		{"crawler.memory_base", &c.CrawlerMemoryBase},
		{"crawler.extra_cpu_per_browser", &c.CrawlerExtraCPU},
		{"crawler.extra_memory_per_browser", &c.CrawlerExtraMemory},
		{"crawler.storage", &c.CrawlerStorage},
		{"redis.cpu", &c.RedisCPU},
		{"redis.memory", &c.RedisMemory},
		{"redis.storage", &c.RedisStorage},
	}
	for _, q := range quantities {
		parsed, err := resource.ParseQuantity(v.GetString(q.key))
		if err != nil {
			return c, fmt.Errorf("%s: %w", q.key, err)
		}
		*q.dst = parsed
	}
	for _, o := range []struct {
		key string
		dst **resource.Quantity
	}{{"crawler.cpu", &c.CrawlerCPU}, {"crawler.memory", &c.CrawlerMemory}} {
		if s := v.GetString(o.key); s != "" {
			parsed, err := resource.ParseQuantity(s)
			if err != nil {
				return c, fmt.Errorf("%s: %w", o.key, err)
			}
			*o.dst = &parsed
		}
	}
	return c, nil
}

// CrawlerChannelsConfig reads crawler.channels: a list in a config file,
// or JSON from the environment or a flag. None configured is the one
// channel default, of crawler.image and crawler.image_pull_policy, so a
// deployment from before channels runs as it did.
func CrawlerChannelsConfig(v *viper.Viper) (k8s.CrawlerChannels, error) {
	var out k8s.CrawlerChannels
	switch raw := v.Get("crawler.channels").(type) {
	case nil:
	case string:
		if strings.TrimSpace(raw) != "" {
			dec := json.NewDecoder(strings.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&out); err != nil {
				return nil, fmt.Errorf("crawler.channels: not a JSON list of channels: %w", err)
			}
		}
	default:
		if err := v.UnmarshalKey("crawler.channels", &out, func(dc *mapstructure.DecoderConfig) {
			dc.ErrorUnused = true
		}); err != nil {
			return nil, fmt.Errorf("crawler.channels: %w", err)
		}
	}
	if len(out) == 0 {
		out = k8s.CrawlerChannels{{ID: k8s.DefaultChannel, Image: v.GetString("crawler.image"),
			ImagePullPolicy: v.GetString("crawler.image_pull_policy")}}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("crawler.channels: %w", err)
	}
	return out.WithDefaults(), nil
}

// StoragesConfig reads the storages setting: a list in a config file, or
// JSON from the environment or a flag. None configured is an empty list.
func StoragesConfig(v *viper.Viper) ([]s3.Config, error) {
	var out []s3.Config
	switch raw := v.Get("storages").(type) {
	case nil:
	case string:
		if strings.TrimSpace(raw) == "" {
			return nil, nil
		}
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			return nil, fmt.Errorf("storages: not a JSON list of storages: %w", err)
		}
	default:
		if err := v.UnmarshalKey("storages", &out); err != nil {
			return nil, fmt.Errorf("storages: %w", err)
		}
	}
	return out, nil
}

// objectStorage builds the configured storages, with their CORS rules
// set and the proxies of their access paths, or nil (with a warning)
// when there are none: download links, file deletion and crawl logs are
// then off.
func objectStorage(ctx context.Context, v *viper.Viper, transport http.RoundTripper, allowed netpolicy.AllowList, logger *slog.Logger) (*s3.Registry, map[string]http.Handler, error) {
	storages, err := StoragesConfig(v)
	if err != nil {
		return nil, nil, err
	}
	if len(storages) == 0 {
		logger.Warn("no storages configured: crawls upload nothing, and download links, file deletion and crawl logs are off")
		return nil, nil, nil
	}
	objects, err := s3.NewRegistry(storages, k8s.DefaultStorageName, s3.Options{Transport: transport, CustomAllowed: allowed})
	if err != nil {
		return nil, nil, err
	}
	access, err := storageAccess(storages, objects, transport)
	if err != nil {
		return nil, nil, err
	}
	applyStorageCORS(ctx, storages, objects, logger)
	return objects, access, nil
}
