package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// cutDialer dials the crawls' Redis for the operator until it is cut:
// then its connections close and new ones are refused, as a Redis pod
// that went away would behave, while the crawlers still reach theirs.
type cutDialer struct {
	next func(ctx context.Context, network, addr string) (net.Conn, error)

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cutDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("redis cut off")
	}
	c, err := d.next(ctx, network, addr)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cutDialer) setCut(cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = cut
	if cut {
		for _, c := range d.conns {
			c.Close()
		}
		d.conns = nil
	}
}

// leaveUnrecorded pushes n error lines and n crawls-done messages into
// the crawl's Redis, as its crawlers would at their end, and returns the
// error lines and file names to look for.
func (h *harness) leaveUnrecorded(id string, n int) (lines, files []string) {
	h.t.Helper()
	ctx := context.Background()
	c := h.crawlRedis(id)
	for i := range n {
		line := fmt.Sprintf(`{"timestamp":"2026-12-02T10:00:00.000Z","logLevel":"error","context":"general","message":"left at the end %d","details":{}}`, i)
		name := fmt.Sprintf("left-at-the-end-%d.wacz", i)
		done, err := json.Marshal(map[string]any{"id": "crawler-0", "filename": "https://s3.invalid/btrix-data/" + h.org.String() + "/" + name,
			"hash": "sha256:0", "size": 1000 + i, "completed": true})
		if err != nil {
			h.t.Fatal(err)
		}
		if err := c.RPush(ctx, crawlredis.Keys(id).Errors(), line).Err(); err != nil {
			h.t.Fatal(err)
		}
		if err := c.RPush(ctx, crawlredis.CrawlsDone, done).Err(); err != nil {
			h.t.Fatal(err)
		}
		lines, files = append(lines, line), append(files, name)
	}
	return lines, files
}

// checkRecorded fails the test for every line and file not recorded.
func (h *harness) checkRecorded(id string, lines, files []string) {
	h.t.Helper()
	recorded, _, err := h.store.ListCrawlErrors(context.Background(), id, store.Paging{})
	if err != nil {
		h.t.Fatal(err)
	}
	lost := 0
	for _, l := range lines {
		if !slices.Contains(recorded, l) {
			lost++
		}
	}
	if lost > 0 {
		h.t.Errorf("%d of %d error lines left in redis at the end were lost", lost, len(lines))
	}
	var names []string
	for _, f := range h.crawl(id).Files {
		names = append(names, f.Filename)
	}
	lost = 0
	for _, name := range files {
		if !slices.ContainsFunc(names, func(s string) bool { return strings.HasSuffix(s, "/"+name) }) {
			lost++
		}
	}
	if lost > 0 {
		h.t.Errorf("%d of %d file records left in redis at the end were lost (recorded: %v)", lost, len(files), names)
	}
}

// TestFinishWithRedisDownKeepsEveryRecord ends a crawl whose Redis holds
// error lines and file records the operator could not read (its Redis cut
// off), and kills that Redis as the crawl ends: teardown brings it back
// on its volume, the final drain retries until it reaches it, and every
// line and file lands before Redis and its volume go.
func TestFinishWithRedisDownKeepsEveryRecord(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	cut := &cutDialer{next: h.env.Dial}
	cfg.RedisDialer = cut.dial
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{seed: slowSite})
	h.waitState(id, 30*time.Second, store.StateRunning)

	cut.setCut(true)
	lines, files := h.leaveUnrecorded(id, 20)
	if err := h.launch.CancelCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, 10*time.Second, store.StateCanceled)
	redisPod := h.pods(id)[k8s.RedisName(id)]
	if err := h.kube.CoreV1().Pods(h.ns).Delete(context.Background(), redisPod.Name,
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(redisPod.UID))}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the final drain to find redis down, or the post-crawl tasks", 60*time.Second, func() bool {
		return strings.Contains(h.logs.String(), "recording the last files and errors failed") || h.crawl(id).PostCrawlDone
	})
	cut.setCut(false)
	h.waitFor("post-crawl tasks", 60*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	h.checkRecorded(id, lines, files)
	h.waitFor("job removed", 60*time.Second, func() bool { return h.gone(id) })
}

// TestFinishWithRedisPausedDrainsIt cancels a crawl whose Redis was
// paused for want of an active crawler while it held error lines and file
// records the operator had not read: teardown brings Redis back on its
// volume for the final drain, and every line and file lands.
func TestFinishWithRedisPausedDrainsIt(t *testing.T) {
	h := newHarness(t)
	cfg := h.config()
	cfg.RedisIdle = 2 * time.Second
	cut := &cutDialer{next: h.env.Dial}
	cfg.RedisDialer = cut.dial
	h.startOperator(cfg)
	id := h.startCrawl(crawlOpts{seed: slowSite})
	h.waitState(id, 30*time.Second, store.StateRunning)

	cut.setCut(true)
	lines, files := h.leaveUnrecorded(id, 20)
	h.cordon(true)
	t.Cleanup(func() { h.cordon(false) })
	if err := h.kube.CoreV1().Pods(h.ns).Delete(context.Background(), k8s.CrawlerName(id, 0), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("redis paused", 60*time.Second, func() bool {
		_, ok := h.pods(id)[k8s.RedisName(id)]
		return !ok
	})
	if err := h.launch.CancelCrawl(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	h.waitState(id, 10*time.Second, store.StateCanceled)
	h.cordon(false)
	cut.setCut(false)
	h.waitFor("post-crawl tasks", 60*time.Second, func() bool { return h.crawl(id).PostCrawlDone })
	h.checkRecorded(id, lines, files)
	h.waitFor("job removed", 60*time.Second, func() bool { return h.gone(id) })
}
