package main

import (
	"bufio"
	"context"
	"debug/elf"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	// packageCleanups run after every test, for what tests share.
	packageCleanups []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range packageCleanups {
		f()
	}
	stopE2E()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// buildTrawler builds the binary once per test run, static as `make build`
// builds it (without -trimpath, which would miss the build cache).
func buildTrawler(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trawler-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "trawler")
		cmd := exec.Command("go", "build", "-o", builtBin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestBinaryIsStatic(t *testing.T) {
	f, err := elf.Open(buildTrawler(t))
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

// TestDevStartsAndStopsCleanly runs `trawler dev` as a user would: it must
// come up, answer /readyz, and leave no process behind after Ctrl-C.
func TestDevStartsAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	dev := startDev(t, dir)
	dev.interrupt(t)
	if left := processesMentioning(t, dir); len(left) > 0 {
		t.Fatalf("processes left behind: %s", strings.Join(left, "; "))
	}
}

// devProcess is a running `trawler dev`.
type devProcess struct {
	cmd    *exec.Cmd
	exited chan error
	apiURL string
}

// startDev starts `trawler dev` with its files in dir and a single node,
// and waits until its API answers /readyz. Cleanup kills it if the test
// did not interrupt it.
func startDev(t *testing.T, dir string) *devProcess {
	t.Helper()
	cmd := exec.Command(buildTrawler(t), "dev", "--dir", filepath.Join(dir, "dev"), "--api.listen", "127.0.0.1:0", "--nodes", "1")
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &devProcess{cmd: cmd, exited: make(chan error, 1)}
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	d.apiURL = waitForEnv(t, filepath.Join(dir, "dev", "env"), d.exited)
	waitReady(t, d.apiURL+"/readyz", d.exited)
	return d
}

// interrupt sends Ctrl-C and waits for a clean exit.
func (d *devProcess) interrupt(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		if err != nil {
			t.Fatalf("trawler dev exited with %v after SIGINT", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("trawler dev did not exit within 60s of SIGINT")
	}
}

func waitForEnv(t *testing.T, path string, exited <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("trawler dev exited early: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "export TRAWLER_API_URL="); ok {
				f.Close()
				return strings.Trim(v, `"`)
			}
		}
		f.Close()
	}
	t.Fatalf("%s not written within 3 minutes", path)
	return ""
}

func waitReady(t *testing.T, url string, exited <-chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("trawler dev exited before ready: %v", err)
		case <-ctx.Done():
			t.Fatalf("%s did not answer 200 within 2 minutes", url)
		case <-time.After(200 * time.Millisecond):
		}
	}
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
