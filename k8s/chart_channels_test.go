package k8s_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/sandbox"
)

// TestChartCrawlerChannels: crawler_channels reaches trawler as
// TRAWLER_CRAWLER_CHANNELS JSON (by default a 1.x default channel and a
// 0.11 legacy one), and the values schema refuses a channel trawler
// could not run.
func TestChartCrawlerChannels(t *testing.T) {
	var defaults k8s.CrawlerChannels
	raw := renderChart(t, "")["ConfigMap/trawler-env-config"].Data["TRAWLER_CRAWLER_CHANNELS"]
	if err := json.Unmarshal([]byte(raw), &defaults); err != nil {
		t.Fatalf("default TRAWLER_CRAWLER_CHANNELS %q: %v", raw, err)
	}
	if d, _ := defaults.Lookup(k8s.DefaultChannel); d.Protocol != k8s.ProtocolV1 {
		t.Errorf("default channel %+v, want protocol 1.x", d)
	}
	if l, _ := defaults.Lookup("legacy"); l.Protocol != k8s.ProtocolV011 {
		t.Errorf("legacy channel %+v, want protocol 0.11", l)
	}
	objects := renderChart(t, `crawler_channels:
  - {id: default, image: "webrecorder/browsertrix-crawler:0.11.2", protocol: "0.11"}
  - {id: test, image: "webrecorder/browsertrix-crawler:edge", imagePullPolicy: IfNotPresent, protocol: "1.x"}
`)
	var got k8s.CrawlerChannels
	raw = objects["ConfigMap/trawler-env-config"].Data["TRAWLER_CRAWLER_CHANNELS"]
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("TRAWLER_CRAWLER_CHANNELS %q: %v", raw, err)
	}
	want := k8s.CrawlerChannels{
		{ID: "default", Image: "webrecorder/browsertrix-crawler:0.11.2", Protocol: "0.11"},
		{ID: "test", Image: "webrecorder/browsertrix-crawler:edge", ImagePullPolicy: "IfNotPresent", Protocol: "1.x"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("channels (-want +got):\n%s", d)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("rendered channels invalid: %v", err)
	}

	helm, err := sandbox.Bin("helm")
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range map[string]string{
		"protocol":   `crawler_channels: [{id: default, image: a/b, protocol: "2.0"}]`,
		"pullPolicy": `crawler_channels: [{id: default, image: a/b, imagePullPolicy: Sometimes}]`,
		"noImage":    `crawler_channels: [{id: default}]`,
		"unknownKey": `crawler_channels: [{id: default, image: a/b, pull: Always}]`,
		"badID":      `crawler_channels: [{id: "a b", image: a/b}]`,
	} {
		file := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(helm, "template", "t", filepath.Join("..", "deploy", "helm", "trawler"),
			"--namespace", "trawler", "--values", file).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "crawler_channels") {
			t.Errorf("%s: helm template accepted %s: %v\n%.300s", name, values, err, out)
		}
	}
}
