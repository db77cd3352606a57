package e2etest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Root is the repository's root folder: the nearest folder above the
// working directory (go test runs in the package's folder) with a go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository: no go.mod above the working directory")
		}
		dir = parent
	}
}

// built is the trawler binary of this test process.
var built struct {
	once sync.Once
	path string
	err  error
}

// Build builds the trawler binary once per test process, static as `make
// build` builds it (without -trimpath, which would miss the build cache).
// RemoveBuild deletes it.
func Build() (string, error) {
	built.once.Do(func() {
		root, err := Root()
		if err != nil {
			built.err = err
			return
		}
		dir, err := os.MkdirTemp("", "trawler-bin-")
		if err != nil {
			built.err = fmt.Errorf("building trawler: %w", err)
			return
		}
		built.path = filepath.Join(dir, "trawler")
		cmd := exec.Command("go", "build", "-o", built.path, ".")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	return built.path, built.err
}

// Binary is Build for a test, which fails if the build does.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// RemoveBuild deletes the binary Build made, if any; TestMain calls it
// after the tests.
func RemoveBuild() {
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
}
