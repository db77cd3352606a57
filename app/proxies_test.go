package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/trawlerhq/trawler/k8s"
)

// loadProxies loads the settings from a YAML file holding yaml (none when
// empty), after env is set, and reads the proxies from them.
func loadProxies(t *testing.T, yaml string, env map[string]string) (*k8s.ProxySource, error) {
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
	return CrawlerProxiesConfig(v)
}

// TestCrawlerProxiesSetting: no proxies by default; a YAML list,
// TRAWLER_CRAWLER_PROXIES JSON and a proxies file all configure them,
// with the default proxy; the operator gets them and the match-hosts
// flag.
func TestCrawlerProxiesSetting(t *testing.T) {
	src, err := loadProxies(t, "", nil)
	if list, lerr := src.Proxies(); err != nil || lerr != nil || len(list) != 0 || src.DefaultID() != "" {
		t.Fatalf("default: %v %v %v", list, err, lerr)
	}
	src, err = loadProxies(t, "crawler:\n  default_proxy: p1\n  proxies:\n"+
		"    - {id: p1, url: 'ssh://u@h:22', label: P1, ssh_private_key: K}\n", nil)
	if list, _ := src.Proxies(); err != nil || len(list) != 1 || !list[0].HasPrivateKey() || src.DefaultID() != "p1" {
		t.Fatalf("YAML: %+v %v", list, err)
	}
	src, err = loadProxies(t, "", map[string]string{"TRAWLER_CRAWLER_PROXIES": `[{"id":"s1","url":"socks5://h:1080","label":"S1","shared":true}]`})
	if list, _ := src.Proxies(); err != nil || len(list) != 1 || !list[0].Shared {
		t.Fatalf("JSON: %+v %v", list, err)
	}

	file := filepath.Join(t.TempDir(), "crawler_proxies.json")
	if err := os.WriteFile(file, []byte(`[{"id":"p1","url":"http://h:3128","label":"P1"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRAWLER_CRAWLER_PROXIES", "")
	t.Setenv("TRAWLER_CRAWLER_PROXIES_FILE", file)
	t.Setenv("TRAWLER_CRAWLER_PROXY_MATCH_HOSTS", "true")
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
	if list, _ := op.CrawlerProxies.Proxies(); len(list) != 1 || list[0].ID != "p1" || !op.ProxyMatchHosts {
		t.Fatalf("operator: %+v, match hosts %v", list, op.ProxyMatchHosts)
	}
}

// TestCrawlerProxiesRefused: a proxy list trawler could not use stops
// the start with an error naming the setting and the problem.
func TestCrawlerProxiesRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "crawler_proxies.json")
	if err := os.WriteFile(file, []byte(`[{"id":"p1","url":"http://h:3128","label":"P1"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"id":"p1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"BadID":         {map[string]string{"TRAWLER_CRAWLER_PROXIES": `[{"id":"P1","url":"ssh://h","label":"x"}]`}, "crawler.proxies: proxy 0"},
		"UnknownKey":    {map[string]string{"TRAWLER_CRAWLER_PROXIES": `[{"id":"p1","url":"ssh://h","label":"x","key":"k"}]`}, "crawler.proxies"},
		"NoDefault":     {map[string]string{"TRAWLER_CRAWLER_DEFAULT_PROXY": "p9"}, `default proxy "p9" is not in the list`},
		"FileNoDefault": {map[string]string{"TRAWLER_CRAWLER_PROXIES_FILE": file, "TRAWLER_CRAWLER_DEFAULT_PROXY": "p9"}, "crawler.proxies_file"},
		"BadFile":       {map[string]string{"TRAWLER_CRAWLER_PROXIES_FILE": bad}, "crawler.proxies_file"},
		"Both": {map[string]string{"TRAWLER_CRAWLER_PROXIES_FILE": file,
			"TRAWLER_CRAWLER_PROXIES": `[{"id":"p1","url":"ssh://h","label":"x"}]`}, "both set"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadProxies(t, "", tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one with %q", err, tc.want)
			}
		})
	}
}
