package devstack

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteEnv pins the format of .dev/env, which people source and
// scripts parse: one export per variable, sorted, values quoted as Go
// quotes them (which a shell reads back the same for what the stack
// writes: URLs, paths, keys).
func TestWriteEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env")
	err := WriteEnv(path, map[string]string{
		"TRAWLER_API_URL": "http://127.0.0.1:8000",
		"KUBECONFIG":      "/work/.dev/sandbox/kubeconfig",
		"S3_BUCKET":       Bucket,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `export KUBECONFIG="/work/.dev/sandbox/kubeconfig"
export S3_BUCKET="trawler-data"
export TRAWLER_API_URL="http://127.0.0.1:8000"
`
	if string(got) != want {
		t.Errorf("env file:\n%s\nwant:\n%s", got, want)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("env file mode %v (%v), want 0600: it holds credentials", info.Mode().Perm(), err)
	}
}
