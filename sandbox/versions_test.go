package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trawlerhq/trawler/sandbox"
)

// The versions that name the testbin folder and its contents are spelled
// twice, in hack/testbin-dir.sh for the build and here for the tests.
func TestVersionsMatchTheBuildScript(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "hack", "testbin-dir.sh"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for line := range strings.Lines(string(script)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.ContainsAny(k, " #:") {
			vars[k] = v
		}
	}
	for name, want := range map[string]string{
		"KUBE_VERSION":     sandbox.KubeVersion,
		"ETCD_VERSION":     sandbox.EtcdVersion,
		"FERRETDB_VERSION": sandbox.FerretDBVersion,
		"RWP_VERSION":      sandbox.RWPVersion,
	} {
		if vars[name] != want {
			t.Errorf("hack/testbin-dir.sh: %s=%q, the sandbox says %q", name, vars[name], want)
		}
	}
	if dir := sandbox.ReplayWebPageDir(); filepath.Dir(dir) != sandbox.BinDir() || filepath.Base(dir) != "replaywebpage-"+sandbox.RWPVersion {
		t.Errorf("ReplayWebPageDir() = %s", dir)
	}
}
