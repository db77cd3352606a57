package e2e

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// stack is the `trawler dev` the package's tests share.
var stack struct {
	url      string // the API and dashboard
	user     string
	password string
	// artifacts is where screenshots and downloads go.
	artifacts string
	// browser is the allocator of the package's one Chromium.
	browser context.Context
	// err says why the stack is missing; tests fail with it.
	err error
}

// chromium is Debian's package, which `make testbin` installs.
const chromium = "/usr/bin/chromium"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: -short: no stack, no browser")
		return m.Run()
	}
	start := time.Now()
	dir, err := os.MkdirTemp("", "trawler-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	stack.artifacts = artifactsDir()
	fmt.Printf("e2e: screenshots and downloads in %s\n", stack.artifacts)

	if url := os.Getenv("TRAWLER_E2E_URL"); url != "" {
		// A running `make dev` (its superuser), e.g. to look at what the
		// tests do while they run.
		stack.url, stack.user, stack.password = url, "admin@example.com", "PASSW0RD!"
		fmt.Printf("e2e: using the stack at %s\n", url)
	} else {
		stop, err := startDev(dir)
		if err != nil {
			stack.err = err
			return m.Run() // every test fails with the reason
		}
		defer stop()
		fmt.Printf("e2e: trawler dev up at %s after %v\n", stack.url, time.Since(start).Round(100*time.Millisecond))
	}

	if _, err := os.Stat(chromium); err != nil {
		stack.err = fmt.Errorf("%s is missing (make testbin installs Debian's chromium): %w", chromium, err)
		return m.Run()
	}
	// The flags this machine needs (machines/go.md): headless, no sandbox
	// as root, nothing that reaches for the network by itself.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "chromium")),
		chromedp.WindowSize(1280, 900),
	)
	browser, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	stack.browser = browser
	code := m.Run()
	fmt.Printf("e2e: screenshots and downloads in %s\n", stack.artifacts)
	return code
}

// artifactsDir is a fresh folder for this run's screenshots.
func artifactsDir() string {
	root := os.Getenv("TRAWLER_ARTIFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "trawler-artifacts")
	}
	dir := filepath.Join(root, "e2e")
	_ = os.RemoveAll(dir)
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// needStack fails a test when the stack could not start.
func needStack(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no stack")
	}
	if stack.err != nil {
		t.Fatal(stack.err)
	}
}

// startDev builds trawler and runs `trawler dev` in dir, as `make dev`
// does but on a free port, until stop.
func startDev(dir string) (stop func(), err error) {
	bin := filepath.Join(dir, "trawler")
	build := exec.Command("go", "build", "-o", bin, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	log, err := os.Create(filepath.Join(stack.artifacts, "trawler-dev.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "dev", "--dir", filepath.Join(dir, "dev"), "--api.listen", "127.0.0.1:0", "--nodes", "2")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		log.Close()
	}
	env, err := waitForEnv(filepath.Join(dir, "dev", "env"), exited)
	if err == nil {
		err = waitReady(env["TRAWLER_API_URL"]+"/readyz", exited)
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("trawler dev (log: %s): %w", log.Name(), err)
	}
	stack.url, stack.user, stack.password = env["TRAWLER_API_URL"], env["TRAWLER_USERNAME"], env["TRAWLER_PASSWORD"]
	return stop, nil
}

// waitForEnv reads the env file trawler dev writes once it serves.
func waitForEnv(path string, exited <-chan error) (map[string]string, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("exited early: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		env := map[string]string{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
				env[k] = strings.Trim(v, `"`)
			}
		}
		f.Close()
		if env["TRAWLER_API_URL"] != "" {
			return env, nil
		}
	}
	return nil, errors.New("no env file within 3 minutes")
}

func waitReady(url string, exited <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer 200 within 2 minutes", url)
}
