package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/trawlerhq/trawler/app"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
	"github.com/trawlerhq/trawler/sandbox/crawlersim"
	"github.com/trawlerhq/trawler/sandbox/devstack"
	"github.com/trawlerhq/trawler/sandbox/kubelet"
	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

// The end-to-end tests run the development stack in this process (a
// sandbox with an S3 server and trawler serve against it, as `make dev`
// does) and drive crawls through the REST API. One stack serves them all.
var e2e struct {
	once   sync.Once
	stack  *devstack.Stack
	cancel context.CancelFunc
	dir    string
	err    error
}

// stopE2E stops the shared stack, from TestMain.
func stopE2E() {
	if e2e.stack == nil {
		return
	}
	e2e.cancel()
	<-e2e.stack.Served
	e2e.stack.Env.Stop()
	os.RemoveAll(e2e.dir)
}

// e2eSimScale speeds the crawler simulator up five times.
const e2eSimScale = 0.2

func devStackForTest(t *testing.T) *devstack.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	e2e.once.Do(func() {
		cfg, err := app.LoadConfig("", pflag.NewFlagSet("e2e", pflag.ContinueOnError))
		if err != nil {
			e2e.err = err
			return
		}
		for key, value := range devstack.Defaults {
			cfg.SetDefault(key, value)
		}
		cfg.Set("api.listen", "127.0.0.1:0")
		if e2e.dir, e2e.err = os.MkdirTemp("", "trawler-e2e-"); e2e.err != nil {
			return
		}
		logf, err := os.Create(filepath.Join(e2e.dir, "trawler.log"))
		if err != nil {
			e2e.err = err
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		e2e.cancel = cancel
		e2e.stack, e2e.err = devstack.Start(ctx, cfg, e2e.dir, sandbox.Options{
			Nodes:          kubelet.Nodes{Count: 2},
			RestartBackoff: kubelet.Backoff{Initial: 200 * time.Millisecond, Max: time.Second},
			Programs: map[string]kubelet.Program{cfg.GetString("crawler.image"): crawlersim.Program(func(o *crawlersim.Options) {
				o.TimeScale = e2eSimScale
			})},
		}, slog.New(slog.NewTextHandler(logf, nil)))
	})
	if errors.Is(e2e.err, sandbox.ErrBinaryMissing) {
		t.Skipf("sandbox binaries missing (make testbin): %v", e2e.err)
	}
	if e2e.err != nil {
		t.Fatalf("starting the dev stack: %v", e2e.err)
	}
	// The superuser exists once the database is prepared.
	waitReady(t, e2e.stack.APIURL+"/readyz", nil)
	return e2e.stack
}

// client is a logged-in REST client of the stack, as the superuser.
type client struct {
	t     *testing.T
	base  string
	token string
	oid   string
}

func newClient(t *testing.T, d *devstack.Stack) *client {
	t.Helper()
	c := &client{t: t, base: d.APIURL}
	form := url.Values{"username": {"admin@example.com"}, "password": {"PASSW0RD!"}}
	resp, err := http.PostForm(c.base+"/api/auth/jwt/login", form)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("login: %v", err)
	}
	c.token = tok.AccessToken
	orgs := c.json("GET", "/api/orgs", nil, 200)
	c.oid = orgs["items"].([]any)[0].(map[string]any)["id"].(string)
	return c
}

// json sends a request and decodes the object answered with status want.
func (c *client) json(method, path string, body any, want int) map[string]any {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = strings.NewReader(string(raw))
	}
	code, raw := c.do(method, path, rd)
	if code != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, code, raw, want)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		c.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
	}
	return out
}

func (c *client) do(method, path string, body io.Reader) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (c *client) org(rest string) string { return "/api/orgs/" + c.oid + rest }

// runCrawl starts a workflow and waits until its crawl has ended.
func (c *client) runCrawl(name, seed string, scale int) map[string]any {
	c.t.Helper()
	out := c.json("POST", c.org("/crawlconfigs/"), map[string]any{
		"name": name, "runNow": true, "scale": scale,
		"config": map[string]any{"seeds": []any{map[string]any{"url": seed}}},
	}, 200)
	id, _ := out["run_now_job"].(string)
	if id == "" {
		c.t.Fatalf("no crawl started: %v", out)
	}
	return c.waitCrawl(id)
}

