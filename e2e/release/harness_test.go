package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
	"github.com/trawlerhq/trawler/sandbox/wacztest"
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

// chartDir is the chart the tests install; TestMain sets it.
var chartDir string

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
	bin := e2etest.Binary(t)
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
			env.Stop()
			releaseErr = err
			return
		}
		client, err := versioned.NewForConfig(env.Config())
		if err != nil {
			env.Stop()
			os.RemoveAll(home)
			releaseErr = err
			return
		}
		sharedRelease = &releaseEnv{env: env, trawler: client, helm: helm, home: home}
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

// api logs in to the release's REST API through its Service, as a
// client in the cluster would: the sandbox's Service routing picks a
// ready trawler pod for each connection.
func (r *releaseEnv) api(t *testing.T) *e2etest.Client {
	t.Helper()
	return e2etest.Login(t, fmt.Sprintf("http://%s.%s.svc.cluster.local:8000", releaseName, releaseNamespace),
		&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			DialContext: r.env.Dial, DisableKeepAlives: true}})
}

// checkFiles: the crawl has one WACZ per crawler instance, each in the
// bundled S3 server's bucket (a file on its volume), linked on the
// release's own origin under /data/ and downloadable there, whole and by
// range, with the recorded size and hash; each replays. The links go
// through the sandbox's Service routing, as a browser outside the
// cluster reaches the release.
func (r *releaseEnv) checkFiles(t *testing.T, api *e2etest.Client, oid, crawl string, instances int) {
	t.Helper()
	got := api.Crawl(oid, crawl)
	if len(got.Resources) != instances {
		t.Fatalf("crawl %s has %d files, want %d: %+v", crawl, len(got.Resources), instances, got.Resources)
	}
	bucket := r.bucketDir(t)
	for _, res := range got.Resources {
		u, err := url.Parse(res.Path)
		if err != nil || u.Query().Get("X-Amz-Signature") == "" || u.IsAbs() || !strings.HasPrefix(u.Path, "/data/") {
			t.Errorf("file %s: %q is no presigned link on the release's origin under /data/", res.Name, res.Path)
			continue
		}
		key := strings.TrimPrefix(u.Path, "/data/")
		if info, err := os.Stat(filepath.Join(bucket, filepath.FromSlash(key))); err != nil || info.Size() != res.Size {
			t.Errorf("file %s is not in the bundled store's bucket as %s with %d bytes: %v", res.Name, key, res.Size, err)
		}
		data := r.getFile(t, api, res.Path, "", http.StatusOK)
		sum := sha256.Sum256(data)
		if int64(len(data)) != res.Size || hex.EncodeToString(sum[:]) != res.Hash {
			t.Errorf("downloading %s: %d bytes (want %d), hash match %t", res.Name, len(data), res.Size,
				hex.EncodeToString(sum[:]) == res.Hash)
			continue
		}
		if part := r.getFile(t, api, res.Path, "bytes=100-1123", http.StatusPartialContent); !bytes.Equal(part, data[100:1124]) {
			t.Errorf("range of %s: %d bytes, not bytes 100-1123 of the file", res.Name, len(part))
		}
		w, err := wacztest.Inspect(data)
		if err == nil {
			_, err = w.CheckReplay()
		}
		if err != nil {
			t.Errorf("%s does not replay: %v", res.Name, err)
		}
	}
}

// getFile GETs a link on the release's origin, with a Range header when
// rng is set, and checks the status.
func (r *releaseEnv) getFile(t *testing.T, api *e2etest.Client, path, rng string, want int) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, api.Base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := api.HTTP.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != want {
		t.Fatalf("GET %s (Range %q): %s, want %d: %v %.200s", path, rng, resp.Status, want, err, data)
	}
	return data
}

// checkReplayEntryPoints: the release serves ReplayWeb.page's entry
// points on its own origin, so the dashboard's replay viewer and its
// service worker stay there.
func (r *releaseEnv) checkReplayEntryPoints(t *testing.T, api *e2etest.Client) {
	t.Helper()
	sw := string(r.getFile(t, api, "/replay/sw.js", "", http.StatusOK))
	if !strings.Contains(sw, `importScripts("https://replayweb.page/sw.js")`) {
		t.Errorf("/replay/sw.js does not load the configured ReplayWeb.page: %.200s", sw)
	}
	if page := string(r.getFile(t, api, "/replay/index.html", "", http.StatusOK)); !strings.Contains(page, "<replay-app-main") {
		t.Errorf("/replay/index.html is no replay page: %.200s", page)
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
