package k8s

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProxyFile: a missing file is no proxies; the list follows the file
// as it changes; an invalid edit is an error that keeps the list read
// last, so running crawls keep their proxies.
func TestProxyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawler_proxies.json")
	src := NewProxyFile(path, "")
	if list, err := src.Proxies(); err != nil || len(list) != 0 {
		t.Fatalf("missing file: %v %v", list, err)
	}
	write := func(s string, mod time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	write(`[{"id":"p1","url":"ssh://u@h:22","label":"P1","ssh_private_key":"K"}]`, t0)
	list, err := src.Proxies()
	if p, ok := list.Lookup("p1"); err != nil || !ok || !p.HasPrivateKey() || p.HasHostPublicKey() {
		t.Fatalf("p1: %+v %v", list, err)
	}
	write(`[{"id":"p2","url":"socks5://h:1080","label":"P2"}]`, t0.Add(time.Second))
	if list, err := src.Proxies(); err != nil || len(list) != 1 || list[0].ID != "p2" {
		t.Fatalf("after the edit: %+v %v", list, err)
	}
	write(`[{"id":"P 3","url":"ftp://h","label":""}]`, t0.Add(2*time.Second))
	list, err = src.Proxies()
	if err == nil || len(list) != 1 || list[0].ID != "p2" {
		t.Fatalf("invalid edit: %+v %v", list, err)
	}
	for _, want := range []string{"id must be", "url must be", "label is empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if list, err := src.Proxies(); err != nil || len(list) != 0 {
		t.Fatalf("removed file: %v %v", list, err)
	}
	var none *ProxySource
	if list, err := none.Proxies(); err != nil || list != nil || none.DefaultID() != "" {
		t.Fatal("a nil source has proxies")
	}
}

// TestCrawlerProxiesValidate: every problem is named, and the default
// proxy must be in the list.
func TestCrawlerProxiesValidate(t *testing.T) {
	ok := CrawlerProxies{{ID: "p1", URL: "ssh://u@h:22", Label: "P1"}, {ID: "s-2", URL: "socks5://h:1", Label: "S2"}}
	if err := ok.Validate("s-2"); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		list CrawlerProxies
		def  string
		want string
	}{
		"duplicate": {append(ok, ok[0]), "", "id given twice"},
		"upper":     {CrawlerProxies{{ID: "P1", URL: "ssh://h", Label: "x"}}, "", "id must be"},
		"scheme":    {CrawlerProxies{{ID: "p1", URL: "https://h", Label: "x"}}, "", "url must be"},
		"no host":   {CrawlerProxies{{ID: "p1", URL: "socks5://", Label: "x"}}, "", "url must be"},
		"default":   {ok, "p9", `default proxy "p9" is not in the list`},
	} {
		if err := tc.list.Validate(tc.def); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if _, err := ParseCrawlerProxies([]byte(`[{"id":"p1","url":"ssh://h","label":"x","sshKey":"k"}]`)); err == nil {
		t.Error("an unknown key was accepted")
	}
}
