// Package sandbox runs trawler's world on loopback for tests and `trawler
// dev`: a real Kubernetes control plane (etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager), a simulated kubelet that runs
// Go programs as containers, redis-server, a MongoDB-wire server, an SMTP
// server with a web UI (Mailpit) and, when asked, an S3 server (versitygw). The
// binaries come from hack/setup-testenv.sh (see Bin). Every process dies
// with the Go process that started it.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// Options configure Start. Zero values get the defaults noted.
type Options struct {
	// Dir holds every file of the sandbox. Default: a new temporary folder
	// that Stop removes; a given Dir is kept.
	Dir string
	// Nodes are the simulated nodes (default: one node, 8 CPUs, 32Gi).
	Nodes kubelet.Nodes
	// Programs maps images to the programs their containers run, in
	// addition to the Redis stand-in (RedisImage).
	Programs map[string]kubelet.Program
	// RestartBackoff paces container restarts (default 10s doubling to
	// 5m, as in a cluster).
	RestartBackoff kubelet.Backoff
	// CRDs are YAML or JSON documents (several per item allowed) of
	// CustomResourceDefinitions to install; Start waits until each is
	// Established.
	CRDs [][]byte
	// Namespaces are created after the CRDs.
	Namespaces []string
	// CrawlPriorityClasses, when > 0, creates that many crawl PriorityClasses
	// (k8s.EnsurePriorityClasses).
	CrawlPriorityClasses int
	// ClusterDomain is the DNS domain of the cluster (default cluster.local).
	ClusterDomain string
	// RBAC makes the cluster enforce RBAC, give pods ServiceAccount tokens
	// and write an audit log of ServiceAccount requests (ClusterOptions).
	RBAC bool
	// ObjectStorage starts the S3 server too (Env.S3), reachable by pods
	// and through Dial as S3ClusterHost.
	ObjectStorage bool
	// Logger receives the sandbox's and the kubelet's log (default: discarded).
	Logger *slog.Logger
}

// Env is a running sandbox.
type Env struct {
	Dir     string
	Cluster *Cluster
	Redis   *Redis
	Mongo   *Mongo
	Mailpit *Mailpit
	// S3 is nil unless Options.ObjectStorage was set.
	S3      *S3
	Kubelet *kubelet.Kubelet
	// Client is an admin clientset for the cluster.
	Client kubernetes.Interface
	// StartDuration is how long Start took.
	StartDuration time.Duration

	log       *slog.Logger
	removeDir bool
}

// Start starts the sandbox and returns once every part is ready. On error
// everything already started is stopped. It fails with ErrBinaryMissing
// (wrapped) when the binaries have not been built.
func Start(ctx context.Context, opts Options) (*Env, error) {
	began := time.Now()
	e := &Env{Dir: opts.Dir, log: opts.Logger}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if err := e.start(ctx, opts, began); err != nil {
		e.Stop()
		return nil, fmt.Errorf("starting sandbox: %w", err)
	}
	e.StartDuration = time.Since(began)
	e.log.Info("sandbox started", "dir", e.Dir, "took", e.StartDuration.Round(time.Millisecond),
		"kubeconfig", e.Kubeconfig(), "mongo", e.MongoURI(), "redis", e.RedisURL(0))
	return e, nil
}

func (e *Env) start(ctx context.Context, opts Options, began time.Time) error {
	if e.Dir == "" {
		dir, err := os.MkdirTemp("", "trawler-sandbox-")
		if err != nil {
			return fmt.Errorf("creating sandbox dir: %w", err)
		}
		e.Dir, e.removeDir = dir, true
	}
	for _, sub := range []string{"cluster", "redis", "mongo", "mailpit", "kubelet", "s3"} {
		if err := os.MkdirAll(filepath.Join(e.Dir, sub), 0o755); err != nil {
			return fmt.Errorf("creating sandbox dir: %w", err)
		}
	}
	// Redis, Mongo and Mailpit start in milliseconds; the control plane
	// takes seconds.
	clusterDone := make(chan error, 1)
	go func() {
		var err error
		e.Cluster, err = StartCluster(ctx, filepath.Join(e.Dir, "cluster"), ClusterOptions{RBAC: opts.RBAC})
		clusterDone <- err
	}()
	var err error
	e.Redis, err = StartRedis(ctx, filepath.Join(e.Dir, "redis"))
	if err == nil {
		e.Mongo, err = StartMongo(ctx, filepath.Join(e.Dir, "mongo"))
	}
	if err == nil {
		e.Mailpit, err = StartMailpit(ctx, filepath.Join(e.Dir, "mailpit"))
	}
	if err == nil && opts.ObjectStorage {
		e.S3, err = StartS3(ctx, filepath.Join(e.Dir, "s3"))
	}
	if err = errors.Join(err, <-clusterDone); err != nil {
		return err
	}
	e.log.Debug("control plane, redis-server, mongotestd and mailpit ready", "after", time.Since(began))
	if e.Client, err = kubernetes.NewForConfig(e.Cluster.Config); err != nil {
		return fmt.Errorf("building clientset: %w", err)
	}

	domain := opts.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	dns := kubelet.NewDNS(domain)
	if e.S3 != nil {
		dns.Register(S3ClusterHost, fmt.Sprintf("127.0.0.1:%d", e.S3.Port))
	}
	programs := map[string]kubelet.Program{RedisImage: RedisProgram(dns)}
	for image, p := range opts.Programs {
		programs[image] = p
	}
	e.Kubelet, err = kubelet.Start(ctx, e.Client, kubelet.Options{
		Dir: filepath.Join(e.Dir, "kubelet"), Nodes: opts.Nodes, Programs: programs, DNS: dns,
		Backoff: opts.RestartBackoff, APIServer: e.Cluster.Config.Host, Logger: e.log.With("component", "kubelet"),
	})
	if err != nil {
		return err
	}
	e.log.Debug("kubelet ready", "after", time.Since(began))

	if err := installCRDs(ctx, e.Cluster.Config, opts.CRDs...); err != nil {
		return err
	}
	for _, ns := range opts.Namespaces {
		_, err := e.Client.CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
		if opts.RBAC {
			// ServiceAccount admission rejects pods until the
			// controller-manager created the namespace's default account.
			if err := WaitFor(ctx, 30*time.Second, 50*time.Millisecond, nil, func(ctx context.Context) error {
				_, err := e.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
				return err
			}); err != nil {
				return fmt.Errorf("waiting for namespace %s's default serviceaccount: %w", ns, err)
			}
		}
	}
	return k8s.EnsurePriorityClasses(ctx, e.Client, opts.CrawlPriorityClasses)
}

