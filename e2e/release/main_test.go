package release

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/trawlerhq/trawler/e2e/e2etest"
)

// root is the repository's folder, where the chart, the compose file, the
// Makefile and the Dockerfile are.
var root string

func TestMain(m *testing.M) {
	var err error
	if root, err = e2etest.Root(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	chartDir = filepath.Join(root, "deploy", "helm", "trawler")
	code := m.Run()
	if sharedRelease != nil {
		sharedRelease.env.Stop()
		os.RemoveAll(sharedRelease.home)
	}
	e2etest.RemoveBuild()
	os.Exit(code)
}
