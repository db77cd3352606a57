package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/trawlerhq/trawler/k8s"
)

// loadWith loads the settings from a YAML file holding yaml (none when
// empty), after env is set.
func loadWith(t *testing.T, yaml string, env map[string]string) (*k8s.CrawlerChannels, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	file := ""
	if yaml != "" {
		file = filepath.Join(t.TempDir(), "trawler.yaml")
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	BindConfigFlags(fs)
	v, err := LoadConfig(file, fs)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := CrawlerChannelsConfig(v)
	return &cs, err
}

// TestCrawlerChannelsSetting: without crawler.channels the one channel is
// default, of crawler.image, so existing deployments run as before; a
// YAML list and TRAWLER_CRAWLER_CHANNELS JSON both configure channels, an
// unset protocol is 0.11, and the operator's profile browsers take the
// default channel's image.
func TestCrawlerChannelsSetting(t *testing.T) {
	got, err := loadWith(t, "", map[string]string{"TRAWLER_CRAWLER_IMAGE": "example/crawler:0.11.2"})
	if err != nil {
		t.Fatal(err)
	}
	want := k8s.CrawlerChannels{{ID: "default", Image: "example/crawler:0.11.2", ImagePullPolicy: "Always", Protocol: "0.11"}}
	if d := cmp.Diff(want, *got); d != "" {
		t.Errorf("implicit default channel (-want +got):\n%s", d)
	}

	yaml := "crawler:\n  image: unused\n  channels:\n" +
		"    - {id: default, image: 'example/crawler:1.5', imagePullPolicy: IfNotPresent, protocol: '1.x'}\n" +
		"    - {id: old, image: 'example/crawler:0.11', protocol: 0.11}\n"
	got, err = loadWith(t, yaml, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = k8s.CrawlerChannels{
		{ID: "default", Image: "example/crawler:1.5", ImagePullPolicy: "IfNotPresent", Protocol: "1.x"},
		{ID: "old", Image: "example/crawler:0.11", Protocol: "0.11"},
	}
	if d := cmp.Diff(want, *got); d != "" {
		t.Errorf("YAML channels (-want +got):\n%s", d)
	}

	got, err = loadWith(t, "", map[string]string{"TRAWLER_CRAWLER_CHANNELS": `[{"id":"default","image":"a/b:1"},{"id":"test","image":"a/b:2","imagePullPolicy":"Never"}]`})
	if err != nil {
		t.Fatal(err)
	}
	want = k8s.CrawlerChannels{{ID: "default", Image: "a/b:1", Protocol: "0.11"}, {ID: "test", Image: "a/b:2", ImagePullPolicy: "Never", Protocol: "0.11"}}
	if d := cmp.Diff(want, *got); d != "" {
		t.Errorf("JSON channels (-want +got):\n%s", d)
	}

	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	BindConfigFlags(fs)
	v, err := LoadConfig("", fs)
	if err != nil {
		t.Fatal(err)
	}
	op, err := operatorConfig(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(op.CrawlerChannels) != 2 || op.CrawlerImage != "a/b:1" {
		t.Errorf("operator: channels %v, profile image %q", op.CrawlerChannels, op.CrawlerImage)
	}
}

// TestCrawlerChannelsRefused: a channel list trawler could not run stops
// the start with an error naming the setting and the problem.
func TestCrawlerChannelsRefused(t *testing.T) {
	for name, tc := range map[string]struct{ json, want string }{
		"NoDefault":    {`[{"id":"test","image":"a/b"}]`, `no channel has id "default"`},
		"Empty image":  {`[{"id":"default","image":" "}]`, "image is empty"},
		"PullPolicy":   {`[{"id":"default","image":"a/b","imagePullPolicy":"Sometimes"}]`, `imagePullPolicy "Sometimes"`},
		"Protocol":     {`[{"id":"default","image":"a/b","protocol":"2.0"}]`, `protocol "2.0"`},
		"Duplicate":    {`[{"id":"default","image":"a/b"},{"id":"default","image":"a/c"}]`, "id given twice"},
		"BadID":        {`[{"id":"default","image":"a/b"},{"id":"a b","image":"a/c"}]`, "id must be"},
		"UnknownField": {`[{"id":"default","image":"a/b","pullPolicy":"Always"}]`, "pullPolicy"},
		"NotAList":     {`{"id":"default"}`, "not a JSON list"},
		"WrongType":    {`[{"id":"default","image":5}]`, "not a JSON list"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadWith(t, "", map[string]string{"TRAWLER_CRAWLER_CHANNELS": tc.json})
			if err == nil || !strings.Contains(err.Error(), "crawler.channels") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming crawler.channels and %q", err, tc.want)
			}
		})
	}
	_, err := loadWith(t, "crawler:\n  channels:\n    - {id: default, image: a/b, imagepullpolicyy: Always}\n", nil)
	if err == nil || !strings.Contains(err.Error(), "crawler.channels") {
		t.Fatalf("unknown YAML key: %v", err)
	}
}
