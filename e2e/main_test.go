package e2e

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/sandbox"
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
	defer e2etest.RemoveBuild()
	stack.artifacts = artifactsDir()
	fmt.Printf("e2e: screenshots and downloads in %s\n", stack.artifacts)

	if url := os.Getenv("TRAWLER_E2E_URL"); url != "" {
		// A running `make dev` (its superuser), e.g. to look at what the
		// tests do while they run.
		stack.url, stack.user, stack.password = url, e2etest.SuperuserEmail, e2etest.SuperuserPassword
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

// startDev runs `trawler dev` in dir, as `make dev` does but on a free
// port, until stop.
func startDev(dir string) (stop func(), err error) {
	bin, err := e2etest.Build()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(stack.artifacts, "trawler-dev.log"))
	if err != nil {
		return nil, fmt.Errorf("creating the log: %w", err)
	}
	// ReplayWeb.page from the test binaries, as replay.base_url: the
	// machine reaches no public site.
	rwp, err := sandbox.ReplayWebPage()
	if err != nil {
		log.Close()
		return nil, err
	}
	replayFiles := httptest.NewServer(http.FileServer(http.Dir(rwp)))
	// Webhook receivers of the tests listen on loopback, which trawler's
	// own requests reach only when the operator allows it.
	dev, err := e2etest.StartDev(bin, filepath.Join(dir, "dev"), 2, log, "--replay.base_url", replayFiles.URL+"/",
		"--outbound.allowed_cidrs", "127.0.0.0/8,::1/128",
		// A channel that can pause (the simulator honours <id>:paused).
		"--crawler.channels", `[{"id": "default", "image": "webrecorder/browsertrix-crawler:latest", "protocol": "1.x"}]`)
	if err != nil {
		replayFiles.Close()
		log.Close()
		return nil, fmt.Errorf("%w (log: %s)", err, log.Name())
	}
	stack.url, stack.user, stack.password = dev.APIURL(), dev.Env["TRAWLER_USERNAME"], dev.Env["TRAWLER_PASSWORD"]
	return func() {
		if err := dev.Interrupt(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			dev.Kill()
		}
		replayFiles.Close()
		log.Close()
	}, nil
}
