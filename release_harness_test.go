package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// The Helm release tests install deploy/helm/trawler, as an operator
// would, into one RBAC-enforcing sandbox shared by this package: the
// trawler image runs the binary these tests build, MongoDB's image runs
// the sandbox's MongoDB-wire server, and crawler pods run the crawler
// simulator.

const (
	releaseName      = "trawler"
	releaseNamespace = "trawler"
	crawlerNamespace = "crawlers"
	// releaseSA is the user the apiserver sees for trawler's pods.
	releaseSA = "system:serviceaccount:" + releaseNamespace + ":trawler"
)

var chartDir = filepath.Join("deploy", "helm", "trawler")

// releaseMailFrom is the From address the release is installed with,
// releaseAppOrigin the origin of the links in its e-mails.
const (
	releaseMailFrom  = "noreply@release.test"
	releaseAppOrigin = "https://crawls.release.test"
)

// sandboxValues are what the sandbox needs beyond the chart's defaults:
// its MongoDB-wire server (FerretDB) takes credentials over PLAIN only and
// must be used through one connection per client (see
// sandbox.MongoProgram). E-mail goes to the sandbox's Mailpit without a
// password (over plain SMTP trawler logs in only with SCRAM, NTLM or
// CRAM-MD5, never PLAIN or LOGIN, the two Mailpit offers) with links on
// an origin of its own, and webhook delivery is tuned away from the
// defaults, so the release shows that those values reach trawler and that
// it starts with them.
func (r *releaseEnv) sandboxValues() string {
	return fmt.Sprintf(`mongo_uri_options: authSource=admin&authMechanism=PLAIN&maxPoolSize=1
app_origin: %s
email: {smtp_host: 127.0.0.1, smtp_port: %d, sender: trawler@release.test, reply_to: %s}
webhooks: {max_attempts: 3, retry_delay: 2s, max_retry_delay: 1m, poll_interval: 5s, workers: 2}
`, releaseAppOrigin, r.env.Mailpit.SMTPPort, releaseMailFrom)
}

type releaseEnv struct {
	env     *sandbox.Env
	trawler versioned.Interface
	helm    string
	home    string // HOME, cache and config folders of helm
}

var (
	releaseOnce   sync.Once
	sharedRelease *releaseEnv
	releaseErr    error
)

// theRelease starts the package's RBAC sandbox once; TestMain stops it.
func theRelease(t *testing.T) *releaseEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a sandbox")
	}
	bin := buildTrawler(t)
	releaseOnce.Do(func() {
		helm, err := sandbox.Bin("helm")
		if err != nil {
			releaseErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		env, err := sandbox.Start(ctx, sandbox.Options{
			RBAC:  true,
			Nodes: kubelet.Nodes{Count: 2},
			Programs: map[string]kubelet.Program{
				sandbox.TrawlerImage: sandbox.TrawlerProgram(bin),
				sandbox.MongoImage:   sandbox.MongoProgram(),
				sandbox.S3Image:      sandbox.S3Program(),
				crawlersim.Image:     crawlersim.Program(nil),
			},
			RestartBackoff: kubelet.Backoff{Initial: time.Second, Max: 10 * time.Second},
		})
		if err != nil {
			releaseErr = err
			return
		}
		home, err := os.MkdirTemp("", "trawler-helm-")
		if err != nil {
			releaseErr = err
			return
		}
		client, err := versioned.NewForConfig(env.Config())
		if err != nil {
			releaseErr = err
			return
		}
		sharedRelease = &releaseEnv{env: env, trawler: client, helm: helm, home: home}
		packageCleanups = append(packageCleanups, func() { env.Stop(); os.RemoveAll(home) })
	})
	if releaseErr != nil {
		t.Fatal(releaseErr)
	}
	return sharedRelease
}

// run runs helm with args against the sandbox and returns its combined
// output.
func (r *releaseEnv) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.helm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.env.Kubeconfig(), "HOME="+r.home,
		"HELM_CACHE_HOME="+filepath.Join(r.home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(r.home, "config"),
		"HELM_DATA_HOME="+filepath.Join(r.home, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (r *releaseEnv) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := r.run(ctx, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// waitFor polls cond every 200ms until it returns true or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readyPods lists the release's trawler pods that are Ready.
func (r *releaseEnv) readyPods(ctx context.Context) ([]corev1.Pod, error) {
	pods, err := r.env.Client.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/name": "trawler",
			"app.kubernetes.io/instance": releaseName}).String()})
	if err != nil {
		return nil, err
	}
	var ready []corev1.Pod
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				ready = append(ready, p)
			}
		}
	}
	return ready, nil
}

// rolledOut reports whether deployment name runs only its current
// template, with all replicas ready.
func (r *releaseEnv) rolledOut(ctx context.Context, name string) (bool, error) {
	d, err := r.env.Client.AppsV1().Deployments(releaseNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	return deploymentDone(d), nil
}

func deploymentDone(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
		s.ReadyReplicas == want && s.AvailableReplicas == want
}

// apiClient talks to the release's REST API through its Service, as a
// client in the cluster would: the sandbox's Service routing picks a
// ready trawler pod for each connection.
type apiClient struct {
	t     *testing.T
	http  *http.Client
	base  string
	token string
}

func (r *releaseEnv) api(t *testing.T) *apiClient {
	t.Helper()
	return newAPIClient(t, fmt.Sprintf("http://%s.%s.svc.cluster.local:8000", releaseName, releaseNamespace),
		&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			DialContext: r.env.Dial, DisableKeepAlives: true}})
}

