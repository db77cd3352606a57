package crawls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox/wacztest"
)

// TestCrawlFilesEndToEnd: a scale-3 crawl ends complete with one WACZ per
// instance; each downloads over its presigned link, matches the hash and
// size on record, and is a valid WACZ; the logs come from those files;
// deleting the crawl deletes them and gives their bytes back.
func TestCrawlFilesEndToEnd(t *testing.T) {
	d := sharedStack(t)
	c := newClient(t, d)
	before := c.bytesStored()
	crawl := c.runCrawl("e2e files", "https://example.com/?sim-pages=40&sim-page-ms=1000&sim-bytes=20000", 3)
	id := crawl["id"].(string)
	if crawl["state"] != "complete" || crawl["fileCount"] != float64(3) {
		t.Fatalf("crawl ended %v with %v files, want complete with 3", crawl["state"], crawl["fileCount"])
	}
	replay := c.Object("GET", c.Org("/crawls/"+id+"/replay.json"), nil, 200)
	var pages int
	var keys []string
	for _, r := range replay["resources"].([]any) {
		res := r.(map[string]any)
		if path := res["path"].(string); !strings.HasPrefix(path, "/data/") {
			t.Errorf("%s is linked at %s, not on trawler's origin under /data/", res["name"], path)
		}
		data := e2etest.Download(t, shared.stack.APIURL, res["path"].(string))
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != res["hash"] || float64(len(data)) != res["size"] {
			t.Errorf("%s: downloaded %x, %d bytes; on record %s, %v", res["name"], sum, len(data), res["hash"], res["size"])
		}
		w, err := wacztest.Inspect(data)
		if err != nil {
			t.Fatalf("%s: %v", res["name"], err)
		}
		// Each page, plus its origin's stylesheet and image once.
		if len(w.Pages) == 0 || w.Records["response"] != len(w.Pages)+2 || w.Records["request"] != w.Records["response"] || len(w.Index) != w.Records["response"] {
			t.Errorf("%s: %d pages, records %v, %d index lines", res["name"], len(w.Pages), w.Records, len(w.Index))
		}
		if _, err := w.CheckReplay(); err != nil {
			t.Errorf("%s: %v", res["name"], err)
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

	code, raw := c.Send("GET", c.Org("/crawls/"+id+"/logs?logLevel=info&context=general"), nil, "application/json")
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

	out := c.Object("POST", c.Org("/crawls/delete"), map[string]any{"crawl_ids": []string{id}}, 200)
	if out["deleted"] != float64(1) {
		t.Fatalf("delete: %v", out)
	}
	b := bucket(t, d)
	for _, k := range keys {
		if _, err := b.Stat(t.Context(), k); !errors.Is(err, s3.ErrNotFound) {
			t.Errorf("%s after the delete: %v", k, err)
		}
	}
	for info, err := range b.List(t.Context(), c.OID+"/") {
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
	d := sharedStack(t)
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
	replay := c.Object("GET", c.Org("/crawls/"+crawl["id"].(string)+"/replay.json"), nil, 200)
	if res := replay["resources"].([]any); len(res) != 0 {
		t.Fatalf("resources %v", res)
	}
	code, raw := c.Send("GET", c.Org("/crawls/"+crawl["id"].(string)+"/errors"), nil, "application/json")
	if code != 200 || !strings.Contains(string(raw), "Crawl failed") {
		t.Errorf("errors: %d %s", code, raw)
	}
}
