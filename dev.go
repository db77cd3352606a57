package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

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
redis-server, a MongoDB-wire server and Mailpit), then trawler serve
against it; e-mails go to Mailpit.

Writes <dir>/env with TRAWLER_API_URL, KUBECONFIG, the Mongo and Redis URLs
and MAILPIT_URL (Mailpit's web UI, where invites and reset e-mails show).
Ctrl-C stops everything; no process is left behind.

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
	sandboxDir := filepath.Join(dir, "sandbox")
	// A fresh cluster every time: state from a previous run would refer to
	// pods whose programs no longer run.
	if err := os.RemoveAll(sandboxDir); err != nil {
		return fmt.Errorf("clearing %s: %w", sandboxDir, err)
	}
	if err := os.MkdirAll(sandboxDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", sandboxDir, err)
	}
	fmt.Fprintf(out, "starting the sandbox in %s ...\n", sandboxDir)
	env, err := sandbox.Start(ctx, sandbox.Options{
		Dir:                  sandboxDir,
		Nodes:                kubelet.Nodes{Count: nodes},
		Programs:             map[string]kubelet.Program{v.GetString("crawler.image"): crawlersim.Program(nil)},
		CRDs:                 k8s.CRDs(),
		Namespaces:           []string{v.GetString("crawler_namespace")},
		CrawlPriorityClasses: v.GetInt("max_crawl_scale"),
		ClusterDomain:        v.GetString("cluster_domain"),
		Logger:               logger.With("component", "sandbox"),
	})
	if err != nil {
		return fmt.Errorf("starting sandbox: %w", err)
	}
	defer env.Stop()
	// What the Helm chart creates in a real cluster. The simulator only
	// notifies uploads, so the storage endpoint need not exist; crawls-done
	// filenames still carry it.
	err = k8s.EnsureCrawlerSupport(ctx, env.Client, v.GetString("crawler_namespace"), k8s.CrawlerSupport{
		CrawlArgs: k8s.CrawlArgs(k8s.CrawlArgsOptions{
			Workers:         v.GetInt("crawler.browser_instances"),
			MaxPageLimit:    v.GetInt("max_pages_per_crawl"),
			HealthCheckPort: v.GetInt("crawler.liveness_port"),
		}),
		StorageName: k8s.DefaultStorageName,
		Storage: map[string]string{
			"STORE_ENDPOINT_URL":        "http://local-storage.invalid/trawler-data/",
			"STORE_ACCESS_ENDPOINT_URL": "/data/",
			"STORE_ACCESS_KEY":          "dev",
			"STORE_SECRET_KEY":          "dev",
		},
	})
	if err != nil {
		return err
	}

	v.Set("mongo.uri", env.MongoURI())
	// E-mails go to the sandbox's Mailpit; its web UI shows them.
	v.Set("email.smtp_host", "127.0.0.1")
	v.Set("email.smtp_port", env.Mailpit.SMTPPort)
	v.Set("kubernetes.kubeconfig", env.Kubeconfig())
	listening := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, v, serveDeps{redisDialer: env.Dial, logs: env.Kubelet,
			listening: listening, logger: logger})
	}()
	select {
	case addr := <-listening:
		apiURL := "http://" + addr
		envFile := filepath.Join(dir, "env")
		if err := writeDevEnv(envFile, map[string]string{
			"TRAWLER_API_URL":   apiURL,
			"KUBECONFIG":        env.Kubeconfig(),
			"TRAWLER_MONGO_URI": env.MongoURI(),
			"MONGO_URI":         env.MongoURI(),
			"TRAWLER_REDIS_URL": env.RedisURL(0),
			"REDIS_URL":         env.RedisURL(0),
			"TRAWLER_USERNAME":  v.GetString("superuser.email"),
			"TRAWLER_PASSWORD":  v.GetString("superuser.password"),
			"MAILPIT_URL":       env.MailpitURL(),
		}); err != nil {
			return err
		}
		fmt.Fprintf(out, "trawler is up (sandbox started in %s)\n  dashboard and API: %s  (log in as %s / %s)\n  e-mails: %s\n  env: source %s\n  Ctrl-C stops everything\n",
			env.StartDuration.Round(100*time.Millisecond), apiURL, v.GetString("superuser.email"),
			v.GetString("superuser.password"), env.MailpitURL(), envFile)
	case err := <-served:
		return err
	}
	err = <-served
	fmt.Fprintln(out, "stopping the sandbox ...")
	return err
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
