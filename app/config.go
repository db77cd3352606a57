package app

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// setting is one configuration key: its default and what it means. The
// list below is the single source of the defaults, the command-line flags
// and docs/configuration.md (a test keeps the document in step).
type setting struct {
	key  string
	def  any
	help string
}

var settings = []setting{
	{"log.level", "info", "log level: debug, info, warn or error"},
	{"log.format", "text", "log format: text or json"},

	{"api.enabled", true, "serve the REST API (all replicas)"},
	{"api.listen", ":8000", "address of the REST API, /healthz and /readyz"},
	{"api.jwt_secret", "", "HS256 key for login tokens; empty = random per process (tokens die with it)"},
	{"api.jwt_lifetime_minutes", 1440, "lifetime of login tokens"},
	{"api.registration_enabled", false, "let people register without an invite (they join the default org as owners, as upstream); reported by /api/settings"},
	{"api.invite_lifetime", 7 * 24 * time.Hour, "how long an org invite can be accepted"},
	{"api.app_origin", "", "scheme://host that links in e-mails and webhook download URLs start with when a request has no X-Forwarded-Proto; empty = the request's own"},
	{"api.default_behavior_time_seconds", 300, "reported by /api/settings"},
	{"api.default_page_load_time_seconds", 120, "reported by /api/settings"},
	{"api.default_crawl_filename_template", "@ts-@hostsuffix.wacz", "WACZ name template of workflows that set none"},
	{"api.schedule_rescan", 30 * time.Second, "how often the scheduler re-reads every workflow's schedule (catches changes made through other replicas), and how often the leader tries a failed org deletion again (four tries, then the job fails)"},
	{"api.events_poll_interval", 500 * time.Millisecond, "how often a crawl followed by event streams is read (its document where MongoDB has no change streams, its live progress while it runs); one read per crawl, however many streams"},
	{"api.events_keepalive", 15 * time.Second, "longest silence of an event stream before a keep-alive comment (keep it at most 15s: proxies drop idle streams)"},

	{"metrics.listen", "", "address of a listener serving only /metrics (Prometheus); empty = /metrics is served on api.listen"},
	{"api.login_failures_per_account", 5, "failed logins an account may have from one client address in one api.login_failure_window (then that address gets 429 too_many_login_attempts for it until the window ends), and from all addresses before its logins are paced (see api.login_account_max_delay)"},
	{"api.login_failures_per_address", 50, "failed logins one client address may have over all accounts in one api.login_failure_window; then it gets 429 too_many_login_attempts until the window ends (IPv6 clients count by /64)"},
	{"api.login_failure_window", 15 * time.Minute, "the fixed window the login failure limits count in (counters live in MongoDB, shared by every replica)"},
	{"api.login_account_max_delay", 30 * time.Second, "longest pause between login attempts at a paced account: one attempt at a time, the pause starting at 1s and doubling; addresses the account logged in from in the last 30 days are not paced, so guessing from elsewhere never locks the owner out (0 = no pacing)"},
	{"api.trusted_proxies", "", "comma-separated IP addresses or CIDR ranges of the reverse proxies (ingress) in front of trawler; only their X-Forwarded-For is believed for the client address the login limits count; empty = none, the connection's peer is the client (set it behind an ingress, or every user counts as the ingress)"},
	{"api.password_hash_concurrency", 0, "bcrypt hashes and checks that may run at once, so logins cannot take every CPU from other requests (0 = half the CPUs, at least one)"},
	{"api.read_header_timeout", 10 * time.Second, "time a client has to send a request's headers"},
	{"api.read_timeout", 60 * time.Second, "time a client has to send a whole request, body included (streaming routes such as uploads are exempt)"},
	{"api.write_timeout", 60 * time.Second, "time the server has to read a request and write its response (streaming routes such as log and download streams are exempt)"},
	{"api.idle_timeout", 120 * time.Second, "how long an idle keep-alive connection is kept open"},

	{"operator.enabled", true, "run the operator and the crawl scheduler (leader only)"},
	{"operator.workers", 48, "CrawlJobs reconciled in parallel for state changes, children and everything but progress alone (48: operator.kube_qps of 200 at the ~200 ms a request takes from a busy API server; fewer leave the budget unused while passes wait in the queue)"},
	{"operator.kube_qps", 200.0, "Kubernetes client queries per second (every request but the progress writes of operator.progress_qps)"},
	{"operator.kube_burst", 400, "Kubernetes client burst"},
	{"operator.progress_workers", 8, "CrawlJobs reconciled in parallel for progress alone (pages, size, pods), from a queue of their own"},
	{"operator.progress_qps", 500.0, "CrawlJob status writes per second for progress alone, one budget shared fairly by every crawl (500: a thousand busy crawls each written every operator.stats_interval of 2s), through a Kubernetes client of their own, so state changes and child creates never wait behind progress"},
	{"operator.resync", 30 * time.Second, "safety-net resync of every CrawlJob"},
	{"operator.redis_poll_interval", 250 * time.Millisecond, "how often a running crawl's Redis is read while it changes"},
	{"operator.redis_idle_poll_interval", 3 * time.Second, "the slowest pace a crawl's Redis is read once it has shown nothing new for a second (an idle crawl's change shows within 5 s: this wait, then a pass and a status write); pod events and user controls wake it at once"},
	{"operator.stats_interval", 2 * time.Second, "a crawl's progress (pages, size, pods) is written to its CrawlJob status and MongoDB at most this often; state changes are written at once"},
	{"operator.redis_timeout", 2 * time.Second, "timeout of each call to a crawl's Redis"},
	{"operator.metrics_interval", 30 * time.Second, "how often pod usage is read from metrics.k8s.io when the cluster serves it (0 = never)"},
	{"operator.log_failed_crawl_lines", 0, "log this many last lines of each pod of a failed crawl (0 = off)"},
	{"operator.crash_loop_restarts", 5, "fail a crawl whose crawler containers restarted this many times without a page done (0 = never); a crawler exiting with its fatal code 17 fails the crawl at once, unless the crawl was asked to stop"},
	{"operator.max_crawler_restarts", 20, "fail a crawl once its crawler containers have restarted this many times in all, pages done in between or not, stopping or not, so a crawler that crashes after every page or two cannot run for hours (0 = never)"},
	{"operator.redis_unreachable_grace", 10 * time.Second, "how long a running crawl's Redis may be unreachable before the crawl shows waiting_capacity"},
	{"operator.starting_timeout", 60 * time.Second, "how long a crawl may wait for a running crawler before it shows waiting_capacity (without its config it fails then)"},
	{"operator.exec_accounting_interval", 60 * time.Second, "how often a running crawl's crawler-pod seconds are counted and charged to its org's execution-time counters (upstream's 60 s); the org's storage and execution-time quotas are checked, and a crawl over one paused, at the same pace"},
	{"operator.exec_idle_accounting_interval", 10 * time.Minute, "how often the org of an idle running crawl (its Redis showed nothing new since its last count) is read again for a quota, when it had no storage or execution-time quota and was not read-only; such a crawl is not counted (nothing is written) until it changes, a crawler exits, it is canceled, a month ends or its org has a quota, and that count covers every second since the last; 0 counts every crawl at operator.exec_accounting_interval"},
	{"operator.redis_idle", 60 * time.Second, "stop a crawl's Redis pod after no crawler has run this long (it comes back with the next crawler)"},
	{"operator.finished_crawljob_ttl", 30 * time.Second, "keep a finished CrawlJob this long, unless its spec sets ttlSecondsAfterFinished"},
	{"operator.stuck_pod_timeout", 60 * time.Second, "force-delete a terminating pod this long after its grace period ended (a lost node never confirms)"},
	{"operator.store_timeout", 5 * time.Second, "timeout of each MongoDB call the operator makes"},

	{"leader_election.enabled", true, "hold a Lease so only one replica runs the operator"},
	{"leader_election.namespace", "default", "namespace of the Lease"},
	{"leader_election.name", "trawler-operator", "name of the Lease"},
	{"leader_election.lease_duration", 15 * time.Second, "how long a Lease is valid without renewal"},
	{"leader_election.renew_deadline", 10 * time.Second, "how long the leader tries to renew before giving up"},
	{"leader_election.retry_period", 2 * time.Second, "how often candidates try to acquire the Lease"},

	{"email.smtp_host", "", "SMTP server for invites, verification and password-reset e-mails; empty = only log them (links included)"},
	{"email.smtp_port", 587, "SMTP port"},
	{"email.sender", "", "SMTP login, and the From address unless email.reply_to is set"},
	{"email.password", "", "SMTP password; when set, trawler logs in as email.sender, by PLAIN or LOGIN only over STARTTLS (without TLS it uses only SCRAM, NTLM or CRAM-MD5, and sending fails if the server offers none of them)"},
	{"email.reply_to", "", "From and Reply-To address (default: email.sender)"},
	{"email.use_tls", false, "require STARTTLS (otherwise it is used when the server offers it)"},

	{"webhooks.max_attempts", 12, "attempts trawler makes of a webhook notification on its own, the first delivery included (1 = upstream's single try); with the default delays the last is about 24.5 h after the first; a manual retry is one attempt more"},
	{"webhooks.retry_delay", time.Minute, "wait after a failed first webhook delivery before the first retry; doubles after each further failure, up to webhooks.max_retry_delay"},
	{"webhooks.max_retry_delay", 8 * time.Hour, "longest wait between two webhook attempts"},
	{"webhooks.timeout", 15 * time.Second, "timeout of one webhook POST"},
	{"webhooks.poll_interval", 10 * time.Second, "how often the webhook outbox is read for deliveries due after a restart or from other replicas"},
	{"webhooks.workers", 8, "webhook deliveries in flight at once per process"},

	{"outbound.allowed_cidrs", "", "comma-separated CIDR ranges or addresses of internal hosts that webhook receivers and orgs' own storages may be at on purpose (docs/security.md); empty = none: URLs at loopback, link-local, private, CGNAT, multicast and unspecified addresses get 422, and connections to them are refused"},

	{"mongo.uri", "mongodb://localhost:27017", "MongoDB connection string (add ?maxPoolSize=1 for FerretDB)"},
	{"mongo.database", "browsertrixcloud", "database name"},
	{"mongo.timeout", 5 * time.Second, "bound of every MongoDB operation the API and the operator make, server selection included; an API call during an outage answers 503 within it"},

	{"kubernetes.kubeconfig", "", "kubeconfig path; empty = in-cluster config"},
	{"kubernetes.install_crds", false, "create or update the CRDs at startup (the Helm chart installs them otherwise)"},

	{"superuser.email", "admin@example.com", "superuser created or updated at startup"},
	{"superuser.password", "PASSW0RD!", "the superuser's password (reset at every start)"},
	{"default_org", "My Organization", "name of the default organisation created at startup"},

	{"storages", "", "the object storages, as a YAML list in the config file or JSON in TRAWLER_STORAGES: " +
		"name, access_key, secret_key, bucket_name, endpoint_url (without the bucket), and optionally " +
		"access_endpoint_url (the bucket as browsers reach it: an http(s) URL, or a path such as /data/ that trawler serves by passing requests on to the bucket; docs/storage.md), region, use_access_for_presign, cors_allowed_origins (origins whose pages may read the bucket: trawler sets its CORS rules to them at startup; empty = rules left alone); " +
		"one must be named default (the storage of orgs without their own); each needs its Secret " +
		"storage-<name> in the crawler namespace (the Helm chart writes both)"},
	{"replay.base_url", "https://replayweb.page/", "where the dashboard's replay viewer loads ReplayWeb.page's sw.js and ui.js from (served as /replay/sw.js and /replay/ui.js, so the viewer stays on trawler's origin), as upstream's RWP_BASE_URL"},
	{"storage.presign_duration_minutes", 60, "how long download links stay valid (links are re-signed when less than a tenth is left)"},

	{"crawler_namespace", "crawlers", "namespace of CrawlJobs, crawler and Redis pods"},
	{"cluster_domain", "cluster.local", "cluster DNS domain used in per-crawl Redis URLs"},
	{"max_crawl_scale", 3, "largest crawler scale; also the number of crawl-instance-<i> PriorityClasses"},
	{"paused_crawl_limit_minutes", 10080, "a paused crawl not resumed within this many minutes ends as stopped_pause_expired, keeping its files (upstream's PAUSED_CRAWL_LIMIT_MINUTES; 10080 is a week)"},
	{"seed_files.cleanup_schedule", "0 0 * * 0", "when the leader deletes seed files that no workflow or crawl references (cron, UTC; empty = never; one that does not parse stops the start), recording each run in jobs (upstream's CLEANUP_JOB_CRON_SCHEDULE)"},
	{"seed_files.cleanup_after_minutes", 1440, "how old an unreferenced seed file must be for the cleanup to delete it (upstream's CLEANUP_FILES_AFTER_MINUTES)"},
	{"max_pages_per_crawl", 0, "page limit of every crawl (0 = none); reported by /api/settings"},

	{"crawler.image", "webrecorder/browsertrix-crawler:latest", "crawler image: the image of the default channel when crawler.channels is empty"},
	{"crawler.image_pull_policy", "Always", "crawler image pull policy, of channels that set none"},
	{"crawler.channels", "", "the crawler channels workflows choose from (crawlerChannel), as a YAML list in the config file or JSON in TRAWLER_CRAWLER_CHANNELS: " +
		"id, image, imagePullPolicy (Always, IfNotPresent or Never; default crawler.image_pull_policy) and protocol, the crawler protocol the image speaks " +
		"(\"1.x\", today's browsertrix-crawler, or \"0.11\", the crawler of 2023; default \"0.11\"; see docs/compatibility.md, The crawler protocols); one must have id default, which also runs the profile browsers; " +
		"empty = one channel, default, of crawler.image and crawler.image_pull_policy, speaking 0.11 (the chart, compose and trawler dev configure default on 1.x and legacy on 0.11)"},
	{"crawler.cpu_base", "900m", "CPU of a crawler with one browser"},
	{"crawler.memory_base", "1024Mi", "memory of a crawler with one browser"},
	{"crawler.extra_cpu_per_browser", "300m", "CPU added per extra browser"},
	{"crawler.extra_memory_per_browser", "256Mi", "memory added per extra browser"},
	{"crawler.browser_instances", 2, "browsers (workers) per crawler pod"},
	{"crawler.cpu", "", "explicit crawler CPU; overrides the formula"},
	{"crawler.memory", "", "explicit crawler memory; overrides the formula"},
	{"crawler.storage", "22Gi", "PVC size of each crawler instance"},
	{"crawler.termination_grace_seconds", 600, "grace period of crawler pods"},
	{"crawler.liveness_port", 6065, "crawler health-check port (0 = no liveness probe)"},
	{"crawler.node_type", "", "preferred nodeType label value for crawler pods"},
	{"crawler.proxies", "", "the crawler proxies workflows and profiles choose from (proxyId), as a YAML list in the config file or JSON in TRAWLER_CRAWLER_PROXIES, " +
		"fixed for the process: id (lowercase letters, digits, '-'), url (ssh://, socks5:// or http://), label, and optionally description, country_code, " +
		"shared (open to every org that allows shared proxies), ssh_private_key and ssh_host_public_key (the crawler reads the keys from the Secret proxies; here they only tell that the proxy has them); empty = none"},
	{"crawler.proxies_file", "", "a JSON file holding the list of crawler.proxies instead, read again whenever it changes (the chart mounts it from the Secret ops-proxy-configs); a missing file means no proxies"},
	{"crawler.default_proxy", "", "id of the proxy of every crawl (and profile browser) that names none, whatever the org's proxy permissions; it must be in the list; empty = none"},
	{"crawler.proxy_match_hosts", false, "give every crawler the proxies' files and --proxyServerConfig /tmp/proxies/host-proxies.json (the chart sets it when proxies_match_hosts is set)"},
	{"crawler.socks_proxy_host", "", "SOCKS5 proxy for crawler and profile browsers (SOCKS_HOST); empty = none"},
	{"crawler.socks_proxy_port", 0, "port of the SOCKS5 proxy (SOCKS_PORT); 0 = 9050"},
	{"crawler.allowed_internal_cidrs", "", "comma-separated CIDR ranges or addresses of internal hosts that crawl seeds and profile-browser URLs may name on purpose (docs/security.md); empty = none: loopback, link-local, private, CGNAT, multicast and unspecified addresses get 422"},
	{"crawler.volume_storage_class", "", "storage class of crawler and Redis PVCs"},
	{"crawler.extra_args", "", "appended to the crawlers' CRAWL_ARGS (the chart's crawler_extra_args; trawler dev honours it, e.g. --sim.pageMs 500)"},

	{"redis.image", "redis", "per-crawl Redis image"},
	{"redis.image_pull_policy", "IfNotPresent", "per-crawl Redis image pull policy"},
	{"redis.cpu", "5m", "per-crawl Redis CPU request"},
	{"redis.memory", "48Mi", "per-crawl Redis memory"},
	{"redis.storage", "3Gi", "per-crawl Redis PVC size"},
	{"redis.node_type", "", "preferred nodeType label value for Redis pods"},
}

