package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// devBucket is the sandbox S3 server's bucket for crawl files.
const devBucket = "trawler-data"

// devDefaults replace the production defaults under `trawler dev`: a fixed
// local port, crawler requests small enough that several crawls fit on the
// simulated nodes, and a short Lease so a restart takes over at once.
var devDefaults = map[string]any{
	"api.listen":                     "127.0.0.1:8000",
	"crawler.cpu":                    "500m",
	"crawler.memory":                 "512Mi",
	"leader_election.lease_duration": 4 * time.Second,
	"leader_election.renew_deadline": 3 * time.Second,
	"leader_election.retry_period":   time.Second,
}

func newDevCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run trawler against a local sandbox cluster (what make dev runs)",
		Long: `Start a sandbox on loopback (kube-apiserver, etcd, kube-scheduler,
kube-controller-manager, a simulated kubelet running the crawler simulator,
redis-server, a MongoDB-wire server, Mailpit and an S3 server), then trawler
serve against it; e-mails go to Mailpit, crawl files to the S3 server.

Writes <dir>/env with TRAWLER_API_URL, KUBECONFIG, the Mongo and Redis URLs,
MAILPIT_URL (Mailpit's web UI, where invites and reset e-mails show) and the
S3 server's endpoint, bucket and keys. Ctrl-C stops everything; no process
is left behind.

Defaults differ from serve: ` + fmt.Sprint(devDefaults),
		Args: cobra.NoArgs,
	}
	dir := cmd.Flags().String("dir", ".dev", "folder for the sandbox's files and the env file")
	nodes := cmd.Flags().Int("nodes", 2, "simulated nodes (8 CPUs, 32Gi each)")
	cfgFile := bindConfigFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := loadConfig(*cfgFile, cmd.Flags())
		if err != nil {
			return err
		}
		for key, value := range devDefaults {
			v.SetDefault(key, value) // file, env and flags still win
		}
		ctx, stop := signalContext(cmd.Context())
		defer stop()
		return runDev(ctx, v, *dir, *nodes, cmd.OutOrStdout())
	}
	return cmd
}

// runDev starts the sandbox, points serve at it, writes the env file and
// runs until ctx ends; then everything stops.
func runDev(ctx context.Context, v *viper.Viper, dir string, nodes int, out io.Writer) error {
	logger, err := newLogger(v, os.Stderr)
	if err != nil {
		return err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", dir, err)
	}
	fmt.Fprintf(out, "starting the sandbox in %s ...\n", filepath.Join(dir, "sandbox"))
	stack, err := startDevStack(ctx, v, dir, sandbox.Options{Nodes: kubelet.Nodes{Count: nodes}}, logger)
	if err != nil {
		return err
	}
	defer stack.env.Stop()
	envFile := filepath.Join(dir, "env")
	if err := writeDevEnv(envFile, stack.envVars(v)); err != nil {
		return err
	}
	fmt.Fprintf(out, "trawler is up (sandbox started in %s)\n  dashboard and API: %s  (log in as %s / %s)\n  e-mails: %s\n  env: source %s\n  Ctrl-C stops everything\n",
		stack.env.StartDuration.Round(100*time.Millisecond), stack.apiURL, v.GetString("superuser.email"),
		v.GetString("superuser.password"), stack.env.MailpitURL(), envFile)
	err = <-stack.served
	fmt.Fprintln(out, "stopping the sandbox ...")
	return err
}

// devStack is a running development stack: the sandbox and trawler serve
// against it.
type devStack struct {
	env    *sandbox.Env
	apiURL string
	// served reports serve's end, once ctx is done.
	served <-chan error
}

// startDevStack starts a fresh sandbox in dir/sandbox (with an S3 server whose
// bucket is the default storage unless the configuration names storages),
// runs serve against it and returns once the API listens. opts may set
// the nodes, the restart backoff and the crawler program (default: the
// crawler simulator under the configured image). The caller stops
// stack.env after served reported; on error everything is stopped already.
func startDevStack(ctx context.Context, v *viper.Viper, dir string, opts sandbox.Options, logger *slog.Logger) (*devStack, error) {
	sandboxDir := filepath.Join(dir, "sandbox")
	// A fresh cluster every time: state from a previous run would refer to
	// pods whose programs no longer run.
	if err := os.RemoveAll(sandboxDir); err != nil {
		return nil, fmt.Errorf("clearing %s: %w", sandboxDir, err)
	}
	if err := os.MkdirAll(sandboxDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", sandboxDir, err)
	}
	opts.Dir = sandboxDir
	if opts.Programs == nil {
		opts.Programs = map[string]kubelet.Program{v.GetString("crawler.image"): crawlersim.Program(nil)}
	}
	opts.CRDs = k8s.CRDs()
	opts.Namespaces = []string{v.GetString("crawler_namespace")}
	opts.CrawlPriorityClasses = v.GetInt("max_crawl_scale")
	opts.ClusterDomain = v.GetString("cluster_domain")
	opts.ObjectStorage = true
	opts.Logger = logger.With("component", "sandbox")
	env, err := sandbox.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting sandbox: %w", err)
	}
	stack, err := serveOnSandbox(ctx, v, env, logger)
	if err != nil {
		env.Stop()
		return nil, err
	}
	return stack, nil
}

