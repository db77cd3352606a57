package crawls

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/devstack"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopShared()
	e2etest.RemoveBuild()
	os.Exit(code)
}

// shared is the development stack most tests of the package share,
// running in this process (a sandbox with an S3 server and trawler serve
// against it, as `make dev` does); started by the first test that needs
// it, stopped by TestMain.
var shared struct {
	once  sync.Once
	stack *e2etest.Stack
	dir   string
	err   error
	// proxiesFile is the stack's crawler.proxies_file, which holds
	// sharedProxies at the start.
	proxiesFile string
}

// simScale speeds the crawler simulator up five times.
const simScale = 0.2

// sharedStack starts the shared stack, or skips the test where it cannot
// run, and returns it once it is ready.
func sharedStack(t *testing.T) *e2etest.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	shared.once.Do(func() { shared.stack, shared.dir, shared.err = startShared() })
	if errors.Is(shared.err, sandbox.ErrBinaryMissing) {
		t.Skipf("sandbox binaries missing (make testbin): %v", shared.err)
	}
	if shared.err != nil {
		t.Fatalf("starting the dev stack: %v", shared.err)
	}
	// The superuser exists once the database is prepared.
	if err := e2etest.WaitReady(shared.stack.APIURL+"/readyz", 2*time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	return shared.stack
}

// testChannelImage is the image of the shared stack's second crawler
// channel, "test", which pulls IfNotPresent and speaks the 1.x protocol.
const testChannelImage = "webrecorder/browsertrix-crawler:edge"

// legacyChannel is the shared stack's channel that speaks the other
// protocol than the default channel (sandbox.TestCrawlerProtocol), for
// the protocol matrix.
const legacyChannel = "legacy"

func startShared() (*e2etest.Stack, string, error) {
	other := k8s.ProtocolV011
	if sandbox.TestCrawlerProtocol() == k8s.ProtocolV011 {
		other = k8s.ProtocolV1
	}
	cfg, err := e2etest.DevConfig(map[string]any{"crawler.channels": `[
		{"id": "default", "image": "webrecorder/browsertrix-crawler:latest", "protocol": "` + sandbox.TestCrawlerProtocol() + `"},
		{"id": "test", "image": "` + testChannelImage + `", "imagePullPolicy": "IfNotPresent", "protocol": "1.x"},
		{"id": "` + legacyChannel + `", "image": "webrecorder/browsertrix-crawler:0.11.2", "imagePullPolicy": "IfNotPresent", "protocol": "` + other + `"}]`})
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "trawler-e2e-")
	if err != nil {
		return nil, "", fmt.Errorf("creating the stack's folder: %w", err)
	}
	// The proxies file, as the chart mounts it; TestCrawlerProxies
	// rewrites it.
	shared.proxiesFile = filepath.Join(dir, "crawler_proxies.json")
	if err := os.WriteFile(shared.proxiesFile, []byte(sharedProxies), 0o600); err != nil {
		return nil, dir, fmt.Errorf("writing the proxies file: %w", err)
	}
	cfg.Set("crawler.proxies_file", shared.proxiesFile)
	logf, err := os.Create(filepath.Join(dir, "trawler.log"))
	if err != nil {
		return nil, dir, fmt.Errorf("creating trawler's log: %w", err)
	}
	stack, err := e2etest.StartStack(cfg, dir, sandbox.Options{
		Nodes:          kubelet.Nodes{Count: 2},
		RestartBackoff: kubelet.Backoff{Initial: 200 * time.Millisecond, Max: time.Second},
		// Every tag of the crawler image runs the simulator.
		Programs: map[string]kubelet.Program{crawlersim.Image: crawlersim.Program(func(o *crawlersim.Options) {
			o.TimeScale = simScale
		})},
	}, slog.New(slog.NewTextHandler(logf, nil)))
	return stack, dir, err
}

// stopShared stops the shared stack, if a test started it.
func stopShared() {
	if shared.stack != nil {
		if err := shared.stack.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "crawls: serve:", err)
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}

// client is the superuser's client of a stack, with what the archive and
// storage tests add for crawls read as JSON objects.
type client struct{ *e2etest.Client }

// newClient logs in to the stack as the superuser, working in the default
// org.
func newClient(t *testing.T, s *e2etest.Stack) client {
	t.Helper()
	c := client{e2etest.Login(t, s.APIURL, nil)}
	c.OID = c.OrgID()
	return c
}

// inNewOrg points the client at a new org.
func (c client) inNewOrg(name string) {
	c.T.Helper()
	c.OID = c.Object("POST", "/api/orgs/create", map[string]any{"name": name}, 200)["id"].(string)
}

// runCrawl starts a workflow and waits until its crawl has ended.
func (c client) runCrawl(name, seed string, scale int) map[string]any {
	c.T.Helper()
	out := c.Object("POST", c.Org("/crawlconfigs/"), map[string]any{
		"name": name, "runNow": true, "scale": scale,
		"config": map[string]any{"seeds": []any{map[string]any{"url": seed}}},
	}, 200)
	id, _ := out["run_now_job"].(string)
	if id == "" {
		c.T.Fatalf("no crawl started: %v", out)
	}
	return c.waitCrawl(id)
}

// waitCrawl waits until crawl id has ended and returns it.
func (c client) waitCrawl(id string) map[string]any {
	c.T.Helper()
	var crawl map[string]any
	e2etest.WaitFor(c.T, 4*time.Minute, "crawl "+id+" to finish", func() (bool, error) {
		crawl = c.Object("GET", c.Org("/crawls/"+id), nil, 200)
		return crawl["finished"] != nil, fmt.Errorf("still %v", crawl)
	})
	return crawl
}

func (c client) bytesStored() float64 {
	c.T.Helper()
	return c.Object("GET", c.Org(""), nil, 200)["bytesStored"].(float64)
}

// eventually polls get until ok holds, for up to a minute.
func eventually(t *testing.T, what string, get func() map[string]any, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	var v map[string]any
	e2etest.WaitFor(t, time.Minute, what, func() (bool, error) {
		v = get()
		return ok(v), fmt.Errorf("still %v", v)
	})
	return v
}

// bucket is the stack's bucket as seen from the host.
func bucket(t *testing.T, s *e2etest.Stack) *s3.Bucket {
	t.Helper()
	b, err := s3.New(s.Env.S3.Storage("check", devstack.Bucket), s3.Options{Transport: s.Env.HTTPTransport()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