// newAPIClient logs in to the API at base as the superuser.
func newAPIClient(t *testing.T, base string, hc *http.Client) *apiClient {
	t.Helper()
	c := &apiClient{t: t, base: base, http: hc}
	form := url.Values{"username": {"admin@example.com"}, "password": {"PASSW0RD!"}}
	var login struct {
		AccessToken string `json:"access_token"`
	}
	c.do("POST", "/api/auth/jwt/login", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded", 200, &login)
	c.token = login.AccessToken
	return c
}

func (c *apiClient) do(method, path string, body io.Reader, contentType string, want int, out any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %s, want %d: %s", method, path, resp.Status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: decoding %s: %v", method, path, data, err)
		}
	}
}

func (c *apiClient) json(method, path string, in any, want int, out any) {
	c.t.Helper()
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			c.t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	c.do(method, path, body, "application/json", want, out)
}

func (c *apiClient) orgID() string {
	c.t.Helper()
	var orgs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	c.json("GET", "/api/orgs", nil, 200, &orgs)
	if len(orgs.Items) == 0 {
		c.t.Fatal("no organisation")
	}
	return orgs.Items[0].ID
}

// startCrawl creates a workflow that runs at once and returns its crawl.
func (c *apiClient) startCrawl(oid, seed string, scale int) string {
	c.t.Helper()
	var created struct {
		RunNowJob string `json:"run_now_job"`
	}
	c.json("POST", "/api/orgs/"+oid+"/crawlconfigs/", map[string]any{
		"name": "release test", "runNow": true, "scale": scale,
		"config": map[string]any{"seeds": []map[string]any{{"url": seed}}},
	}, 200, &created)
	if created.RunNowJob == "" {
		c.t.Fatal("the workflow started no crawl")
	}
	return created.RunNowJob
}

type crawlOut struct {
	State     string `json:"state"`
	FileCount int    `json:"fileCount"`
	Stats     struct {
		Found, Done int64
	} `json:"stats"`
	Resources []struct {
		Name string `json:"name"`
		Path string `json:"path"`
		Hash string `json:"hash"`
		Size int64  `json:"size"`
	} `json:"resources"`
}

func (c *apiClient) crawl(oid, id string) crawlOut {
	c.t.Helper()
	var out crawlOut
	c.json("GET", "/api/orgs/"+oid+"/crawls/"+id+"/replay.json", nil, 200, &out)
	return out
}

// waitCrawlState waits until the crawl is in one of states.
func (c *apiClient) waitCrawlState(oid, id string, timeout time.Duration, states ...string) crawlOut {
	c.t.Helper()
	var last crawlOut
	waitFor(c.t, timeout, "crawl "+id+" to reach "+strings.Join(states, " or "), func() (bool, error) {
		last = c.crawl(oid, id)
		for _, s := range states {
			if last.State == s {
				return true, nil
			}
		}
		return false, fmt.Errorf("state %s, stats %+v", last.State, last.Stats)
	})
	return last
}

// waitCrawl waits until the crawl finished and fails unless it completed
// with every page done.
func (c *apiClient) waitCrawl(oid, id string, timeout time.Duration) crawlOut {
	c.t.Helper()
	got := c.waitCrawlState(oid, id, timeout, "complete", "partial_complete", "failed", "canceled",
		"stopped_by_user", "stopped_quota_reached", "stopped_storage_quota_reached")
	if got.State != "complete" || got.Stats.Done == 0 || got.Stats.Done != got.Stats.Found {
		c.t.Fatalf("crawl %s ended %s with stats %+v", id, got.State, got.Stats)
	}
	return got
}

// checkFiles: the crawl has one WACZ per crawler instance, each in the
// bundled S3 server's bucket (a file on its volume) and downloadable
// through its presigned link with the recorded size and hash.
func (r *releaseEnv) checkFiles(t *testing.T, api *apiClient, oid, crawl string, instances int) {
	t.Helper()
	got := api.crawl(oid, crawl)
	if len(got.Resources) != instances {
		t.Fatalf("crawl %s has %d files, want %d: %+v", crawl, len(got.Resources), instances, got.Resources)
	}
	bucket := r.bucketDir(t)
	for _, res := range got.Resources {
		u, err := url.Parse(res.Path)
		if err != nil || u.Query().Get("X-Amz-Signature") == "" {
			t.Errorf("file %s: %q is no presigned link", res.Name, res.Path)
			continue
		}
		key := strings.TrimPrefix(strings.TrimPrefix(u.Path, "/"), "btrix-data/")
		if info, err := os.Stat(filepath.Join(bucket, filepath.FromSlash(key))); err != nil || info.Size() != res.Size {
			t.Errorf("file %s is not in the bundled store's bucket as %s with %d bytes: %v", res.Name, key, res.Size, err)
		}
		resp, err := api.http.Get(res.Path)
		if err != nil {
			t.Errorf("downloading %s: %v", res.Name, err)
			continue
		}
		sum := sha256.New()
		n, err := io.Copy(sum, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || n != res.Size || hex.EncodeToString(sum.Sum(nil)) != res.Hash {
			t.Errorf("downloading %s: %s, %d bytes (want %d), err %v, hash match %t", res.Name, resp.Status, n, res.Size,
				err, hex.EncodeToString(sum.Sum(nil)) == res.Hash)
		}
	}
}

// bucketDir is the folder of the bundled S3 server's bucket: versitygw's
// posix backend keeps each bucket as a folder of its volume.
func (r *releaseEnv) bucketDir(t *testing.T) string {
	t.Helper()
	pvc, err := r.env.Client.CoreV1().PersistentVolumeClaims(releaseNamespace).Get(context.Background(),
		releaseName+"-s3-data", metav1.GetOptions{})
	if err != nil || pvc.Spec.VolumeName == "" {
		t.Fatalf("the bundled S3 server's volume: %v", err)
	}
	return filepath.Join(r.env.Kubelet.VolumeDir(pvc.Spec.VolumeName), "btrix-data")
}
