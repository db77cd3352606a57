package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is a real Kubernetes control plane on loopback: etcd,
// kube-apiserver, kube-scheduler and kube-controller-manager (garbage
// collector, namespace, PVC/PV protection, ServiceAccount, root CA
// publisher, Deployment, ReplicaSet and disruption controllers). No node
// runs pods; the simulated kubelet does that, and also binds PVCs.
type Cluster struct {
	Etcd, APIServer, Scheduler, ControllerManager *Process
	// Kubeconfig is the path of a kubeconfig for an admin user.
	Kubeconfig string
	// Config is the same as a client-go REST config.
	Config *rest.Config
	// CA is the PEM certificate of the CA that signed the apiserver's
	// serving certificate; pods get it as ca.crt.
	CA []byte
	// AuditLog is the path of the apiserver's audit log (JSON lines), when
	// ClusterOptions.RBAC asked for one.
	AuditLog string

	opts    ClusterOptions
	dir     string
	etcdURL string
}

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// RBAC makes the apiserver authorize as a production cluster does
	// (--authorization-mode=Node,RBAC) and run the ServiceAccount admission
	// plugin, which gives pods their ServiceAccount token volume. Without
	// it every request is allowed and pods get no token. With it, requests
	// of ServiceAccounts are written to AuditLog.
	RBAC bool
}

// StartCluster starts the control plane with its files under dir and waits
// until the apiserver is ready and the default namespace exists.
func StartCluster(ctx context.Context, dir string, opts ClusterOptions) (*Cluster, error) {
	c := &Cluster{dir: dir, opts: opts}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	certs := filepath.Join(c.dir, "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return fmt.Errorf("creating cert dir: %w", err)
	}
	token, err := writeAuthFiles(certs)
	if err != nil {
		return err
	}
	if c.CA, err = writeServingCerts(certs); err != nil {
		return err
	}
	if err := c.startEtcd(ctx); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, certs, token); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		args []string
		dst  **Process
	}{
		// The scheduler's client gets the budget of a cluster sized for
		// many crawls at once, the operator's own (kube_qps 200): at the
		// default 50 a second after a burst of 100, binding the 200 pods
		// of 100 crawls resumed at once took 2.9 s by itself
		// (BenchmarkResumeFloor, docs/benchmarks.md).
		{"kube-scheduler", []string{"--kubeconfig=" + c.Kubeconfig, "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=0", "--kube-api-qps=200", "--kube-api-burst=400"}, &c.Scheduler},
		{"kube-controller-manager", []string{"--kubeconfig=" + c.Kubeconfig, "--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=0",
			"--controllers=garbagecollector,namespace,pvc-protection,pv-protection,serviceaccount," +
				"root-ca-cert-publisher,deployment,replicaset,disruption",
			"--root-ca-file=" + filepath.Join(certs, "ca.crt"),
			"--use-service-account-credentials=false", "--concurrent-gc-syncs=5"}, &c.ControllerManager},
	} {
		path, err := Bin(p.name)
		if err != nil {
			return err
		}
		proc := &Process{Name: p.name, Path: path, Args: p.args, Dir: c.dir,
			LogPath: filepath.Join(c.dir, p.name+".log")}
		if err := proc.Start(); err != nil {
			return err
		}
		*p.dst = proc
	}
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	path, err := Bin("etcd")
	if err != nil {
		return err
	}
	clientPort, err := FreePort()
	if err != nil {
		return err
	}
	peerPort, err := FreePort()
	if err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	c.Etcd = &Process{Name: "etcd", Path: path, Dir: c.dir, LogPath: filepath.Join(c.dir, "etcd.log"),
		Args: []string{"--name=sandbox", "--data-dir=" + filepath.Join(c.dir, "etcd-data"),
			"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=sandbox=" + peer, "--unsafe-no-fsync", "--log-level=warn",
			"--quota-backend-bytes=8589934592"}}
	if err := c.Etcd.Start(); err != nil {
		return err
	}
	c.etcdURL = client
	return WaitFor(ctx, 30*time.Second, 50*time.Millisecond, c.Etcd, httpOK(client+"/health", nil))
}

func (c *Cluster) startAPIServer(ctx context.Context, certs, token string) error {
	path, err := Bin("kube-apiserver")
	if err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	c.APIServer = &Process{Name: "kube-apiserver", Path: path, Dir: c.dir,
		LogPath: filepath.Join(c.dir, "kube-apiserver.log"),
		Args: []string{"--etcd-servers=" + c.etcdURL,
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port), "--cert-dir=" + certs,
			"--tls-cert-file=" + filepath.Join(certs, "apiserver.crt"),
			"--tls-private-key-file=" + filepath.Join(certs, "apiserver.key"),
			"--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
			"--token-auth-file=" + filepath.Join(certs, "tokens.csv"),
			"--service-account-issuer=" + host + "/",
			"--service-account-key-file=" + filepath.Join(certs, "sa.pub"),
			"--service-account-signing-key-file=" + filepath.Join(certs, "sa.key"),
			"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
			"--enable-priority-and-fairness=false",
			// The watch cache's self-check (on by default since 1.34) lists
			// every resource from etcd and from the cache every 5 minutes
			// and compares digests: at 10,000 crawls 17% of the API
			// server's CPU, in bursts, on the cores the operator under
			// test shares here. It checks Kubernetes, not trawler.
			"--feature-gates=DetectCacheInconsistency=false"}}
	if c.opts.RBAC {
		policy := filepath.Join(certs, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
			return fmt.Errorf("writing audit policy: %w", err)
		}
		c.AuditLog = filepath.Join(c.dir, "audit.log")
		c.APIServer.Args = append(c.APIServer.Args, "--authorization-mode=Node,RBAC",
			"--audit-policy-file="+policy, "--audit-log-path="+c.AuditLog, "--audit-log-format=json",
			"--audit-log-mode=blocking")
	} else {
		c.APIServer.Args = append(c.APIServer.Args, "--authorization-mode=AlwaysAllow",
			"--disable-admission-plugins=ServiceAccount")
	}
	if err := c.APIServer.Start(); err != nil {
		return err
	}
	c.Config = &rest.Config{Host: host, BearerToken: token, QPS: 500, Burst: 1000,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CA}}
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, host, token, c.CA); err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return fmt.Errorf("building apiserver client: %w", err)
	}
	if err := WaitFor(ctx, 90*time.Second, 100*time.Millisecond, c.APIServer, httpOK(host+"/readyz", hc)); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("building clientset: %w", err)
	}
	return WaitFor(ctx, 30*time.Second, 100*time.Millisecond, c.APIServer, func(ctx context.Context) error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// Stop stops every control-plane process, the apiserver's clients first.
func (c *Cluster) Stop() {
	for _, p := range []*Process{c.ControllerManager, c.Scheduler, c.APIServer, c.Etcd} {
		if p != nil {
			_ = p.Stop(5 * time.Second)
		}
	}
}

// Processes lists the running control-plane processes.
func (c *Cluster) Processes() []*Process {
	var ps []*Process
	for _, p := range []*Process{c.Etcd, c.APIServer, c.Scheduler, c.ControllerManager} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// httpOK is a readiness check: GET url answers 200.
func httpOK(url string, hc *http.Client) func(context.Context) error { return httpGet(url, hc, true) }

// httpAnswers is a readiness check: GET url gets any answer at all.
func httpAnswers(url string, hc *http.Client) func(context.Context) error {
	return httpGet(url, hc, false)
}

func httpGet(url string, hc *http.Client, wantOK bool) func(context.Context) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if wantOK && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

func writeKubeconfig(path, host, token string, ca []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "sandbox"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}