// serveOnSandbox creates what the Helm chart would (the default bucket,
// the crawlers' shared config and storage secret) and starts serve.
func serveOnSandbox(ctx context.Context, v *viper.Viper, env *sandbox.Env, logger *slog.Logger) (*devStack, error) {
	bucket, err := env.CreateBucket(ctx, k8s.DefaultStorageName, devBucket)
	if err != nil {
		return nil, err
	}
	storages, err := storagesConfig(v)
	if err != nil {
		return nil, err
	}
	if len(storages) == 0 {
		storages = []s3.Config{bucket}
		raw, _ := json.Marshal(storages)
		v.Set("storages", string(raw))
	}
	err = k8s.EnsureCrawlerSupport(ctx, env.Client, v.GetString("crawler_namespace"), k8s.CrawlerSupport{
		CrawlArgs: k8s.CrawlArgs(k8s.CrawlArgsOptions{
			Workers:         v.GetInt("crawler.browser_instances"),
			MaxPageLimit:    v.GetInt("max_pages_per_crawl"),
			HealthCheckPort: v.GetInt("crawler.liveness_port"),
			Extra:           v.GetString("crawler.extra_args"),
		}),
		StorageName: k8s.DefaultStorageName,
		Storage:     defaultStorage(storages).CrawlerEnv(),
	})
	if err != nil {
		return nil, err
	}
	v.Set("mongo.uri", env.MongoURI())
	// E-mails go to the sandbox's Mailpit; its web UI shows them.
	v.Set("email.smtp_host", "127.0.0.1")
	v.Set("email.smtp_port", env.Mailpit.SMTPPort)
	v.Set("kubernetes.kubeconfig", env.Kubeconfig())
	listening := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, v, serveDeps{clusterDialer: env.Dial, logs: env.Kubelet,
			listening: listening, logger: logger, storageTransport: env.HTTPTransport()})
	}()
	select {
	case addr := <-listening:
		return &devStack{env: env, apiURL: "http://" + addr, served: served}, nil
	case err := <-served:
		return nil, err
	}
}

// defaultStorage is the storage named k8s.DefaultStorageName (the
// registry refuses a list without it), else the first.
func defaultStorage(storages []s3.Config) s3.Config {
	for _, s := range storages {
		if s.Name == k8s.DefaultStorageName {
			return s
		}
	}
	return storages[0]
}

// envVars are what `make dev` writes to .dev/env.
func (d *devStack) envVars(v *viper.Viper) map[string]string {
	return map[string]string{
		"TRAWLER_API_URL":   d.apiURL,
		"KUBECONFIG":        d.env.Kubeconfig(),
		"TRAWLER_MONGO_URI": d.env.MongoURI(),
		"MONGO_URI":         d.env.MongoURI(),
		"TRAWLER_REDIS_URL": d.env.RedisURL(0),
		"REDIS_URL":         d.env.RedisURL(0),
		"TRAWLER_USERNAME":  v.GetString("superuser.email"),
		"TRAWLER_PASSWORD":  v.GetString("superuser.password"),
		"MAILPIT_URL":       d.env.MailpitURL(),
		// The S3 server as the host reaches it (the download links point
		// there too), e.g. for the aws CLI or curl --aws-sigv4.
		"S3_ENDPOINT_URL":       d.env.S3.URL(),
		"S3_BUCKET":             devBucket,
		"AWS_ACCESS_KEY_ID":     d.env.S3.AccessKey,
		"AWS_SECRET_ACCESS_KEY": d.env.S3.SecretKey,
	}
}

func writeDevEnv(path string, vars map[string]string) error {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		b = fmt.Appendf(b, "export %s=%q\n", k, vars[k])
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