// BindConfigFlags registers --config and one flag per setting, and returns
// where --config will be stored.
func BindConfigFlags(fs *pflag.FlagSet) *string {
	file := fs.String("config", "", "YAML configuration file")
	for _, s := range settings {
		switch d := s.def.(type) {
		case string:
			fs.String(s.key, d, s.help)
		case bool:
			fs.Bool(s.key, d, s.help)
		case int:
			fs.Int(s.key, d, s.help)
		case float64:
			fs.Float64(s.key, d, s.help)
		case time.Duration:
			fs.Duration(s.key, d, s.help)
		default:
			panic(fmt.Sprintf("setting %s: unsupported default type %T", s.key, s.def))
		}
	}
	// Shorthands for the two roles, as in `trawler serve --operator=false`.
	fs.Bool("api", true, "alias of --api.enabled")
	fs.Bool("operator", true, "alias of --operator.enabled")
	return file
}

// LoadConfig merges, from lowest to highest precedence: defaults, the YAML
// file, TRAWLER_* environment variables (dots become underscores, e.g.
// TRAWLER_MONGO_URI) and flags set on the command line.
func LoadConfig(file string, fs *pflag.FlagSet) (*viper.Viper, error) {
	v := viper.New()
	for _, s := range settings {
		v.SetDefault(s.key, s.def)
	}
	v.SetEnvPrefix("TRAWLER")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config %s: %w", file, err)
		}
		if err := checkKnownKeys(v.AllKeys()); err != nil {
			return nil, fmt.Errorf("config %s: %w", file, err)
		}
	}
	var err error
	fs.Visit(func(f *pflag.Flag) {
		key := f.Name
		switch key {
		case "config":
			return
		case "api", "operator":
			key += ".enabled"
		}
		if e := v.BindPFlag(key, f); e != nil && err == nil {
			err = e
		}
	})
	if err != nil {
		return nil, fmt.Errorf("binding flags: %w", err)
	}
	return v, nil
}

// checkKnownKeys rejects keys that are not settings, so a typo in a config
// file is an error instead of a silently ignored value.
func checkKnownKeys(keys []string) error {
	known := make(map[string]bool, len(settings))
	for _, s := range settings {
		known[s.key] = true
	}
	var unknown []string
	for _, k := range keys {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown keys: %s", strings.Join(unknown, ", "))
	}
	return nil
}

// Keys lists every configuration key, in the settings table's order, for
// checks of what deployments set (the compose file, the Helm chart).
func Keys() []string {
	keys := make([]string, len(settings))
	for i, s := range settings {
		keys[i] = s.key
	}
	return keys
}