// Stop stops every part (programs first, then the control plane and the
// servers) and removes Dir if Start created it. Stopping twice is fine.
func (e *Env) Stop() {
	if e.Kubelet != nil {
		e.Kubelet.Stop()
		e.Kubelet = nil
	}
	if e.Cluster != nil {
		e.Cluster.Stop()
	}
	for _, p := range e.servers() {
		if p != nil {
			if err := p.Stop(5 * time.Second); err != nil {
				e.log.Warn("stopping sandbox process", "err", err)
			}
		}
	}
	if e.removeDir {
		if err := os.RemoveAll(e.Dir); err != nil {
			e.log.Warn("removing sandbox dir", "err", err)
		}
		e.removeDir = false
	}
}

// Dial connects to addr, resolving the sandbox's cluster DNS names (such
// as redis-<id>.redis.<ns>.svc.cluster.local) to the programs that
// registered them. Give it to trawler as its Redis dialer.
func (e *Env) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return e.Kubelet.DNS().Dial(ctx, network, addr)
}

// Kubeconfig is the path of an admin kubeconfig for the cluster.
func (e *Env) Kubeconfig() string { return e.Cluster.Kubeconfig }

// Config returns a copy of the admin REST config.
func (e *Env) Config() *rest.Config { return rest.CopyConfig(e.Cluster.Config) }

// MongoURI is the MongoDB connection string of mongotestd (see Mongo.URI
// for its pool size).
func (e *Env) MongoURI() string { return e.Mongo.URI() }

// RedisURL is the redis:// URL of database db of the shared redis-server.
func (e *Env) RedisURL(db int) string { return e.Redis.URL(db) }

// Processes lists the sandbox's running server processes.
func (e *Env) Processes() []*Process {
	var ps []*Process
	if e.Cluster != nil {
		ps = append(ps, e.Cluster.Processes()...)
	}
	for _, p := range e.servers() {
		if p != nil && !p.Exited() {
			ps = append(ps, p)
		}
	}
	return ps
}

// MailpitURL is the address of the mail server's web UI and API.
func (e *Env) MailpitURL() string { return e.Mailpit.URL() }

// servers are the processes of the servers started next to the cluster
// (nil for those not started).
func (e *Env) servers() []*Process {
	return []*Process{e.redisProcess(), e.mongoProcess(), e.mailpitProcess(), e.s3Process()}
}

func (e *Env) mailpitProcess() *Process {
	if e.Mailpit == nil {
		return nil
	}
	return e.Mailpit.Process
}

func (e *Env) redisProcess() *Process {
	if e.Redis == nil {
		return nil
	}
	return e.Redis.Process
}

func (e *Env) mongoProcess() *Process {
	if e.Mongo == nil {
		return nil
	}
	return e.Mongo.Process
}

func (e *Env) s3Process() *Process {
	if e.S3 == nil {
		return nil
	}
	return e.S3.Process
}

// HTTPTransport is an HTTP transport that resolves the sandbox's cluster
// DNS names (such as S3ClusterHost), for trawler's storage client.
func (e *Env) HTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = e.Dial
	return t
}

// CreateBucket creates bucket on the S3 server (Options.ObjectStorage)
// and returns its configuration as storage name, for trawler and for the
// crawler's storage secret (s3.Config.CrawlerEnv).
func (e *Env) CreateBucket(ctx context.Context, name, bucket string) (s3.Config, error) {
	if e.S3 == nil {
		return s3.Config{}, errors.New("sandbox started without ObjectStorage")
	}
	cfg := e.S3.Storage(name, bucket)
	b, err := s3.New(cfg, s3.Options{Transport: e.HTTPTransport()})
	if err != nil {
		return s3.Config{}, err
	}
	if err := b.EnsureBucket(ctx); err != nil {
		return s3.Config{}, err
	}
	return cfg, nil
}
