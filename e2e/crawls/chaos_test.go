package crawls

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// TestMongoOutageDuringACrawl stops the MongoDB-wire server for 20 s (and
// until the crawler is done) in the middle of a crawl. Every API call in
// the outage answers 503 within mongo.timeout (it used to hang for 30 s
// first), and the crawl, which finishes while MongoDB is away, still ends
// complete with all its pages, its error lines and its file recorded once
// MongoDB is back.
func TestMongoOutageDuringACrawl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sandbox")
	}
	const (
		pages   = 24
		outage  = 20 * time.Second
		timeout = 3 * time.Second // mongo.timeout
	)
	ctx := t.Context()
	dir := t.TempDir()
	logFile, err := os.Create(filepath.Join(dir, "trawler.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			raw, _ := os.ReadFile(logFile.Name())
			lines := strings.Split(string(raw), "\n")
			t.Logf("trawler log (last 80 lines):\n%s", strings.Join(lines[max(0, len(lines)-80):], "\n"))
		}
	})

	v, err := e2etest.DevConfig(map[string]any{
		"mongo.timeout": timeout,
		// Three known pages fail (leaves of the simulated site, so every
		// page is still found), and the crawl has exactly three error lines.
		"crawler.extra_args": `--sim.failUrlRx "/sim/(13|17|21)$"`,
	})
	if err != nil {
		t.Fatal(err)
	}
	stack, err := e2etest.StartStack(v, dir, sandbox.Options{Nodes: kubelet.Nodes{Count: 1}}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stack.Stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	env := stack.Env
	if err := e2etest.WaitReady(stack.APIURL+"/readyz", 2*time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	a := e2etest.LoginAs(t, stack.APIURL, &http.Client{Timeout: time.Minute},
		v.GetString("superuser.email"), v.GetString("superuser.password"))
	oid := a.OrgID()
	crawlID := a.StartCrawl(oid, fmt.Sprintf("https://example.com/?sim-pages=%d&sim-links=2&sim-page-ms=700", pages), 1)
	crawlPath := "/api/orgs/" + oid + "/crawls/" + crawlID
	e2etest.WaitFor(t, 3*time.Minute, "the crawl to run", func() (bool, error) {
		c := a.Crawl(oid, crawlID)
		return c.State == "running" && c.Stats.Done >= 2, nil
	})

	if err := env.Mongo.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// The outage lasts 20 s, and longer if need be, until the crawler has
	// finished: its pages, errors and file then all wait in Redis.
	crawlerDone := func() bool {
		pods, err := env.Client.CoreV1().Pods(v.GetString("crawler_namespace")).List(ctx,
			metav1.ListOptions{LabelSelector: k8s.LabelCrawl + "=" + crawlID + "," + k8s.LabelRole + "=" + k8s.RoleCrawler})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodSucceeded
	}
	for time.Since(stopped) < outage || !crawlerDone() {
		if time.Since(stopped) > 3*time.Minute {
			t.Fatal("the crawler did not finish within 3 minutes")
		}
		for _, path := range []string{"/api/users/me", "/api/orgs", crawlPath, "/api/orgs/" + oid + "/crawls"} {
			start := time.Now()
			code := a.Status(path)
			if took := time.Since(start); code != http.StatusServiceUnavailable || took > timeout+2*time.Second {
				t.Fatalf("GET %s during the outage: %d after %v, want 503 within mongo.timeout (%v)", path, code, took, timeout)
			}
		}
	}
	if err := env.Mongo.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	e2etest.WaitFor(t, time.Minute, "the API to answer again", func() (bool, error) { return a.Status("/api/users/me") == 200, nil })
	c := a.WaitCrawlState(oid, crawlID, 3*time.Minute, "complete", "partial_complete", "failed", "canceled")
	if c.State != "complete" || c.Stats.Done != pages || c.Stats.Found != pages {
		t.Fatalf("crawl after the outage: %s with stats %+v; want complete with %d pages", c.State, c.Stats, pages)
	}
	if len(c.Resources) != 1 || c.Resources[0].Size <= 0 {
		t.Fatalf("files: %+v; want the crawler's one WACZ", c.Resources)
	}
	var errs struct {
		Total int `json:"total"`
	}
	a.JSON("GET", crawlPath+"/errors", nil, 200, &errs)
	if errs.Total != 3 {
		t.Fatalf("%d error lines; want the three failed pages' lines", errs.Total)
	}
}
