package k8s

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The Helm chart is checked here because it carries this package's CRDs;
// chart_helm_test.go renders it with helm, and the tests at the
// repository root install and run the release.

var chartDir = filepath.Join("..", "deploy", "helm", "trawler")

func readChartTemplates(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no chart templates: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(data)
	}
	return out
}

func TestChartMetadataAndValuesParse(t *testing.T) {
	var chart struct {
		APIVersion string `json:"apiVersion"`
		Name       string `json:"name"`
		Version    string `json:"version"`
	}
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.APIVersion != "v2" || chart.Name != "trawler" || chart.Version == "" {
		t.Errorf("Chart.yaml = %+v", chart)
	}
	values := chartValues(t)
	for key, want := range map[string]any{
		"crawler_namespace": "crawlers", "max_crawl_scale": float64(3), "redis_storage": "3Gi",
		"grace_period_secs": float64(600), "crawler_storage": "22Gi",
	} {
		if values[key] != want {
			t.Errorf("values %s = %v, want the upstream default %v", key, values[key], want)
		}
	}
}

func chartValues(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	return values
}

// A misspelt value renders as empty without complaint from helm, nested
// ones (.Values.email.smtp_host) included.
func TestChartUsesOnlyDefinedValues(t *testing.T) {
	values := chartValues(t)
	ref := regexp.MustCompile(`\.Values\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)`)
	for name, text := range readChartTemplates(t) {
		for _, m := range ref.FindAllStringSubmatch(text, -1) {
			if !definesPath(values, strings.Split(m[1], ".")) {
				t.Errorf("%s uses .Values.%s, which values.yaml does not define", name, m[1])
			}
		}
	}
}

// definesPath reports whether values has the nested keys of path; a path
// that goes on past a value which is no map (a list, a string) is left
// to helm.
func definesPath(values map[string]any, path []string) bool {
	v, ok := values[path[0]]
	if !ok {
		return false
	}
	if m, isMap := v.(map[string]any); isMap && len(path) > 1 {
		return definesPath(m, path[1:])
	}
	return true
}

// trawler ignores unknown TRAWLER_* variables, so a wrong name would be a
// silent misconfiguration.
func TestChartEnvNamesAreConfigKeys(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := map[string]bool{}
	row := regexp.MustCompile("^\\| `([a-z0-9_.]+)` \\|")
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			known["TRAWLER_"+strings.ToUpper(strings.ReplaceAll(m[1], ".", "_"))] = true
		}
	}
	if len(known) == 0 {
		t.Fatal("no keys found in docs/configuration.md")
	}
	env := regexp.MustCompile(`TRAWLER_[A-Z0-9_]+`)
	for name, text := range readChartTemplates(t) {
		for _, v := range env.FindAllString(text, -1) {
			if !known[v] {
				t.Errorf("%s sets %s, which is no configuration key", name, v)
			}
		}
	}
}

func TestChartCrawlArgs(t *testing.T) {
	helpers := readChartTemplates(t)["_helpers.tpl"]
	// browsertrix-crawler 0.11 knows only this spelling; the upstream
	// commit message's --restartOnError would be ignored.
	if !strings.Contains(helpers, `" --restartsOnError"`) {
		t.Error("CRAWL_ARGS lacks --restartsOnError")
	}
	// Finished crawlers must exit, so their pods become Completed.
	if strings.Contains(helpers, "--waitOnDone") {
		t.Error("CRAWL_ARGS has --waitOnDone")
	}
}
