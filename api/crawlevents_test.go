package api

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/sandbox/metricstest"
	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
)

// crawlRun plays the operator and the crawler of one crawl: states and
// pods through the store (as the operator writes them), pages through the
// crawl's Redis (as the crawler writes them).
type crawlRun struct {
	st   *store.Mongo
	rdb  *redis.Client
	id   string
	page int
}

// state moves the crawl to state; final stats come with a final state.
func (r *crawlRun) state(ctx context.Context, to string) error {
	extra := store.CrawlStateExtra{}
	if store.IsFinished(to) {
		now := time.Now().UTC().Truncate(time.Second)
		extra.Finished = &now
		extra.Stats = &store.CrawlStats{Found: int64(r.page) + 1, Done: int64(r.page), Size: 1000 * int64(r.page)}
	}
	_, _, err := r.st.SetCrawlState(ctx, r.id, to, nil, extra)
	return err
}

// pods records instances 0..n-1 as running pods.
func (r *crawlRun) pods(ctx context.Context, n int) error {
	pods := map[string]store.PodStatus{}
	for i := range n {
		pods[fmt.Sprint(i)] = store.PodStatus{Phase: "Running"}
	}
	_, err := r.st.RecordCrawlProgress(ctx, r.id, nil, pods)
	return err
}

// crawlPage is one more page done by instance i: found, done and size
// grow as the crawler grows them.
func (r *crawlRun) crawlPage(ctx context.Context, i int) error {
	r.page++
	k := crawlredis.Keys(r.id)
	uid := k8s.CrawlerName(r.id, i)
	pipe := r.rdb.TxPipeline()
	pipe.SAdd(ctx, k.Seen(), fmt.Sprintf("https://example.com/%d", r.page), fmt.Sprintf("https://example.com/%d", r.page+1))
	pipe.Incr(ctx, k.Done())
	pipe.HSet(ctx, k.Size(), uid, 1000*r.page)
	pipe.HSet(ctx, k.Status(), uid, "running")
	if r.page%5 == 0 {
		pipe.LPush(ctx, k.Failed(), fmt.Sprintf(`{"url":"https://example.com/%d","failed":"1"}`, r.page))
	}
	_, err := pipe.Exec(ctx)
	return err
}

// runCrawl is the scenario of the stream tests: two states back to back,
// pages every 100 ms for 2 s (scaling to 2 instances midway), then four
// states back to back to complete. It returns when the last page was
// done and when the crawl completed.
func (r *crawlRun) runCrawl(ctx context.Context, oid string) (lastPage time.Time, err error) {
	for _, st := range []string{store.StateWaitingCapacity, store.StateRunning} {
		if err := r.state(ctx, st); err != nil {
			return lastPage, err
		}
	}
	if err := r.pods(ctx, 1); err != nil {
		return lastPage, err
	}
	pace := time.NewTicker(100 * time.Millisecond) // the crawler's pace
	defer pace.Stop()
	for n := range 20 {
		if n == 8 {
			if err := r.st.SetCrawlScale(ctx, uuid.MustParse(oid), r.id, 2); err != nil {
				return lastPage, err
			}
			if err := r.pods(ctx, 2); err != nil {
				return lastPage, err
			}
		}
		if err := r.crawlPage(ctx, min(n/8, 1)); err != nil {
			return lastPage, err
		}
		<-pace.C
	}
	lastPage = time.Now()
	for _, st := range []string{store.StatePendingWait, store.StateGenerateWACZ, store.StateUploadingWACZ, store.StateComplete} {
		if err := r.state(ctx, st); err != nil {
			return lastPage, err
		}
	}
	return lastPage, nil
}

