package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md")

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

This file is generated from config.go by ` + "`go test -run TestConfigurationDoc -update .`" + `.

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
	path := filepath.Join("docs", "configuration.md")
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
		t.Fatalf("%s is stale; run go test -run TestConfigurationDoc -update .", path)
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
	bindConfigFlags(fs)
	if err := fs.Parse([]string{"--api.listen=:3", "--operator=false"}); err != nil {
		t.Fatal(err)
	}
	v, err := loadConfig(file, fs)
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
	bindConfigFlags(fs)
	_, err := loadConfig(file, fs)
	if err == nil || !strings.Contains(err.Error(), "mongo.url") {
		t.Fatalf("err = %v, want one naming mongo.url", err)
	}
}
