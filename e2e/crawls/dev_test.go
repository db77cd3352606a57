package crawls

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/e2e/e2etest"
)

// TestDevStartsAndStopsCleanly runs `trawler dev` as a user would: it must
// come up, answer /readyz, and leave no process behind after Ctrl-C.
func TestDevStartsAndStopsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts trawler dev")
	}
	dir := t.TempDir()
	dev := startDev(t, dir)
	// What the README says .dev/env exports.
	want := []string{"TRAWLER_API_URL", "KUBECONFIG", "TRAWLER_MONGO_URI", "MONGO_URI", "TRAWLER_REDIS_URL",
		"REDIS_URL", "TRAWLER_USERNAME", "TRAWLER_PASSWORD", "MAILPIT_URL", "S3_ENDPOINT_URL", "S3_BUCKET",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
	for _, name := range want {
		if dev.Env[name] == "" {
			t.Errorf("the env file has no %s", name)
		}
	}
	if len(dev.Env) != len(want) {
		t.Errorf("the env file has %d variables, want %d: %v", len(dev.Env), len(want), slices.Sorted(maps.Keys(dev.Env)))
	}
	if err := dev.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if left := processesMentioning(t, dir); len(left) > 0 {
		t.Fatalf("processes left behind: %s", strings.Join(left, "; "))
	}
}

// startDev starts `trawler dev` with its files in dir and a single node,
// its output in the test's, and waits until its API answers /readyz.
// Cleanup kills it if the test did not interrupt it.
func startDev(t *testing.T, dir string) *e2etest.Dev {
	t.Helper()
	dev, err := e2etest.StartDev(e2etest.Binary(t), filepath.Join(dir, "dev"), 1, os.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Kill)
	return dev
}

// processesMentioning lists live processes whose command line contains
// dir: every sandbox process gets its files from there.
func processesMentioning(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}
