package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

// RWPVersion is the ReplayWeb.page release the replay tests run;
// hack/testbin-dir.sh has the same value.
const RWPVersion = "2.5.3"

// ReplayWebPageDir returns the folder that holds ReplayWeb.page's
// prebuilt ui.js and sw.js (and its LICENSE), taken from its npm package
// by hack/setup-testenv.sh: replaywebpage-<RWPVersion>/ in BinDir. Serve
// it as the replay base URL (replay.base_url) to replay without the
// public site.
func ReplayWebPageDir() string {
	return filepath.Join(BinDir(), "replaywebpage-"+RWPVersion)
}

// ReplayWebPage returns ReplayWebPageDir, or ErrBinaryMissing when its
// files have not been fetched.
func ReplayWebPage() (string, error) {
	dir := ReplayWebPageDir()
	for _, f := range []string{"ui.js", "sw.js"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("ReplayWeb.page %s in %s: %w", f, dir, ErrBinaryMissing)
		}
	}
	return dir, nil
}
