package crawlersim

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSplitCrawlArgs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`--workers 2 --text false`, []string{"--workers", "2", "--text", "false"}},
		// An empty "" does not match the quoted form: it stays two quotes.
		{`--userAgentSuffix "" --userAgent ""`, []string{"--userAgentSuffix", `""`, "--userAgent", `""`}},
		{`--exclude "a b" --x`, []string{"--exclude", "a b", "--x"}},
		{"  --a\t1\n--b  ", []string{"--a", "1", "--b"}},
		{`--rx "/sim/[0-9]*7$"`, []string{"--rx", "/sim/[0-9]*7$"}},
		{``, nil},
	} {
		if got := splitCrawlArgs(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitCrawlArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv string
		want map[string]any
	}{
		{"space and equals", "crawl --workers 2 --collection=thecrawl", map[string]any{"workers": "2", "collection": "thecrawl"}},
		{"bare booleans", "--generateWACZ --logErrorsToRedis --restartsOnError", map[string]any{"generateWACZ": true, "logErrorsToRedis": true, "restartsOnError": true}},
		{"boolean values", "--text false --generateWACZ true --no-headless", map[string]any{"text": false, "generateWACZ": true, "headless": false}},
		{"boolean does not eat a value", "--generateWACZ thecrawl", map[string]any{"generateWACZ": true}},
		{"aliases and kebab case", "--id x --limit 5 --crawl-id y -c coll", map[string]any{"crawlId": []any{"x", "y"}, "pageLimit": "5", "collection": "coll"}},
		{"repeated flags become lists", "--exclude a --exclude b", map[string]any{"scopeExcludeRx": []any{"a", "b"}}},
		{"arrays take several values", "--seeds https://a/ https://b/ --workers 1", map[string]any{"seeds": []any{"https://a/", "https://b/"}, "workers": "1"}},
		{"unknown flags kept, never validated", "--restartOnError --frobnicate 3", map[string]any{"restartOnError": true, "frobnicate": "3"}},
		{"sim knobs", "--sim.pages=5 --sim.page-ms 20 --sim.fatalAtStart", map[string]any{"sim.pages": "5", "sim.pageMs": "20", "sim.fatalAtStart": true}},
		{"empty quoted value", `--userAgent ""`, map[string]any{"userAgent": `""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseArgv(splitCrawlArgs(tc.argv)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseArgv(%q) = %#v, want %#v", tc.argv, got, tc.want)
			}
		})
	}
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	yaml := "seeds:\n  - url: https://example.com/\n    depth: 1\n  - https://example.org/\nworkers: 4\nlimit: 50\ncollection: fromfile\nscopeType: host\nexclude: [logout]\n"
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := loadConfigFile(filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cli := parseArgv(splitCrawlArgs(`crawl --config c.yaml --workers 2 --maxPageLimit 20 --collection thecrawl`))
	env := map[string]string{"CRAWL_ID": "cid"}
	p, err := newParams(mergeOptions(cli, file), env, "crawl-cid-0", "20230911173000123")
	if err != nil {
		t.Fatal(err)
	}
	if p.workers != 2 || p.collection != "thecrawl" || p.pageLimit != 20 || p.crawlID != "cid" {
		t.Errorf("workers %d collection %q limit %d id %q: want CLI over file (2, thecrawl), min(50, 20), CRAWL_ID",
			p.workers, p.collection, p.pageLimit, p.crawlID)
	}
	if len(p.seeds) != 2 || p.seeds[0].maxDepth != 1 || p.seeds[1].maxDepth != noDepthLimit || p.seeds[1].scopeType != "host" {
		t.Fatalf("seeds %+v", p.seeds)
	}
	if len(p.seeds[0].exclude) != 1 || p.seeds[0].exclude[0].String() != "logout" {
		t.Errorf("exclude %v, want the global exclusion on every seed", p.seeds[0].exclude)
	}
}

func TestParamDefaults(t *testing.T) {
	p, err := newParams(map[string]any{"seeds": []any{"https://example.com"}}, nil, "host-1", "20230911173000123")
	if err != nil {
		t.Fatal(err)
	}
	if p.crawlID != "host-1" || p.collection != "crawl-20230911173000123" || p.workers != 1 || p.maxPageTime != 250 ||
		p.redisURL != "redis://localhost:6379/0" || p.seeds[0].url != "https://example.com/" || p.sim.site.pages != 20 ||
		p.sim.bootDelay != time.Second {
		t.Errorf("defaults: %+v", p)
	}
}

// TestErrorPageFlags: the --sim.* flags for HTTP error pages and noise set
// the crawl's defaults, which a seed's own query parameters then override.
func TestErrorPageFlags(t *testing.T) {
	p, err := newParams(map[string]any{"seeds": []any{"https://example.com/"}, "sim.httpError": "0.3",
		"sim.httpStatus": "503", "sim.statusUrlRx": "/sim/2$", "sim.urlStatus": "410", "sim.noise": "0.2"}, nil, "h", "1")
	if err != nil {
		t.Fatal(err)
	}
	site := p.sim.site
	if site.httpError != 0.3 || site.httpStatus != 503 || site.statusURL == nil || site.statusURL.String() != "/sim/2$" ||
		site.urlStatus != 410 || site.noise != 0.2 {
		t.Errorf("site knobs from flags: %+v", site)
	}
}

func TestEffectiveLimit(t *testing.T) {
	for _, tc := range []struct{ limit, max, want int }{
		{0, 0, 0}, {10, 0, 10}, {0, 10, 10}, {5, 10, 5}, {10, 5, 5},
	} {
		if got := effectiveLimit(tc.limit, tc.max); got != tc.want {
			t.Errorf("effectiveLimit(%d, %d) = %d, want %d", tc.limit, tc.max, got, tc.want)
		}
	}
}

func TestParamErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]any
		want string
	}{
		{"no seeds", map[string]any{}, "no valid seeds"},
		{"only invalid seeds", map[string]any{"seeds": []any{"ftp://x/", "not a url"}}, "no valid seeds"},
		{"bad collection", map[string]any{"seeds": []any{"https://x/"}, "collection": "a b"}, "invalid collection"},
		{"unknown knob", map[string]any{"seeds": []any{"https://x/"}, "sim.nope": "1"}, "unknown simulator option"},
		{"bad knob value", map[string]any{"seeds": []any{"https://x/"}, "sim.pages": "many"}, "sim.pages"},
		{"bad time scale", map[string]any{"seeds": []any{"https://x/"}, "sim.timeScale": "0"}, "timeScale"},
		{"status not an error", map[string]any{"seeds": []any{"https://x/"}, "sim.httpStatus": "302"}, "not an error status"},
		{"bad status pattern", map[string]any{"seeds": []any{"https://x/"}, "sim.statusUrlRx": "("}, "sim.statusUrlRx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newParams(tc.opts, nil, "h", "1")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestKnobDocs keeps the option table in doc.go in step with the parser.
func TestKnobDocs(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range knobTable {
		def := k.def
		if def == "" {
			def = `""`
		}
		rx := regexp.MustCompile(`(?m)^//\s+` + regexp.QuoteMeta(k.name) + `\s+` + regexp.QuoteMeta(def) + `\s`)
		if !rx.Match(doc) {
			t.Errorf("doc.go does not list %s with default %s", k.name, def)
		}
	}
}

func TestSeedKnobs(t *testing.T) {
	def := siteKnobs{pages: 20, links: 3, pageMs: 100, bytes: 50000, httpStatus: 500, urlStatus: 404}
	got, bad := seedKnobs(def, "https://x/?sim-pages=5&sim-links=2&sim-page-ms=7.5&sim-fail=0.25&sim-bytes=9"+
		"&sim-http-error=0.3&sim-http-status=502&sim-status-rx=%2Fsim%2F1%24&sim-url-status=410&sim-noise=0.5")
	if got.statusURL == nil || got.statusURL.String() != "/sim/1$" || bad != nil {
		t.Fatalf("seedKnobs = %+v %v, want the pattern /sim/1$", got, bad)
	}
	got.statusURL = nil
	want := siteKnobs{pages: 5, links: 2, pageMs: 7.5, fail: 0.25, bytes: 9, httpError: 0.3, httpStatus: 502, urlStatus: 410, noise: 0.5}
	if got != want {
		t.Errorf("seedKnobs = %+v, want %+v", got, want)
	}
	for _, query := range []string{"sim-pages=lots", "sim-http-status=200", "sim-url-status=abc", "sim-status-rx=%28"} {
		if got, bad := seedKnobs(def, "https://x/?sim-links=2&"+query); got != def || len(bad) != 1 {
			t.Errorf("%s: %+v %v, want defaults and one complaint", query, got, bad)
		}
	}
}
