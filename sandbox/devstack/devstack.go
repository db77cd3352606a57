// Package devstack is the development stack `trawler dev` runs and the
// end-to-end tests start in their own process: a sandbox on loopback (a
// Kubernetes control plane, simulated nodes running the crawler
// simulator, Redis, a MongoDB-wire server, Mailpit and an S3 server) and
// trawler serve against it, configured as the Helm chart would configure
// a cluster.
package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/viper"

	"github.com/trawlerhq/trawler/app"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// Bucket is the sandbox S3 server's bucket for crawl files.
const Bucket = "trawler-data"

// accessPath is where trawler serves the bucket's files on its own origin.
const accessPath = "/data/"

// Defaults replace the production defaults under `trawler dev`: a fixed
// local port, the chart's crawler channels (default speaks 1.x, legacy
// 0.11), crawler requests small enough that several crawls fit on the
// simulated nodes, and a short Lease so a restart takes over at once.
var Defaults = map[string]any{
	"api.listen":                     "127.0.0.1:8000",
	"crawler.channels":               Channels(k8s.ProtocolV1),
	"crawler.cpu":                    "500m",
	"crawler.memory":                 "512Mi",
	"leader_election.lease_duration": 4 * time.Second,
	"leader_election.renew_deadline": 3 * time.Second,
	"leader_election.retry_period":   time.Second,
}

// Channels are the crawler channels of `trawler dev` (as JSON), as the
// chart and compose configure them, with the default channel speaking
// protocol: 1.x under `trawler dev`, the crawler people deploy today
// (tests choose; see sandbox.TestCrawlerProtocol). "legacy" keeps 0.11.
func Channels(protocol string) string {
	return `[{"id": "default", "image": "webrecorder/browsertrix-crawler:latest", "imagePullPolicy": "Always", "protocol": "` + protocol + `"},
 {"id": "legacy", "image": "webrecorder/browsertrix-crawler:0.11.2", "imagePullPolicy": "IfNotPresent", "protocol": "0.11"}]`
}

// Stack is a running development stack: the sandbox and trawler serve
// against it.
type Stack struct {
	Env    *sandbox.Env
	APIURL string
	// Served reports serve's end, once the context Start got is done.
	Served <-chan error
}

// Start starts a fresh sandbox in dir/sandbox (with an S3 server whose
// bucket is the default storage unless the configuration names storages),
// runs serve against it and returns once the API listens. opts may set
// the nodes, the restart backoff and the crawler program (default: the
// crawler simulator under every crawler channel's image). The caller stops
// stack.Env after Served reported; on error everything is stopped already.
func Start(ctx context.Context, v *viper.Viper, dir string, opts sandbox.Options, logger *slog.Logger) (*Stack, error) {
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
		channels, err := app.CrawlerChannelsConfig(v)
		if err != nil {
			return nil, err
		}
		sim := crawlersim.Program(nil)
		opts.Programs = map[string]kubelet.Program{}
		for _, ch := range channels {
			opts.Programs[ch.Image] = sim
		}
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
	stack, err := ServeOn(ctx, v, env, logger)
	if err != nil {
		env.Stop()
		return nil, err
	}
	return stack, nil
}

// ServeOn creates what the Helm chart would (the default bucket, the
// crawlers' shared config and storage secret) and starts serve on env,
// until ctx ends. Start calls it; a test that stops serve (its ctx) calls
// it again on the same env to restart trawler alone: what exists already
// is kept.
func ServeOn(ctx context.Context, v *viper.Viper, env *sandbox.Env, logger *slog.Logger) (*Stack, error) {
	bucket, err := env.CreateBucket(ctx, k8s.DefaultStorageName, Bucket)
	if err != nil {
		return nil, err
	}
	storages, err := app.StoragesConfig(v)
	if err != nil {
		return nil, err
	}
	if len(storages) == 0 {
		// Browsers reach the files through trawler under /data/, as with
		// the Helm chart's bundled S3: same-origin links need no CORS.
		bucket.AccessEndpointURL = accessPath
		signInternal := false
		bucket.UseAccessForPresign = &signInternal
		storages = []s3.Config{bucket}
		raw, _ := json.Marshal(storages)
		v.Set("storages", string(raw))
	}
	args := k8s.CrawlArgsOptions{
		Workers:         v.GetInt("crawler.browser_instances"),
		MaxPageLimit:    v.GetInt("max_pages_per_crawl"),
		HealthCheckPort: v.GetInt("crawler.liveness_port"),
		Extra:           v.GetString("crawler.extra_args"),
	}
	err = k8s.EnsureCrawlerSupport(ctx, env.Client, v.GetString("crawler_namespace"), k8s.CrawlerSupport{
		CrawlArgs:   k8s.CrawlArgs(args),
		CrawlArgsV1: k8s.CrawlArgsV1(args),
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
		served <- app.Serve(ctx, v, app.Deps{ClusterDialer: env.Dial, Logs: env.Kubelet,
			Listening: listening, Logger: logger, StorageTransport: env.HTTPTransport()})
	}()
	select {
	case addr := <-listening:
		return &Stack{Env: env, APIURL: "http://" + addr, Served: served}, nil
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
