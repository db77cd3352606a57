package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/store"
)

// The benchmark of a thousand running crawls measures the operator alone,
// so it runs the operator in a child process: this test binary started
// again with childEnv set. These are its settings.
const (
	childEnv       = "TRAWLER_OPERATOR_CHILD"
	childNamespace = "TRAWLER_CHILD_NAMESPACE"
	childKube      = "TRAWLER_CHILD_KUBECONFIG"
	childMongo     = "TRAWLER_CHILD_MONGO"
	childDB        = "TRAWLER_CHILD_DB"
	childRedis     = "TRAWLER_CHILD_REDIS"
	childCounts    = "TRAWLER_CHILD_COUNTS"
	// childPprof names the file the child writes the address of its pprof
	// server to.
	childPprof = "TRAWLER_CHILD_PPROF"
	// childRedisResolver, when set, is a sandbox.SharedRedis resolver: the
	// child reaches each crawl's Redis through it, and runs the scale
	// harness's images (childImages) instead of the stubs.
	childRedisResolver = "TRAWLER_CHILD_REDIS_RESOLVER"
	// childImages is "<crawler image>,<redis image>".
	childImages = "TRAWLER_CHILD_IMAGES"
)

// mongoCountPrefix marks the MongoDB write commands among the child's
// counts ("mongo update"), which are otherwise API requests.
const mongoCountPrefix = "mongo "

// mongoWriteCommands are the MongoDB commands that write.
var mongoWriteCommands = map[string]bool{"insert": true, "update": true, "findAndModify": true, "delete": true,
	"bulkWrite": true}

// Stub images: the sandbox kubelet runs unknown images as containers that
// just wait to be stopped, so these pods run without any crawling.
const (
	stubCrawlerImage = "bench/crawler-stub"
	stubRedisImage   = "bench/kv-stub"
)

// stubConfig makes the operator run stub pods and reach every crawl's
// Redis at one redis-server (keys are per crawl already). Every channel
// runs the stub too, keeping its protocol: a channel's image wins over
// CrawlerImage.
func stubConfig(cfg operator.Config, redisAddr string) operator.Config {
	cfg.CrawlerImage, cfg.RedisImage = stubCrawlerImage, stubRedisImage
	cfg.CrawlerChannels = slices.Clone(cfg.CrawlerChannels)
	for i := range cfg.CrawlerChannels {
		cfg.CrawlerChannels[i].Image = stubCrawlerImage
	}
	cpu, mem := resource.MustParse("1m"), resource.MustParse("1Mi")
	cfg.CrawlerCPU, cfg.CrawlerMemory = &cpu, &mem
	cfg.RedisCPU, cfg.RedisMemory = resource.MustParse("1m"), resource.MustParse("1Mi")
	cfg.RedisDialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, redisAddr)
	}
	return cfg
}

// requestCounter counts API requests by verb and, for writes, resource
// ("PUT crawljobs/status").
type requestCounter struct {
	next http.RoundTripper
	mu   *sync.Mutex
	n    map[string]int64
}

