package app

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md")

// chartDir is the Helm chart, whose values must agree with the settings.
var chartDir = filepath.Join("..", "deploy", "helm", "trawler")

// TestConfigurationDoc keeps docs/configuration.md, the one reference of
// every key, in step with the settings table. Run with -update to rewrite it.
func TestConfigurationDoc(t *testing.T) {
	var b strings.Builder
	b.WriteString(`# Configuration reference

trawler reads its configuration, from lowest to highest precedence, from the defaults
below, a YAML file (` + "`--config trawler.yaml`" + `, nested keys as written), environment
variables (` + "`TRAWLER_`" + ` + the key in upper case with dots as underscores, e.g.
` + "`TRAWLER_MONGO_URI`" + `) and command-line flags (` + "`--mongo.uri`" + `). Unknown keys in the file
are an error. ` + "`trawler serve --api=false`" + ` or ` + "`--operator=false`" + ` runs one role alone.

This file is generated from app/config.go by ` + "`go test ./app/ -run TestConfigurationDoc -update`" + `.

| key | default | meaning |
|---|---|---|
`)
	for _, s := range settings {
		def := fmt.Sprint(s.def)
		if str, ok := s.def.(string); ok {
			def = fmt.Sprintf("%q", str)
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", s.key, def, s.help)
	}
	path := filepath.Join("..", "docs", "configuration.md")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != b.String() {
		t.Fatalf("%s is stale; run go test ./app/ -run TestConfigurationDoc -update", path)
	}
}

func TestLoadConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trawler.yaml")
	yaml := "mongo:\n  uri: mongodb://file\n  database: fromfile\napi:\n  listen: \":1\"\noperator:\n  resync: 1m\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRAWLER_MONGO_DATABASE", "fromenv")
	t.Setenv("TRAWLER_API_LISTEN", ":2")

	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	BindConfigFlags(fs)
	if err := fs.Parse([]string{"--api.listen=:3", "--operator=false"}); err != nil {
		t.Fatal(err)
	}
	v, err := LoadConfig(file, fs)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"mongo.uri":        "mongodb://file", // file over default
		"mongo.database":   "fromenv",        // env over file
		"api.listen":       ":3",             // flag over env
		"operator.enabled": false,            // role alias
		"api.enabled":      true,             // default
		"operator.resync":  time.Minute,
	} {
		var got any
		switch want.(type) {
		case string:
			got = v.GetString(key)
		case bool:
			got = v.GetBool(key)
		case time.Duration:
			got = v.GetDuration(key)
		}
		if got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
}

func TestLoadConfigRejectsUnknownKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "trawler.yaml")
	if err := os.WriteFile(file, []byte("mongo:\n  url: typo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	BindConfigFlags(fs)
	_, err := LoadConfig(file, fs)
	if err == nil || !strings.Contains(err.Error(), "mongo.url") {
		t.Fatalf("err = %v, want one naming mongo.url", err)
	}
}

// The chart's email and webhooks blocks hold settings of the same names
// (email.smtp_host is TRAWLER_EMAIL_SMTP_HOST), so an install that sets
// none of them must behave as the binary's defaults say, and every
// setting of those groups must be settable through the chart.
func TestChartBlocksKeepSettingDefaults(t *testing.T) {
	values := chartValues(t)
	for _, group := range []string{"email", "webhooks"} {
		block, ok := values[group].(map[string]any)
		if !ok {
			t.Errorf("values.yaml has no %s block", group)
			continue
		}
		for _, s := range settings {
			name, ok := strings.CutPrefix(s.key, group+".")
			if !ok {
				continue
			}
			v, ok := block[name]
			if !ok {
				t.Errorf("values.yaml lacks %s", s.key)
				continue
			}
			delete(block, name)
			if got := chartValueAs(v, s.def); got != s.def {
				t.Errorf("values.yaml %s = %v, want the binary's default %v", s.key, v, s.def)
			}
		}
		for name := range block {
			t.Errorf("values.yaml %s.%s is no setting", group, name)
		}
	}
}

// Top-level chart values that stand for one setting each keep its default
// too, so leaving them out of a values file changes nothing.
func TestChartValuesKeepSettingDefaults(t *testing.T) {
	values := chartValues(t)
	defaults := map[string]any{}
	for _, s := range settings {
		defaults[s.key] = s.def
	}
	for name, key := range map[string]string{"app_origin": "api.app_origin"} {
		def, ok := defaults[key]
		if !ok {
			t.Errorf("%s is no setting", key)
			continue
		}
		v, ok := values[name]
		if !ok {
			t.Errorf("values.yaml lacks %s (%s)", name, key)
			continue
		}
		if chartValueAs(v, def) != def {
			t.Errorf("values.yaml %s = %#v, want %#v, the binary's default of %s", name, v, def, key)
		}
	}
}

// chartValues is the chart's values.yaml as YAML decodes it into JSON types.
func chartValues(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	return values
}

// chartValueAs reads a value as YAML decodes it into JSON types in the
// type of def; nil where it cannot.
func chartValueAs(v, def any) any {
	switch def.(type) {
	case int:
		if f, ok := v.(float64); ok && f == float64(int(f)) {
			return int(f)
		}
	case time.Duration:
		if s, ok := v.(string); ok {
			if d, err := time.ParseDuration(s); err == nil {
				return d
			}
		}
	case string, bool:
		return v
	}
	return nil
}