// TestCrawlEventsFollowACrawl: one client sees every state the crawl
// passes through in order (four of them back to back), no gap of more
// than a second while the stats change, the instances as they come, and
// the stream ends at the final state.
func TestCrawlEventsFollowACrawl(t *testing.T) {
	e := newEnv(t)
	srv := e.httpServer()
	_, id := e.startCrawl(asCrawler, "watched")
	c, resp := e.openStream(srv, asViewer, id, "")
	if c == nil {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	run := &crawlRun{st: e.store.Mongo, rdb: redisClient(t), id: id}
	type result struct {
		lastPage time.Time
		err      error
	}
	done := make(chan result, 1)
	go func() {
		last, err := run.runCrawl(context.Background(), e.org.String())
		done <- result{last, err}
	}()
	evs := c.all(t, 60*time.Second)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}

	want := []string{store.StateStarting, store.StateWaitingCapacity, store.StateRunning, store.StatePendingWait,
		store.StateGenerateWACZ, store.StateUploadingWACZ, store.StateComplete}
	if diff := cmp.Diff(want, statesOf(t, evs)); diff != "" {
		t.Errorf("states (-want +got):\n%s%s", diff, describe(evs))
	}
	if c.Retry == "" {
		t.Error("no retry field")
	}

	// The gaps between crawl events while the pages came in.
	crawlEvs := named(evs, "crawl")
	var firstPage time.Time
	var maxGap time.Duration
	var prev time.Time
	var prevDone int64
	sawTwo := false
	for _, ev := range crawlEvs {
		ce := crawlEvent(t, ev)
		if ce.Stats != nil {
			if ce.Stats.Done < prevDone {
				t.Errorf("pages done went down: %d after %d", ce.Stats.Done, prevDone)
			}
			prevDone = ce.Stats.Done
			if firstPage.IsZero() && ce.Stats.Done > 0 {
				firstPage, prev = ev.At, ev.At
			}
		}
		if len(ce.Instances) == 2 && ce.Scale == 2 && ce.Instances[1].Status != nil && *ce.Instances[1].Status == "running" {
			sawTwo = true
		}
		if !firstPage.IsZero() && ev.At.Before(res.lastPage) {
			maxGap, prev = max(maxGap, ev.At.Sub(prev)), ev.At
		}
	}
	if firstPage.IsZero() {
		t.Fatalf("no event showed a page done:%s", describe(evs))
	}
	if tail := res.lastPage.Sub(prev); tail > maxGap {
		maxGap = tail // the silence between the last event and the last page
	}
	t.Logf("%d crawl events, largest gap while the stats changed: %v", len(crawlEvs), maxGap)
	if maxGap > time.Second {
		t.Errorf("a gap of %v between events while the stats changed (max 1s)", maxGap)
	}
	if !sawTwo {
		t.Errorf("no event showed two running instances after the scale-up:%s", describe(crawlEvs))
	}

	last := crawlEvent(t, crawlEvs[len(crawlEvs)-1])
	if last.State != store.StateComplete || last.Finished == nil || last.Stats == nil || last.Stats.Done != 20 || last.PagesFailed != nil {
		t.Errorf("last crawl event %+v, want complete with the stored final stats", last)
	}
	end := evs[len(evs)-1]
	if end.Name != "end" || string(end.Data) != `{"reason":"finished","state":"complete"}` {
		t.Errorf("last event %s %s, want end", end.Name, end.Data)
	}
	running := 0
	for _, ev := range crawlEvs {
		if ce := crawlEvent(t, ev); ce.State == store.StateRunning && ce.PagesFailed != nil && *ce.PagesFailed > 0 {
			running++
		}
	}
	if running == 0 {
		t.Error("no running crawl event counted failed pages")
	}
}