func (c requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.Method
	switch {
	case r.URL.Query().Get("watch") == "true":
		key = "WATCH"
	case r.Method != http.MethodGet:
		key += " " + resourceOf(r.URL.Path)
	}
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// resourceOf returns the resource (and subresource) a namespaced API path
// names: .../namespaces/ns/crawljobs/name/status -> crawljobs/status.
func resourceOf(path string) string {
	_, rest, ok := strings.Cut(path, "/namespaces/")
	if !ok {
		return path
	}
	parts := strings.Split(rest, "/")[1:]
	if len(parts) == 3 {
		return parts[0] + "/" + parts[2]
	}
	if len(parts) > 0 {
		return parts[0]
	}
	return path
}

// runChildOperator is the child process: an operator whose request
// counts are written to a file every 200 ms.
func runChildOperator() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	base, err := clientcmd.BuildConfigFromFlags("", os.Getenv(childKube))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := operator.DefaultTestConfig()
	cfg.Namespace = os.Getenv(childNamespace)
	cfg = stubConfig(cfg, os.Getenv(childRedis))
	if resolver := os.Getenv(childRedisResolver); resolver != "" {
		crawler, redisImage, _ := strings.Cut(os.Getenv(childImages), ",")
		cfg = scaleConfig(cfg, resolver, crawler, redisImage)
		// go-redis logs every failed dial, and thousands of crawls dial
		// their Redis before its pod runs; the operator's own log and
		// metrics say what matters.
		redis.SetLogger(quietRedisLog{})
	}
	rc := operator.RateLimitedRestConfig(base)
	var mu sync.Mutex
	counts := map[string]int64{}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return requestCounter{next: rt, mu: &mu, n: counts} }
	// The Prometheus metrics serve gives the operator, so that what is
	// measured includes their cost.
	reg := prometheus.NewRegistry()
	telemetry, err := operator.NewTelemetry(reg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cfg.RedisHook, err = crawlredis.NewMetrics(reg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := store.Open(ctx, os.Getenv(childMongo), os.Getenv(childDB), store.WithMetrics(reg),
		countMongoWrites(&mu, counts))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := operator.New(cfg, operator.Deps{Kube: kubernetes.NewForConfigOrDie(rc), Trawler: versioned.NewForConfigOrDie(rc),
		Metrics: metricsclient.NewForConfigOrDie(rc), Store: st, Telemetry: telemetry,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := servePprof(os.Getenv(childPprof), reg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for ctx.Err() == nil {
			mu.Lock()
			b, _ := json.Marshal(counts)
			mu.Unlock()
			tmp := os.Getenv(childCounts) + ".tmp"
			if os.WriteFile(tmp, b, 0o644) == nil {
				_ = os.Rename(tmp, os.Getenv(childCounts))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	c.Run(ctx)
	return 0
}

// quietRedisLog drops go-redis's internal log lines.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// countMongoWrites counts the store's write commands in counts (under
// mongoCountPrefix), next to the monitor set before it (the metrics').
func countMongoWrites(mu *sync.Mutex, counts map[string]int64) store.Option {
	return func(o *options.ClientOptions) error {
		var m event.CommandMonitor
		if o.Monitor != nil {
			m = *o.Monitor
		}
		next := m.Started
		m.Started = func(ctx context.Context, e *event.CommandStartedEvent) {
			if mongoWriteCommands[e.CommandName] {
				mu.Lock()
				counts[mongoCountPrefix+e.CommandName]++
				mu.Unlock()
			}
			if next != nil {
				next(ctx, e)
			}
		}
		o.SetMonitor(&m)
		return nil
	}
}

// servePprof serves net/http/pprof and the operator's metrics (reg) on a
// loopback port and writes its address to file.
func servePprof(file string, reg *prometheus.Registry) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	go func() { _ = http.Serve(l, mux) }()
	return os.WriteFile(file, []byte(l.Addr().String()), 0o644)
}

// childOperator is a running child process.
type childOperator struct {
	cmd    *exec.Cmd
	counts string
	pprof  string
}

// startChildOperator starts the child on the test's namespace and
// database db; env adds settings (NAME=value).
func (h *harness) startChildOperator(db string, env ...string) *childOperator {
	h.t.Helper()
	dir := h.t.TempDir()
	c := &childOperator{counts: dir + "/counts.json", pprof: dir + "/pprof.addr"}
	c.cmd = exec.Command(os.Args[0])
	c.cmd.Env = append(os.Environ(), childEnv+"=1", childNamespace+"="+h.ns, childKube+"="+h.env.Kubeconfig(),
		childMongo+"="+h.env.MongoURI(), childDB+"="+db, childRedis+"="+h.env.Redis.Addr(), childCounts+"="+c.counts,
		childPprof+"="+c.pprof)
	c.cmd.Env = append(c.cmd.Env, env...)
	c.cmd.Stderr = os.Stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
		}
	})
	return c
}

// requests reads the child's API request counts by verb (and resource,
// for writes).
func (c *childOperator) requests() map[string]int64 {
	out := map[string]int64{}
	for k, v := range c.readCounts() {
		if !strings.HasPrefix(k, mongoCountPrefix) {
			out[k] = v
		}
	}
	return out
}

// mongoWrites reads the child's MongoDB write commands, by command.
func (c *childOperator) mongoWrites() map[string]int64 {
	out := map[string]int64{}
	for k, v := range c.readCounts() {
		if cmd, ok := strings.CutPrefix(k, mongoCountPrefix); ok {
			out[cmd] = v
		}
	}
	return out
}

// settleMongoWrites waits (at most timeout) until the child has sent no
// MongoDB write for quiet, and reports whether it did.
func (c *childOperator) settleMongoWrites(quiet, timeout time.Duration) bool {
	total := func() (n int64) {
		for _, v := range c.mongoWrites() {
			n += v
		}
		return n
	}
	last, since := total(), time.Now()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		if n := total(); n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) >= quiet {
			return true
		}
	}
	return false
}

func (c *childOperator) readCounts() map[string]int64 {
	b, err := os.ReadFile(c.counts)
	if err != nil {
		return map[string]int64{}
	}
	out := map[string]int64{}
	_ = json.Unmarshal(b, &out)
	return out
}

// usage reads the child's resident memory (bytes) and CPU time.
func (c *childOperator) usage() (rss int64, cpu time.Duration) {
	_, cpu, _ = procStat(c.cmd.Process.Pid)
	return c.residentMemory()["VmRSS"], cpu
}

// residentMemory reads the child's resident memory figures (bytes): VmRSS
// and its parts RssAnon (the Go runtime's memory) and RssFile (pages of
// the executable).
func (c *childOperator) residentMemory() map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/status")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && (f[0] == "VmRSS:" || strings.HasPrefix(f[0], "Rss")) {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			out[strings.TrimSuffix(f[0], ":")] = kb * 1024
		}
	}
	return out
}

// profile fetches one of the child's pprof profiles (e.g. "heap?gc=1").
func (c *childOperator) profile(name string) ([]byte, error) {
	addr, err := os.ReadFile(c.pprof)
	if err != nil {
		return nil, err
	}
	resp, err := http.Get("http://" + string(addr) + "/debug/pprof/" + name)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("pprof %s: %s", name, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// memStats returns the child's runtime memory figures that make up its
// RSS (heap in use and idle, released to the OS, stacks, span and GC
// metadata, next GC goal), from the runtime.MemStats the heap profile's
// debug form ends with.
func (c *childOperator) memStats() (string, error) {
	data, err := c.profile("heap?debug=1")
	if err != nil {
		return "", err
	}
	want := map[string]bool{"HeapAlloc": true, "HeapInuse": true, "HeapIdle": true, "HeapReleased": true, "HeapSys": true,
		"Stack": true, "MSpan": true, "GCSys": true, "OtherSys": true, "Sys": true, "NextGC": true}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "# "), " = ")
		if !ok || !want[name] {
			continue
		}
		if n, err := strconv.ParseInt(strings.Fields(value)[0], 10, 64); err == nil {
			out = append(out, fmt.Sprintf("%s %.1f MiB", name, float64(n)/(1<<20)))
		}
	}
	return strings.Join(out, ", "), nil
}
