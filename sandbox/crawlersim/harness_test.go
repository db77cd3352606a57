package crawlersim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// One redis-server for the package; every test gets a database of its
// own, flushed and handed on when the test ends. One S3 server holds the
// uploads, reached as testStore's host through testDNS.
var (
	testRedis *sandbox.Redis
	freeDBs   = make(chan int, 63)
	testS3    *sandbox.S3
	testDNS   = kubelet.NewDNS("cluster.local")
	// storePaths numbers the crawls' STORE_PATH folders.
	storePaths atomic.Int64
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crawlersim-redis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	testRedis, err = sandbox.StartRedis(ctx, filepath.Join(dir))
	if err == nil {
		testS3, err = startTestS3(ctx, filepath.Join(dir, "s3"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for db := 1; db < 64; db++ {
		freeDBs <- db
	}
	code := m.Run()
	if env != nil {
		env.Stop()
	}
	_ = testRedis.Stop(5 * time.Second)
	_ = testS3.Stop(5 * time.Second)
	os.RemoveAll(dir)
	os.Exit(code)
}

// startTestS3 starts the S3 server with testStore's bucket and makes
// testStore's host name reach it.
func startTestS3(ctx context.Context, dir string) (*sandbox.S3, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	srv, err := sandbox.StartS3(ctx, dir)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(testStore)
	testDNS.Register(u.Hostname(), fmt.Sprintf("127.0.0.1:%d", srv.Port))
	b, err := s3.New(testStorage(srv), s3.Options{Transport: &http.Transport{DialContext: testDNS.Dial}})
	if err == nil {
		err = b.EnsureBucket(ctx)
	}
	return srv, err
}

// testStorage is testStore on the test S3 server.
func testStorage(srv *sandbox.S3) s3.Config {
	return s3.Config{AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, EndpointURL: testStore}
}

// Values shaped like the ones Browsertrix renders into crawler pods.
const (
	testCrawlID  = "manual-20230911173000-0123456789ab"
	testStore    = "http://local-minio.default:9000/btrix-data/"
	testStoreDir = "6ff5e3a0-1b9c-4bd9-8b2f-0c3f5c1f1a11/"
	testUser     = "1d8cb5a4-52f8-4e0e-9a1d-7b0c0f3a2b10"
	// browsertrixArgs is CRAWL_ARGS at ad9bca2 with the chart defaults.
	browsertrixArgs = `--workers 2 --sizeLimit 10000000000 --timeLimit 18000 --maxPageLimit 0 ` +
		`--healthCheckPort 6065 --diskUtilization 90 --userAgentSuffix "" --userAgent "" ` +
		`--logging stats,behaviors,debug --text false --generateWACZ --collection thecrawl ` +
		`--screencastPort 9037 --logErrorsToRedis`
	testScale = "--sim.timeScale 0.01 --sim.bootDelay 0.5 --sim.pendingWait 0.5"
	// waitLimit bounds each wait (for an instance's exit, a page count,
	// ...). It is a deadline, not a pause: a whole 200-page crawl under
	// -race beside the plain test step took 33 s on CI's 2 cores, past the
	// 30 s this once was.
	waitLimit = 90 * time.Second
)

// doneMessage is a crawls-done notification as the operator decodes it.
type doneMessage struct {
	ID        string  `json:"id"`
	User      *string `json:"user"`
	Filename  string  `json:"filename"`
	Hash      string  `json:"hash"`
	Size      int64   `json:"size"`
	Completed bool    `json:"completed"`
}

// exitKilled is what a SIGKILLed container reports.
const exitKilled = 137

// crawl is one crawl's Redis database, config and environment.
type crawl struct {
	t    *testing.T
	srv  *sandbox.Redis
	db   int
	url  string
	rdb  *redis.Client
	id   string
	cfg  string // local path of crawl-config.json
	env  map[string]string
	keys map[string]string
}

// newCrawl prepares a crawl with the given config file contents and extra
// CRAWL_ARGS (appended after Browsertrix's own, before --restartsOnError).
func newCrawl(t *testing.T, config map[string]any, extraArgs string) *crawl {
	t.Helper()
	var db int
	select {
	case db = <-freeDBs:
	case <-time.After(waitLimit):
		t.Fatal("no free test database")
	}
	t.Cleanup(func() {
		rdb := redis.NewClient(&redis.Options{Addr: testRedis.Addr(), DB: db})
		defer rdb.Close()
		if err := rdb.FlushDB(context.Background()).Err(); err != nil {
			t.Errorf("flushing test database %d: %v", db, err)
			return
		}
		freeDBs <- db
	})
	return newCrawlOn(t, testRedis, db, config, extraArgs)
}

// newCrawlOn is newCrawl on database db of a given server.
func newCrawlOn(t *testing.T, srv *sandbox.Redis, db int, config map[string]any, extraArgs string) *crawl {
	t.Helper()
	c := &crawl{t: t, srv: srv, db: db, url: srv.URL(db), id: testCrawlID}
	c.rdb = redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: db})
	t.Cleanup(func() { c.rdb.Close() })
	c.cfg = writeConfig(t, config)
	c.env = map[string]string{
		"CRAWL_ID":           c.id,
		"WEBHOOK_URL":        c.url + "/crawls-done",
		"STORE_ENDPOINT_URL": testStore,
		// An org folder of its own, so that parallel tests never upload
		// to the same key. (Not a random UUID: wacztest's WARC reader
		// races with UUID generation in other goroutines.)
		"STORE_PATH":       fmt.Sprintf("org-%d/", storePaths.Add(1)),
		"STORE_FILENAME":   "@ts-@hostsuffix.wacz",
		"STORE_USER":       testUser,
		"STORE_ACCESS_KEY": testS3.AccessKey,
		"STORE_SECRET_KEY": testS3.SecretKey,
		"CRAWL_ARGS":       browsertrixArgs + " " + testScale + " " + extraArgs + " --restartsOnError",
	}
	return c
}

// writeConfig writes a crawl-config.json and returns its path.
func writeConfig(t *testing.T, config map[string]any) string {
	t.Helper()
	data, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "crawl-config.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (c *crawl) key(suffix string) string { return c.id + ":" + suffix }

func (c *crawl) host(i int) string { return fmt.Sprintf("crawl-%s-%d", c.id, i) }

// waitFor polls cond until it holds, failing the test after waitLimit.
func (c *crawl) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (c *crawl) int(key string) int64 {
	n, err := c.rdb.Get(context.Background(), key).Int64()
	if err != nil && err != redis.Nil {
		c.t.Fatal(err)
	}
	return n
}

func (c *crawl) done() int64  { return c.int(c.key("d")) }
func (c *crawl) found() int64 { return c.rdb.SCard(context.Background(), c.key("s")).Val() }

func (c *crawl) status(host string) string {
	return c.rdb.HGet(context.Background(), c.key("status"), host).Val()
}

// messages returns the crawls-done list without consuming it.
func (c *crawl) messages() []doneMessage {
	c.t.Helper()
	var out []doneMessage
	for _, raw := range c.rdb.LRange(context.Background(), "crawls-done", 0, -1).Val() {
		var m doneMessage
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			c.t.Fatalf("crawls-done entry %q: %v", raw, err)
		}
		out = append(out, m)
	}
	return out
}

// instance is one crawler pod: a hostname and a volume kept across runs.
type instance struct {
	c    *crawl
	host string
	dir  string
	out  *lockedBuffer

	cancel context.CancelFunc
	sigs   chan struct{}
	killed chan struct{}
	exit   chan int
	ended  chan struct{} // closed when the current run returned
}

func (c *crawl) instance(i int) *instance {
	in := &instance{c: c, host: c.host(i), dir: c.t.TempDir(), out: &lockedBuffer{}}
	// A test that fails half-way must not leave a crawler writing to a
	// database the next test gets.
	c.t.Cleanup(func() {
		if in.ended == nil {
			return
		}
		select {
		case <-in.killed:
		default:
			close(in.killed)
		}
		select {
		case <-in.ended:
		case <-time.After(10 * time.Second):
			c.t.Errorf("%s still running after SIGKILL", in.host)
		}
	})
	return in
}

// start runs the crawler once, as the kubelet would after `restarts`
// container restarts. tune adjusts the options (nil for none).
func (in *instance) start(restarts int, tune func(*crawlersim.Options)) {
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel, in.sigs, in.killed, in.exit = cancel, make(chan struct{}, 4), make(chan struct{}), make(chan int, 1)
	opts := crawlersim.Options{
		Args:     []string{"crawl", "--config", "/tmp/crawl-config.json", "--redisStoreUrl", in.c.url},
		Env:      in.c.env,
		Hostname: in.host,
		WorkDir:  in.dir,
		Mounts:   map[string]string{"/tmp/crawl-config.json": in.c.cfg, "/crawls": in.dir},
		Stdout:   in.out,
		Killed:   in.killed,
		Signals:  in.sigs,
		Restarts: restarts,
		Dial:     testDNS.Dial,
	}
	if tune != nil {
		tune(&opts)
	}
	exit, ended := in.exit, make(chan struct{})
	in.ended = ended
	go func() {
		defer close(ended)
		exit <- crawlersim.Run(ctx, opts)
	}()
}

// wait returns the exit code of the current run.
func (in *instance) wait() int {
	in.c.t.Helper()
	defer in.cancel()
	select {
	case code := <-in.exit:
		return code
	case <-time.After(waitLimit):
		in.c.t.Fatalf("%s did not exit; log:\n%s", in.host, in.out.String())
		return -1
	}
}

func (in *instance) run(restarts int, tune func(*crawlersim.Options)) int {
	in.start(restarts, tune)
	return in.wait()
}

// exited reports whether the current run has ended, without consuming
// the exit code.
func (in *instance) exited() bool { return len(in.exit) > 0 }

// pages lists the URLs in this volume's pages.jsonl (all sessions since the
// last wipe).
func (in *instance) pages() []string {
	data, err := os.ReadFile(filepath.Join(in.dir, "collections", "thecrawl", "pages", "pages.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		in.c.t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		var p struct{ URL string }
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			in.c.t.Fatal(err)
		}
		out = append(out, p.URL)
	}
	return out
}

// logged counts stdout lines with the given message.
func (in *instance) logged(message string) int {
	n := 0
	for _, line := range strings.Split(in.out.String(), "\n") {
		var l struct{ Message string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Message == message {
			n++
		}
	}
	return n
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// monitor records every command the server runs against the crawl's
// database (Lua-issued ones included), through MONITOR.
type monitor struct {
	mu   sync.Mutex
	cmds [][]string
	conn net.Conn
}

func (c *crawl) monitor() *monitor {
	c.t.Helper()
	conn, err := net.Dial("tcp", c.srv.Addr())
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		c.t.Fatal(err)
	}
	rd := bufio.NewReaderSize(conn, 1<<20)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		c.t.Fatalf("MONITOR: %q %v", line, err)
	}
	m := &monitor{conn: conn}
	prefix := "[" + strconv.Itoa(c.db) + " "
	go func() {
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			i := strings.Index(line, prefix)
			if i < 0 {
				continue
			}
			j := strings.Index(line[i:], "] ")
			if j < 0 {
				continue
			}
			args := parseMonitorArgs(strings.TrimRight(line[i+j+2:], "\r\n"))
			m.mu.Lock()
			m.cmds = append(m.cmds, args)
			m.mu.Unlock()
		}
	}()
	return m
}

// parseMonitorArgs reads `"cmd" "arg" ...` with Redis's escapes.
func parseMonitorArgs(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		var b strings.Builder
		for i++; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' || i+1 >= len(s) {
				b.WriteByte(s[i])
				continue
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'x':
				v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
				b.WriteByte(byte(v))
				i += 2
			default:
				b.WriteByte(s[i])
			}
		}
		out = append(out, b.String())
	}
	return out
}

// commands returns a snapshot of the recorded commands.
func (m *monitor) commands() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]string(nil), m.cmds...)
}

// statuses lists the values an instance wrote to <id>:status, in order.
func (m *monitor) statuses(c *crawl, host string) []string {
	var out []string
	for _, cmd := range m.commands() {
		if len(cmd) == 4 && strings.EqualFold(cmd[0], "hset") && cmd[1] == c.key("status") && cmd[2] == host {
			out = append(out, cmd[3])
		}
	}
	return out
}

// index returns the position of the last (or first) command matching.
func (m *monitor) index(last bool, match func([]string) bool) int {
	at := -1
	for i, cmd := range m.commands() {
		if match(cmd) {
			at = i
			if !last {
				break
			}
		}
	}
	return at
}
