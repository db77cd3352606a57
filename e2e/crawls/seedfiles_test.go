package crawls

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

// TestSeedFileCrawl (upstream-2026.md §8.4 item 5): a workflow on the 1.x
// channel crawls from an uploaded seed file: its CrawlJob gets a
// presigned spec.seedFileUrl, crawl-config-<id> has it as seedFile and no
// seedFileId, the crawler simulator downloads it, and the crawl's pages
// are exactly the file's URLs. The file cannot be deleted while its
// workflow and crawl use it.
func TestSeedFileCrawl(t *testing.T) {
	stack := sharedStack(t)
	c := newClient(t, stack)
	c.inNewOrg("seed files")
	urls := []string{"https://specs.webrecorder.net/", "https://old.webrecorder.net/", "https://example.com/third?sim-pages=5"}
	code, data := c.Send("PUT", c.Org("/files/seedFile?filename=seeds.txt"), strings.NewReader(strings.Join(urls, "\n")+"\n"), "text/plain")
	var added struct {
		Added bool
		ID    string
	}
	if err := json.Unmarshal(data, &added); err != nil || code != 200 || !added.Added {
		t.Fatalf("upload: %d %s", code, data)
	}
	out := c.Object("POST", c.Org("/crawlconfigs/"), map[string]any{"name": "from a file", "runNow": true, "crawlerChannel": "test",
		"config": map[string]any{"seedFileId": added.ID}}, 200)
	id, _ := out["run_now_job"].(string)
	if id == "" {
		t.Fatalf("no crawl started: %v", out)
	}

	ns := stack.Config.GetString("crawler_namespace")
	jobs := versioned.NewForConfigOrDie(stack.Env.Cluster.Config).TrawlerV1().CrawlJobs(ns)
	cj, err := jobs.Get(t.Context(), k8s.CrawlJobName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	link := cj.Spec.SeedFileURL
	if !strings.Contains(link, "/seedFiles/seedFile-"+added.ID+"-") || !strings.Contains(link, "X-Amz-Signature=") {
		t.Fatalf("spec.seedFileUrl %q", link)
	}
	cm, err := stack.Env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), k8s.CrawlConfigMapName(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(cm.Data[k8s.ConfigMapKey]), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["seedFile"] != link || cfg["seedFileId"] != nil || cfg["scopeType"] != "page" {
		t.Fatalf("%s: %s", cm.Name, cm.Data[k8s.ConfigMapKey])
	}
	e2etest.WaitFor(t, time.Minute, "the file to be refused deletion while in use", func() (bool, error) {
		code, body := c.Send("DELETE", c.Org("/files/"+added.ID), nil, "application/json")
		return code == 400 && strings.Contains(string(body), "seed_file_in_use"), nil
	})

	crawl := c.waitCrawl(id)
	if crawl["state"] != "complete" {
		t.Fatalf("crawl ended %v", crawl["state"])
	}
	replay := c.Object("GET", c.Org("/crawls/"+id+"/replay.json"), nil, 200)
	var pages []string
	for _, r := range replay["resources"].([]any) {
		w, err := wacztest.Inspect(e2etest.Download(t, stack.APIURL, r.(map[string]any)["path"].(string)))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, w.Pages...)
	}
	slices.Sort(pages)
	want := slices.Clone(urls)
	slices.Sort(want)
	if !slices.Equal(pages, want) {
		t.Fatalf("pages %v, want the seed file's URLs %v", pages, want)
	}
	if code, body := c.Send("DELETE", c.Org("/files/"+added.ID), nil, "application/json"); code != 400 || !strings.Contains(string(body), "seed_file_in_use") {
		t.Fatalf("delete of a file in use: %d %s", code, body)
	}
}
