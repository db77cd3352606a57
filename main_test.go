package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBinaryIsStatic builds the binary as `make build` does (without
// -trimpath, which would miss the build cache) and checks that it needs
// no dynamic loader: the image is FROM scratch.
func TestBinaryIsStatic(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "trawler")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("binary has a %v program header: it is dynamically linked", p.Type)
		}
	}
}