// TestCrawlEventsShareOneReader: a hundred clients of one crawl cost the
// store (and the crawl's Redis) what one client costs, counted by the
// store's command monitor; only connecting (authentication) costs per
// client.
func TestCrawlEventsShareOneReader(t *testing.T) {
	storeMetrics := prometheus.NewRegistry()
	e := newEnvOn(t, mongotest.Open(t, store.WithMetrics(storeMetrics)), nil)
	srv := e.httpServer()
	// The test's own writes go through a store the monitor does not see.
	writer, err := store.Open(t.Context(), mongotest.URI(t), e.store.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close(context.Background())
	mongoCalls := func() float64 {
		n, _ := metricstest.Sum(t, storeMetrics, "trawler_mongo_command_duration_seconds", nil)
		return n
	}
	redisCalls := func() float64 {
		n, _ := metricstest.Sum(t, e.metrics, "trawler_redis_command_duration_seconds", map[string]string{"command": "pipeline"})
		return n
	}

	type load struct{ connect, mongo, redis float64 }
	loads := map[int]load{}
	for _, n := range []int{1, 100} {
		_, id := e.startCrawl(asCrawler, fmt.Sprintf("%d clients", n))
		before := mongoCalls()
		clients := make([]*sseClient, n)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				c, resp := e.openStream(srv, asViewer, id, "")
				if c == nil {
					t.Errorf("stream %d: %d", i, resp.StatusCode)
					return
				}
				c.until(t, 30*time.Second, func(ev sseEvent) bool { return ev.Name == "crawl" })
				clients[i] = c
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		connect := mongoCalls() - before
		m0, r0 := mongoCalls(), redisCalls()
		run := &crawlRun{st: writer, rdb: redisClient(t), id: id}
		if _, err := run.runCrawl(t.Context(), e.org.String()); err != nil {
			t.Fatal(err)
		}
		for _, c := range clients {
			evs := c.all(t, 60*time.Second)
			if len(evs) == 0 || evs[len(evs)-1].Name != "end" {
				t.Fatalf("a stream did not end with end:%s", describe(evs))
			}
		}
		loads[n] = load{connect: connect, mongo: mongoCalls() - m0, redis: redisCalls() - r0}
		t.Logf("%3d clients: %3.0f store calls to connect them; while the crawl ran: %.0f store calls, %.0f redis reads",
			n, loads[n].connect, loads[n].mongo, loads[n].redis)
	}
	one, hundred := loads[1], loads[100]
	// A poll more or less at each end of the run, as the feed's ticks fall.
	if hundred.mongo > one.mongo+2 || hundred.redis > one.redis+2 {
		t.Errorf("100 clients cost %.0f store calls and %.0f redis reads, one client %.0f and %.0f",
			hundred.mongo, hundred.redis, one.mongo, one.redis)
	}
	if one.mongo == 0 || one.redis == 0 {
		t.Errorf("nothing counted: %+v", one)
	}
}

// TestCrawlEventsResume: a client that reconnects with Last-Event-ID gets
// the states it missed and the crawl as it is now, nothing it had.
func TestCrawlEventsResume(t *testing.T) {
	e := newEnvWith(t, func(cfg *Config, _ *Deps) { cfg.EventsKeepAlive = 300 * time.Millisecond })
	srv := e.httpServer()
	_, id := e.startCrawl(asCrawler, "resumed")
	run := &crawlRun{st: e.store.Mongo, rdb: redisClient(t), id: id}
	ctx := t.Context()
	if err := run.state(ctx, store.StateRunning); err != nil {
		t.Fatal(err)
	}
	c, _ := e.openStream(srv, asViewer, id, "")
	evs := c.until(t, 10*time.Second, func(ev sseEvent) bool {
		return ev.Name == "crawl" && crawlEvent(t, ev).State == store.StateRunning
	})
	if diff := cmp.Diff([]string{"starting", "running"}, statesOf(t, evs)); diff != "" {
		t.Fatalf("states (-want +got):\n%s", diff)
	}
	lastID := evs[len(evs)-1].ID
	c.Close()

	// Nothing changed: the client gets nothing but keep-alives.
	c, _ = e.openStream(srv, asViewer, id, lastID)
	select {
	case ev := <-c.Events:
		t.Fatalf("resumed with nothing new, got %s %s", ev.Name, ev.Data)
	case <-c.Comments:
	case <-time.After(5 * time.Second):
		t.Fatal("no keep-alive within 5s (keep-alive 300ms)")
	}
	c.Close()

	// Two states and a page while away.
	for _, st := range []string{store.StatePendingWait, store.StateGenerateWACZ} {
		if err := run.state(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	c, _ = e.openStream(srv, asViewer, id, lastID)
	evs = c.until(t, 10*time.Second, func(ev sseEvent) bool { return ev.Name == "crawl" })
	if diff := cmp.Diff([]string{"pending-wait", "generate-wacz"}, statesOf(t, evs)); diff != "" {
		t.Fatalf("states after resuming (-want +got):\n%s%s", diff, describe(evs))
	}
	if ce := crawlEvent(t, evs[len(evs)-1]); ce.State != store.StateGenerateWACZ {
		t.Fatalf("crawl event after resuming: %+v", ce)
	}
	c.Close()

	// An id that makes no sense starts over.
	c, _ = e.openStream(srv, asViewer, id, "garbage")
	evs = c.until(t, 10*time.Second, func(ev sseEvent) bool { return ev.Name == "crawl" })
	if got := statesOf(t, evs); len(got) != 4 {
		t.Fatalf("states after a bad Last-Event-ID: %v", got)
	}
}

// TestCrawlEventsAccess: the route is for the crawl org's viewers, by
// header or auth_bearer; other orgs, unknown crawls and uploads are 404.
func TestCrawlEventsAccess(t *testing.T) {
	e := newEnv(t)
	srv := e.httpServer()
	_, id := e.startCrawl(asCrawler, "private")

	for _, tc := range []struct {
		as, crawl string
		status    int
	}{
		{"", id, 401},
		{asOutsider, id, 404},
		{asViewer, "no-such-crawl", 404},
	} {
		c, resp := e.openStream(srv, tc.as, tc.crawl, "")
		if c != nil || resp.StatusCode != tc.status {
			t.Errorf("as %q, crawl %s: %d, want %d", tc.as, tc.crawl, resp.StatusCode, tc.status)
		}
	}
	// The header works too.
	r := e.do(asViewer, "GET", e.orgPath("/crawls/no-such-crawl/events"), nil)
	e.wantDetail(r, 404, "crawl_not_found")

	_, upload := e.startCrawl(asCrawler, "an upload")
	if _, err := e.store.Raw().Collection("crawls").UpdateOne(t.Context(), bson.M{"_id": upload},
		bson.M{"$set": bson.M{"type": store.TypeUpload}}); err != nil {
		t.Fatal(err)
	}
	if c, resp := e.openStream(srv, asViewer, upload, ""); c != nil || resp.StatusCode != 404 {
		t.Errorf("an upload's stream: %d", resp.StatusCode)
	}
}

// TestCrawlEventsFinishedAndDeleted: a finished crawl's stream sends its
// history and final state and ends at once; a crawl deleted while watched
// ends its streams.
func TestCrawlEventsFinishedAndDeleted(t *testing.T) {
	e := newEnv(t)
	srv := e.httpServer()
	_, id := e.startCrawl(asCrawler, "done")
	e.setState(id, store.StateRunning)
	e.setState(id, store.StateCanceled)
	c, _ := e.openStream(srv, asViewer, id, "")
	evs := c.all(t, 10*time.Second)
	if diff := cmp.Diff([]string{"starting", "running", "canceled"}, statesOf(t, evs)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if names := eventNames(evs); !slices.Equal(names[len(names)-2:], []string{"crawl", "end"}) {
		t.Errorf("events %v, want the crawl then end", names)
	}

	_, gone := e.startCrawl(asCrawler, "deleted")
	c, _ = e.openStream(srv, asCrawler, gone, "")
	c.until(t, 10*time.Second, func(ev sseEvent) bool { return ev.Name == "crawl" })
	e.mustJSON(asCrawler, "POST", e.orgPath("/crawls/delete"), map[string]any{"crawl_ids": []string{gone}}, 200)
	evs = c.all(t, 10*time.Second)
	if len(evs) == 0 || evs[len(evs)-1].Name != "end" || string(evs[len(evs)-1].Data) != `{"reason":"deleted","state":null}` {
		t.Errorf("after the delete:%s", describe(evs))
	}
}

// TestEndStreams: shutting down ends open streams, which never go idle by
// themselves.
func TestEndStreams(t *testing.T) {
	e := newEnv(t)
	srv := e.httpServer()
	_, id := e.startCrawl(asCrawler, "long")
	c, _ := e.openStream(srv, asViewer, id, "")
	c.until(t, 10*time.Second, func(ev sseEvent) bool { return ev.Name == "crawl" })
	e.srv.EndStreams()
	c.all(t, 5*time.Second) // returns once the stream closed
	waitFor(t, "no open stream and no feed", 5*time.Second, func() bool {
		streams, _ := metricstest.Sum(t, e.metrics, "trawler_crawl_event_streams", nil)
		feeds, _ := metricstest.Sum(t, e.metrics, "trawler_crawl_event_feeds", nil)
		return streams == 0 && feeds == 0
	})
}

func eventNames(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name
	}
	return out
}

func TestToCrawlEvent(t *testing.T) {
	started := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	exit := int32(137)
	c := &store.Crawl{ID: "c1", State: store.StateRunning, Scale: 3, Started: started,
		Stats: &store.CrawlStats{Found: 1, Done: 0, Size: 5},
		Pods: map[string]store.PodStatus{
			"redis": {Phase: "Running"},
			"0":     {Phase: "Running", Restarts: 1, ExitCode: &exit, Reason: "OOMKilled"},
			"2":     {Phase: "Pending"},
		}}
	running, done := "running", "done"
	tests := []struct {
		name string
		live *crawlredis.Progress
		want crawlEventOut
	}{
		{"StoredOnly", nil, crawlEventOut{ID: "c1", State: "running", Scale: 3, Started: "2026-12-01T10:00:00",
			Stats: &statsOut{Found: 1, Size: 5}, Instances: []instanceOut{
				{Index: 0, Name: "crawl-c1-0", Phase: ptrTo("Running"), Restarts: 1, Reason: "OOMKilled"},
				{Index: 2, Name: "crawl-c1-2", Phase: ptrTo("Pending")},
			}}},
		{"WithLive", &crawlredis.Progress{Stats: crawlredis.Stats{Found: 9, Done: 4, Size: 300}, Failed: 1,
			Statuses: map[string]string{"crawl-c1-0": "running", "crawl-c1-1": "done", "other": "x"},
			Sizes:    map[string]int64{"crawl-c1-0": 200, "crawl-c1-1": 100}},
			crawlEventOut{ID: "c1", State: "running", Scale: 3, Started: "2026-12-01T10:00:00",
				Stats: &statsOut{Found: 9, Done: 4, Size: 300}, PagesFailed: ptrTo(int64(1)), Instances: []instanceOut{
					{Index: 0, Name: "crawl-c1-0", Phase: ptrTo("Running"), Restarts: 1, Reason: "OOMKilled", Status: &running, Size: 200},
					{Index: 1, Name: "crawl-c1-1", Status: &done, Size: 100},
					{Index: 2, Name: "crawl-c1-2", Phase: ptrTo("Pending")},
				}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, toCrawlEvent(c, tt.live)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseEventPosition(t *testing.T) {
	for id, want := range map[string]eventPosition{
		"":                    {},
		"3-00ff":              {seq: 3, hash: "00ff"},
		"0-":                  {},
		"x-00ff":              {},
		"-1-00ff":             {},
		"12-abc-def":          {seq: 12, hash: "abc-def"},
		"7-0123456789abcdef":  {seq: 7, hash: "0123456789abcdef"},
		"nonsense without id": {},
	} {
		if got := parseEventPosition(id); got != want {
			t.Errorf("%q: %+v, want %+v", id, got, want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