// waitCrawl waits until crawl id has ended and returns it.
func (c *client) waitCrawl(id string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		crawl := c.json("GET", c.org("/crawls/"+id), nil, 200)
		if crawl["finished"] != nil {
			return crawl
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("crawl %s not finished after 4 minutes: %v", id, crawl)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (c *client) bytesStored() float64 {
	c.t.Helper()
	return c.json("GET", c.org(""), nil, 200)["bytesStored"].(float64)
}

// bucket is the stack's bucket as seen from the host.
func bucket(t *testing.T, d *devstack.Stack) *s3.Bucket {
	t.Helper()
	b, err := s3.New(d.Env.S3.Storage("check", devstack.Bucket), s3.Options{Transport: d.Env.HTTPTransport()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func download(t *testing.T, link string) []byte {
	t.Helper()
	resp, err := http.Get(link) // plain HTTP, no credentials: curl would do
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", link, resp.StatusCode, data)
	}
	return data
}

// TestCrawlFilesEndToEnd: a scale-3 crawl ends complete with one WACZ per
// instance; each downloads over its presigned link, matches the hash and
// size on record, and is a valid WACZ; the logs come from those files;
// deleting the crawl deletes them and gives their bytes back.
func TestCrawlFilesEndToEnd(t *testing.T) {
	d := devStackForTest(t)
	c := newClient(t, d)
	before := c.bytesStored()
	crawl := c.runCrawl("e2e files", "https://example.com/?sim-pages=40&sim-page-ms=1000&sim-bytes=20000", 3)
	id := crawl["id"].(string)
	if crawl["state"] != "complete" || crawl["fileCount"] != float64(3) {
		t.Fatalf("crawl ended %v with %v files, want complete with 3", crawl["state"], crawl["fileCount"])
	}
	replay := c.json("GET", c.org("/crawls/"+id+"/replay.json"), nil, 200)
	var pages int
	var keys []string
	for _, r := range replay["resources"].([]any) {
		res := r.(map[string]any)
		data := download(t, res["path"].(string))
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != res["hash"] || float64(len(data)) != res["size"] {
			t.Errorf("%s: downloaded %x, %d bytes; on record %s, %v", res["name"], sum, len(data), res["hash"], res["size"])
		}
		w, err := wacztest.Inspect(data)
		if err != nil {
			t.Fatalf("%s: %v", res["name"], err)
		}
		if len(w.Pages) == 0 || w.Records["response"] != len(w.Pages) || w.Records["request"] != len(w.Pages) || len(w.Index) != len(w.Pages) {
			t.Errorf("%s: %d pages, records %v, %d index lines", res["name"], len(w.Pages), w.Records, len(w.Index))
		}
		pages += len(w.Pages)
		keys = append(keys, res["name"].(string))
	}
	if done := crawl["stats"].(map[string]any)["done"].(float64); float64(pages) != done {
		t.Errorf("the WACZ files hold %d pages, the crawl did %v", pages, done)
	}
	if got := c.bytesStored(); got != before+crawl["fileSize"].(float64) {
		t.Errorf("bytesStored %v, want %v + %v", got, before, crawl["fileSize"])
	}

	code, raw := c.do("GET", c.org("/crawls/"+id+"/logs?logLevel=info&context=general"), nil)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if code != 200 || len(lines) < 3 {
		t.Fatalf("logs: %d, %d lines", code, len(lines))
	}
	prev := ""
	for _, line := range lines {
		var l struct{ Timestamp, LogLevel, Context string }
		if err := json.Unmarshal([]byte(line), &l); err != nil || l.LogLevel != "info" || l.Context != "general" || l.Timestamp < prev {
			t.Fatalf("log line %q out of filter or order (%v)", line, err)
		}
		prev = l.Timestamp
	}

	out := c.json("POST", c.org("/crawls/delete"), map[string]any{"crawl_ids": []string{id}}, 200)
	if out["deleted"] != float64(1) {
		t.Fatalf("delete: %v", out)
	}
	b := bucket(t, d)
	for _, k := range keys {
		if _, err := b.Stat(t.Context(), k); !errors.Is(err, s3.ErrNotFound) {
			t.Errorf("%s after the delete: %v", k, err)
		}
	}
	for info, err := range b.List(t.Context(), c.oid+"/") {
		if err == nil && strings.Contains(info.Key, id[len(id)-12:]) {
			t.Errorf("object %s of the deleted crawl is listed", info.Key)
		}
	}
	if got := c.bytesStored(); got != before {
		t.Errorf("bytesStored %v after the delete, want %v", got, before)
	}
}

// TestUploadOutageFailsTheCrawl: with the S3 server down, every upload
// fails; the crawler treats that as an exception, thrice, and the crawl
// ends failed with no file recorded.
func TestUploadOutageFailsTheCrawl(t *testing.T) {
	d := devStackForTest(t)
	c := newClient(t, d)
	if err := d.Env.S3.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Env.S3.Restart(context.Background()); err != nil {
			t.Errorf("restarting the S3 server: %v", err)
		}
	})
	crawl := c.runCrawl("e2e outage", "https://example.com/?sim-pages=5", 1)
	if crawl["state"] != "failed" || crawl["fileCount"] != float64(0) || crawl["fileSize"] != float64(0) {
		t.Fatalf("crawl ended %v with %v files (%v bytes), want failed with none", crawl["state"], crawl["fileCount"], crawl["fileSize"])
	}
	replay := c.json("GET", c.org("/crawls/"+crawl["id"].(string)+"/replay.json"), nil, 200)
	if res := replay["resources"].([]any); len(res) != 0 {
		t.Fatalf("resources %v", res)
	}
	code, raw := c.do("GET", c.org("/crawls/"+crawl["id"].(string)+"/errors"), nil)
	if code != 200 || !strings.Contains(string(raw), "Crawl failed") {
		t.Errorf("errors: %d %s", code, raw)
	}
}
