package operator_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/store"
)

// configV1 is the harness config with the one channel speaking 1.x,
// whatever TRAWLER_TEST_CRAWLER_PROTOCOL says.
func (h *harness) configV1() operator.Config {
	cfg := h.config()
	cfg.CrawlerChannels = k8s.CrawlerChannels{{ID: k8s.DefaultChannel, Image: crawlersim.Image + ":1.14.1", Protocol: k8s.ProtocolV1}}
	return cfg
}

// TestV1CrawlCompletes: a 1.x crawl's crawler reads its config from the
// ConfigMap's folder, runs with the 1.x command line and CRAWL_ARGS,
// pushes a record per page to <id>:pages naming the WACZ it lands in,
// and the crawl completes; the status shows the channel's image.
func TestV1CrawlCompletes(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	h.startOperator(h.configV1())
	// Long enough (about 12 s) to look at while it runs.
	id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=60&sim-page-ms=2000"})

	job, err := h.job(id)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := h.kube.CoreV1().ConfigMaps(h.ns).Get(context.Background(), k8s.CrawlConfigMapName(id), metav1.GetOptions{})
	if err != nil || cm.Data[k8s.ConfigMapKey] == "" || !metav1.IsControlledBy(cm, job) {
		t.Fatalf("config map %v: %v", cm, err)
	}
	h.waitPagesDone(id, 2)
	pod, ok := h.pods(id)[k8s.CrawlerName(id, 0)]
	if !ok {
		t.Fatal("no crawler pod while the crawl runs")
	}
	c := pod.Spec.Containers[0]
	if !slices.Contains(c.Command, "/tmp/config/crawl-config.json") || !slices.Contains(c.Command, "--workers") ||
		c.VolumeMounts[0].MountPath != "/tmp/config/" || c.EnvFrom[0].ConfigMapRef.Name != k8s.SharedCrawlerConfigV1Name {
		t.Errorf("crawler pod: command %q, mounts %v, envFrom %v", c.Command, c.VolumeMounts, c.EnvFrom)
	}
	h.waitFor("status.crawlerImage", 30*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && j.Status.CrawlerImage == crawlersim.Image+":1.14.1"
	})

	// The operator drains <id>:pages into the pages collection as the
	// crawl runs: the seed's record is there, naming the WACZ the crawler
	// announced in <id>:nextWacz.
	seed := true
	var pages []store.Page
	h.waitFor("the seed's page record stored", 30*time.Second, func() bool {
		pages, _, _ = h.store.ListPages(context.Background(), store.PageQuery{CrawlIDs: []string{id}, IsSeed: &seed,
			Paging: store.Paging{Page: 1, PageSize: 10}})
		return len(pages) > 0
	})
	page := pages[0]
	wacz, _ := h.crawlRedis(id).HGet(context.Background(), id+":nextWacz", k8s.CrawlerName(id, 0)).Result()
	if page.URL == "" || page.Depth == nil || *page.Depth != 0 || page.LoadState == nil || *page.LoadState != 4 ||
		page.Status == nil || *page.Status != 200 || page.Mime == nil || *page.Mime != "text/html" || page.TS.IsZero() ||
		page.Filename == nil || wacz == "" || *page.Filename != wacz {
		t.Errorf("seed page %+v (nextWacz %q)", page, wacz)
	}

	if got := h.waitState(id, 90*time.Second, store.FinishedStates...); got != store.StateComplete {
		t.Fatalf("1.x crawl ended %s", got)
	}
	if c := h.crawl(id); c.FileCount == 0 {
		t.Errorf("complete 1.x crawl without files: %+v", c)
	}
}

// TestV1CancelIsFast: canceling a 1.x crawl sets <id>:canceled, and its
// crawler, which here ignores SIGTERM, exits at its next page instead of
// at the end of its termination grace, uploading nothing.
func TestV1CancelIsFast(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	h.crawlArgs(" --sim.ignoreSigterm")
	log := &timeline{}
	cfg := h.configV1()
	cfg.TerminationGraceSeconds = 300
	cfg.RedisHook = controlWrites{name: "op", log: log}
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{seed: "https://example.com/?sim-pages=200&sim-page-ms=300"})
	h.waitPagesDone(id, 2)

	canceledAt := time.Now()
	if err := h.launch.CancelCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	h.waitFor(":canceled set", 30*time.Second, func() bool { return log.has("op asserts " + id + ":canceled") })
	if got := h.waitState(id, 30*time.Second, store.FinishedStates...); got != store.StateCanceled {
		t.Fatalf("canceled crawl ended %s", got)
	}
	// Far below the 300 s grace the crawler would otherwise take.
	h.waitFor("crawler pods gone", 90*time.Second, func() bool {
		for _, p := range h.pods(id) {
			if p.Labels[k8s.LabelRole] == k8s.RoleCrawler {
				return false
			}
		}
		return true
	})
	t.Logf("crawler gone %v after the cancel", time.Since(canceledAt).Round(time.Millisecond))
	if c := h.crawl(id); c.FileCount != 0 {
		t.Errorf("canceled 1.x crawl uploaded %d files", c.FileCount)
	}
}

// TestV1CrawlerExitIsLogged: a 1.x crawler that exits 1 (and then
// finishes the crawl after its restart) leaves one "Crawler Instance
// Exited" line in the crawl's errors; the same crash on 0.11 leaves none.
func TestV1CrawlerExitIsLogged(t *testing.T) {
	besideOthers(t)
	h := newHarness(t)
	h.crawlArgs(" --sim.exitAtPage 2 --sim.exitCode 1 --sim.faultRuns 1")
	cfg := h.configV1()
	cfg.CrawlerChannels = append(cfg.CrawlerChannels, k8s.CrawlerChannel{ID: "legacy", Image: crawlersim.Image + ":0.11.2", Protocol: k8s.ProtocolV011})
	h.startOperator(cfg)
	// Long enough (about 1.5 s) after the restart for the exit to be seen.
	seed := "https://example.com/?sim-pages=15&sim-page-ms=1000"
	v1 := h.startCrawl(crawlOpts{seed: seed})
	legacy := h.startCrawl(crawlOpts{seed: seed, spec: func(s *trawlerv1.CrawlJobSpec) { s.CrawlerChannel = "legacy" }})
	for _, id := range []string{v1, legacy} {
		if got := h.waitState(id, 90*time.Second, store.FinishedStates...); got != store.StateComplete {
			t.Fatalf("crawl %s ended %s", id, got)
		}
	}
	exits := func(id string) []map[string]any {
		var out []map[string]any
		for _, e := range h.crawlErrors(id) {
			if e["context"] == "k8s" {
				out = append(out, e)
			}
		}
		return out
	}
	h.waitFor("the exit line in the crawl's errors", 30*time.Second, func() bool { return len(exits(v1)) > 0 })
	lines := exits(v1)
	details, _ := lines[0]["details"].(map[string]any)
	if len(lines) != 1 || lines[0]["message"] != "Crawler Instance Exited: Error" || lines[0]["logLevel"] != "error" ||
		details["pod"] != k8s.CrawlerName(v1, 0) || details["exitCode"] != float64(1) || details["reason"] != "Error" {
		t.Errorf("exit lines %v", lines)
	}
	if lines := exits(legacy); len(lines) != 0 {
		t.Errorf("0.11 crawl got exit lines %v", lines)
	}
}
