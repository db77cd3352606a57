package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/utils/clock"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/sandbox"
)

// testRedis starts a redis-server for one test and returns a config
// whose dialer sends every crawl's Redis URL to it, plus a client.
func testRedis(t testing.TB) (*sandbox.Redis, Config, *redis.Client) {
	t.Helper()
	r, err := sandbox.StartRedis(context.Background(), t.TempDir())
	if err != nil {
		t.Skipf("no redis-server: %v", err)
	}
	t.Cleanup(func() { _ = r.Stop(5 * time.Second) })
	cfg := testConfig()
	cfg.RedisPollInterval = 50 * time.Millisecond
	cfg.RedisTimeout = 300 * time.Millisecond
	cfg.RedisDialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, r.Addr())
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	t.Cleanup(func() { c.Close() })
	return r, cfg, c
}

func doneMsg(file string, size int64) string {
	b, _ := json.Marshal(doneMessage{ID: testID, User: "user1", Filename: file, Hash: "abc", Size: size})
	return string(b)
}

func TestReadAndControl(t *testing.T) {
	_, cfg, c := testRedis(t)
	ctx := context.Background()
	k := crawlredis.Keys(testID)
	c.HSet(ctx, k.Status(), name(0), "running", name(1), "done", name(2), "done")
	c.HSet(ctx, k.StopOne(), name(1), "1", name(2), "1")
	c.Set(ctx, k.Done(), "7", 0)
	c.SAdd(ctx, k.Seen(), "a", "b", "c", "d", "e", "f", "g", "h")
	c.HSet(ctx, k.Size(), name(0), "1000", name(1), "234")
	c.RPush(ctx, crawlredis.CrawlsDone, "m1", "m2")
	c.LPush(ctx, k.Errors(), "e1", "e2", "e3") // e3 is the newest

	client, err := newRedisClient(cfg, testID)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctl := redisControl{Stopping: true, StopOne: map[string]bool{name(0): true, name(1): false}, Cleanup: []string{name(2)}}
	s, err := readAndControl(ctx, client, testID, ctl)
	if err != nil {
		t.Fatal(err)
	}
	if s.PagesDone != 7 || s.PagesFound != 8 || s.Size != 1234 || s.DoneLen != 2 || !slices.Equal(s.Done, []string{"m1", "m2"}) {
		t.Errorf("snapshot %+v", s)
	}
	if !slices.Equal(s.Errors, []string{"e1", "e2", "e3"}) || s.ErrorSeq != 0 {
		t.Errorf("errors %v seq %d", s.Errors, s.ErrorSeq)
	}
	if len(s.Statuses) != 2 || s.Statuses[name(2)] != "" {
		t.Errorf("statuses %v: cleanup should have removed %s", s.Statuses, name(2))
	}
	if len(s.StopOne) != 1 || !s.StopOne[name(0)] {
		t.Errorf("stopone %v", s.StopOne)
	}
	if c.Get(ctx, k.Stopping()).Val() != "1" || c.Get(ctx, crawlredis.LegacyStop).Val() != "1" {
		t.Error("stopping not set")
	}

	// Crawlers before 0.10 kept :d as a list.
	c.Del(ctx, k.Done())
	c.RPush(ctx, k.Done(), "x", "y")
	if s, err = readAndControl(ctx, client, testID, redisControl{}); err != nil || s.PagesDone != 2 {
		t.Errorf("list :d: done %d err %v", s.PagesDone, err)
	}
}

// TestForgetInterrupted (real Redis): Forget deletes a status only while
// it says interrupted, so a crawler that started since keeps what it
// wrote.
func TestForgetInterrupted(t *testing.T) {
	_, cfg, c := testRedis(t)
	ctx := context.Background()
	k := crawlredis.Keys(testID)
	c.HSet(ctx, k.Status(), name(0), "interrupted", name(1), "running")
	client, err := newRedisClient(cfg, testID)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := readAndControl(ctx, client, testID, redisControl{Forget: []string{name(0), name(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{name(1): "running"}; !maps.Equal(s.Statuses, want) {
		t.Errorf("statuses %v, want %v", s.Statuses, want)
	}
}

func TestIngestIsAtLeastOnceAndIdempotent(t *testing.T) {
	_, cfg, c := testRedis(t)
	ctx := context.Background()
	st := newMemStore()
	st.addCrawl(testID)
	k := crawlredis.Keys(testID)
	c.RPush(ctx, crawlredis.CrawlsDone,
		doneMsg("http://minio:9000/bucket/org1/a.wacz", 100),
		doneMsg("http://other/x.wacz", 5),
		"not json")
	for i := range 5 {
		c.LPush(ctx, k.Errors(), fmt.Sprintf("err%d", i))
	}
	client, _ := newRedisClient(cfg, testID)
	defer client.Close()
	in := newIngester(newJob(1), st, time.Second, slog.Default())

	s, err := readAndControl(ctx, client, testID, redisControl{})
	if err != nil {
		t.Fatal(err)
	}
	// A crash after recording but before removing: the next round replays.
	if err := in.record(ctx, s.Done); err != nil {
		t.Fatal(err)
	}
	// The process that replays records nothing twice (the counts below).
	replay := newIngester(newJob(1), st, time.Second, slog.Default())
	if err := replay.record(ctx, s.Done); err != nil {
		t.Fatal(err)
	}
	if err := st.AddCrawlErrors(ctx, testID, 0, s.Errors); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, _ = readAndControl(ctx, client, testID, redisControl{})
		pending, err := in.files(ctx, client, s)
		if err != nil || pending != 0 {
			t.Fatalf("pending %d err %v", pending, err)
		}
		if err := in.errorLines(ctx, client, s); err != nil {
			t.Fatal(err)
		}
	}
	got := st.get(testID)
	if got.FileCount != 2 || got.FileSize != 105 || in.filesAdded != 2 || in.filesAddedSize != 105 {
		t.Errorf("files %+v count %d size %d, ingester %d/%d", got.Files, got.FileCount, got.FileSize, in.filesAdded, in.filesAddedSize)
	}
	if f := got.Files[0]; f.Filename != "org1/a.wacz" || f.DefStorageName == nil || *f.DefStorageName != "default" {
		t.Errorf("relative file %+v", f)
	}
	if f := got.Files[1]; f.Filename != "http://other/x.wacz" || f.DefStorageName != nil {
		t.Errorf("foreign file %+v", f)
	}
	if e := st.errorsOf(testID); !slices.Equal(e, []string{"err0", "err1", "err2", "err3", "err4"}) {
		t.Errorf("errors %v", e)
	}
	if n := c.LLen(ctx, crawlredis.CrawlsDone).Val(); n != 0 {
		t.Errorf("crawls-done still has %d", n)
	}
	if n := c.LLen(ctx, k.Errors()).Val(); n != 0 || c.Get(ctx, crawlredis.ErrorsIngested).Val() != "5" {
		t.Errorf(":e has %d, ingested %s", n, c.Get(ctx, crawlredis.ErrorsIngested).Val())
	}

	// A second trim of the same batch (another ingester, a replay) is refused.
	c.LPush(ctx, k.Errors(), "late")
	if err := trimErrors(ctx, client, testID, 0, 5); err != nil {
		t.Fatal(err)
	}
	if n := c.LLen(ctx, k.Errors()).Val(); n != 1 {
		t.Errorf("stale trim removed new lines: %d left", n)
	}
}

func TestPollerWakesOnlyOnChangeAndSurvivesOutages(t *testing.T) {
	r, cfg, c := testRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := newMemStore()
	st.addCrawl(testID)
	var wakes, progressWakes atomic.Int32
	ps := newPollers(cfg, st, clock.RealClock{}, slog.Default(), func(_, change string) {
		wakes.Add(1)
		if change == "" {
			progressWakes.Add(1)
		}
	})
	defer ps.stopAll()
	cj := newJob(1)
	k := crawlredis.Keys(testID)
	pkey := "crawlers/" + cj.Name

	ps.ensure(ctx, pkey, cj, redisControl{}, "")
	if !eventually(2*time.Second, func() bool { s := ps.get(pkey); return s != nil && s.Reachable }) {
		t.Fatal("never reachable")
	}
	time.Sleep(300 * time.Millisecond)
	steady := wakes.Load()
	time.Sleep(300 * time.Millisecond)
	if n := wakes.Load(); n != steady {
		t.Errorf("woke %d times while nothing changed", n-steady)
	}

	start := time.Now()
	c.HSet(ctx, k.Status(), name(0), "running")
	c.Set(ctx, k.Done(), "3", 0)
	if !eventually(time.Second, func() bool { s := ps.get(pkey); return s.Statuses[name(0)] == "running" && s.PagesDone == 3 }) {
		t.Fatal("change not seen")
	}
	t.Logf("change seen after %v", time.Since(start))

	// Pages alone are progress: the wake says so (the sync holds it to the
	// write budget), and the poller writes no stats itself.
	before, progressBefore := wakes.Load(), progressWakes.Load()
	c.Set(ctx, k.Done(), "4", 0)
	if !eventually(time.Second, func() bool { return ps.get(pkey).PagesDone == 4 }) {
		t.Fatal("progress not seen")
	}
	if w, pw := wakes.Load()-before, progressWakes.Load()-progressBefore; w != 1 || pw != 1 {
		t.Errorf("progress woke %d times (%d as progress), want once as progress", w, pw)
	}
	if c := st.get(testID); c.Stats != nil {
		t.Errorf("the poller stored stats %+v", c.Stats)
	}

	// The store goes away: the file stays pending, then is recorded.
	st.setDown(true)
	c.RPush(ctx, crawlredis.CrawlsDone, doneMsg("http://m/org1/b.wacz", 10))
	if !eventually(time.Second, func() bool { return ps.get(pkey).PendingFiles == 1 }) {
		t.Fatal("pending file not reported")
	}
	st.setDown(false)
	if !eventually(5*time.Second, func() bool { s := ps.get(pkey); return s.PendingFiles == 0 && s.FilesAdded == 1 }) {
		t.Fatalf("file not recorded after the store came back: %+v", ps.get(pkey))
	}

	// Redis goes away and comes back; its data was not persisted here, but
	// the control keys are asserted again.
	ps.ensure(ctx, pkey, cj, redisControl{Stopping: true}, "")
	if err := r.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !eventually(2*time.Second, func() bool { return !ps.get(pkey).Reachable }) {
		t.Fatal("outage not reported")
	}
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if !eventually(8*time.Second, func() bool { return ps.get(pkey).Reachable }) {
		t.Fatal("recovery not reported")
	}
	if !eventually(time.Second, func() bool { return c.Get(ctx, k.Stopping()).Val() == "1" }) {
		t.Error("stopping not asserted again after the restart")
	}
}

// TestPollerRidesOutOneFailedRound: one failed round (a reply lost on a
// loaded node) is not an outage, so it costs no wake; rounds failing in a
// row are, from the first.
func TestPollerRidesOutOneFailedRound(t *testing.T) {
	_, cfg, c := testRedis(t)
	ctx := context.Background()
	cfg.RedisIdlePollInterval = cfg.RedisPollInterval // every round at the poll interval
	var failRounds atomic.Int32
	cfg.RedisHook = lostRounds{fail: &failRounds}
	st := newMemStore()
	st.addCrawl(testID)
	var mu sync.Mutex
	var changes []string
	ps := newPollers(cfg, st, clock.RealClock{}, slog.Default(), func(_, change string) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, change)
	})
	defer ps.stopAll()
	cj := newJob(1)
	pkey := "crawlers/" + cj.Name
	k := crawlredis.Keys(testID)
	ps.ensure(ctx, pkey, cj, redisControl{}, "")
	if !eventually(2*time.Second, func() bool { s := ps.get(pkey); return s != nil && s.Reachable }) {
		t.Fatal("never reachable")
	}
	reachableWakes := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(slices.DeleteFunc(slices.Clone(changes), func(c string) bool { return c != "redis-reachable" }))
	}

	failRounds.Store(1)
	c.Set(ctx, k.Done(), "5", 0)
	if !eventually(5*time.Second, func() bool { return failRounds.Load() == 0 && ps.get(pkey).PagesDone == 5 }) {
		t.Fatalf("the round after the failed one never came: %d failures left, %+v", failRounds.Load(), ps.get(pkey))
	}
	if n := reachableWakes(); n != 0 {
		t.Errorf("one failed round woke the crawl %d times as unreachable", n)
	}

	before := time.Now()
	failRounds.Store(int32(unreachableAfter + 1))
	if !eventually(5*time.Second, func() bool { return !ps.get(pkey).Reachable }) {
		t.Fatalf("rounds failing in a row not reported: %d failures left, %+v", failRounds.Load(), ps.get(pkey))
	}
	if since := ps.get(pkey).Since; since.Before(before) || time.Since(since) < cfg.RedisPollInterval {
		t.Errorf("unreachable since %v, want the first failure's time (after %v, a round before now)", since, before)
	}
	if !eventually(5*time.Second, func() bool { return ps.get(pkey).Reachable }) {
		t.Fatal("recovery not reported")
	}
	if n := reachableWakes(); n != 2 {
		t.Errorf("an outage and its end woke the crawl %d times, want 2", n)
	}
}

// lostRounds fails a round's pipeline while fail is positive, taking
// one from it: a round whose reply was lost.
type lostRounds struct{ fail *atomic.Int32 }

func (lostRounds) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (lostRounds) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h lostRounds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.fail.Load() > 0 && h.fail.Add(-1) >= 0 {
			return errors.New("reply lost")
		}
		return next(ctx, cmds)
	}
}

// quietPollers are pollers of the test crawl, on a store that holds it,
// whose wakes go nowhere; they stop when the test ends.
func quietPollers(t *testing.T, cfg Config) *pollers {
	st := newMemStore()
	st.addCrawl(testID)
	ps := newPollers(cfg, st, clock.RealClock{}, slog.Default(), func(string, string) {})
	t.Cleanup(ps.stopAll)
	return ps
}

// TestPollerRoundsKicksAndStop: the poller runs its rounds from a timer.
// A control change during a round makes another round follow at once
// (the poll interval here is an hour, so only that can assert it), and a
// stop during a round ends the poller once that round returns.
func TestPollerRoundsKicksAndStop(t *testing.T) {
	_, cfg, c := testRedis(t)
	cfg.RedisPollInterval = time.Hour
	cfg.RedisTimeout = 5 * time.Second
	dial := cfg.RedisDialer
	// Each dial sends the gate it waits at: a dial of "a"'s that the
	// client began before it was closed may still arrive during "b"'s
	// phase, and must not pass for "b"'s. A dial waits for its gate even
	// when its context ends: the stop cancels the round's context, and a
	// round whose dial returned at that would end before the test looks.
	// The test's end releases them all.
	dialing, over := make(chan chan struct{}, 100), make(chan struct{})
	var release atomic.Pointer[chan struct{}]
	first := make(chan struct{})
	release.Store(&first)
	cfg.RedisDialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		gate := *release.Load()
		dialing <- gate
		select {
		case <-gate:
		case <-over:
			return nil, net.ErrClosed
		}
		return dial(ctx, network, addr)
	}
	ctx := context.Background()
	ps := quietPollers(t, cfg)
	t.Cleanup(func() { close(over) }) // runs before quietPollers' stopAll
	cj := newJob(1)
	k := crawlredis.Keys(testID)

	// The first round waits in its dial; a new control arrives meanwhile.
	ps.ensure(ctx, "a", cj, redisControl{}, "")
	<-dialing
	ps.ensure(ctx, "a", cj, redisControl{Stopping: true}, "")
	close(first)
	if !eventually(5*time.Second, func() bool { return c.Get(ctx, k.Stopping()).Val() == "1" }) {
		t.Fatal("the control that came during a round was not asserted by the next one")
	}

	// Idle between rounds: a stop ends the poller at once.
	select {
	case <-ps.stop("a"):
	case <-time.After(5 * time.Second):
		t.Fatal("an idle poller did not end when stopped")
	}

	// A stop during a round waits for that round.
	second := make(chan struct{})
	release.Store(&second)
	ps.ensure(ctx, "b", cj, redisControl{}, "")
	for gate := range dialing {
		if gate == second {
			break
		}
	}
	done := ps.stop("b")
	select {
	case <-done:
		t.Fatal("the poller ended while its round was still running")
	default:
	}
	close(second)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the poller did not end after its round returned")
	}
}

// roundCounter counts the pipelines sent to Redis: one per poll round.
type roundCounter struct{ n atomic.Int32 }

func (*roundCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*roundCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (r *roundCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestPollerPacesIdleCrawls: a crawl whose Redis shows nothing new is read
// less and less often, down to the idle pace; a change of its pods wakes
// the poller at once, and a change seen brings back the fast pace.
func TestPollerPacesIdleCrawls(t *testing.T) {
	_, cfg, c := testRedis(t)
	cfg.RedisPollInterval = 10 * time.Millisecond
	cfg.RedisIdlePollInterval = time.Hour
	rounds := &roundCounter{}
	cfg.RedisHook = rounds
	ctx := context.Background()
	ps := quietPollers(t, cfg)
	cj := newJob(1)
	k := crawlredis.Keys(testID)

	ps.ensure(ctx, "a", cj, redisControl{}, "pods-1")
	// A second of quiet at 10 ms, then 20, 40, ... 1280 ms: about 108
	// rounds in the first 3.6 s, where the fast pace would make 360.
	if !eventually(10*time.Second, func() bool { return rounds.n.Load() >= 108 }) {
		t.Fatalf("only %d rounds in 10 s", rounds.n.Load())
	}
	idle := rounds.n.Load()
	var quiet bool
	for range 20 {
		before := rounds.n.Load()
		time.Sleep(500 * time.Millisecond)
		if rounds.n.Load() == before {
			quiet = true
			break
		}
	}
	if !quiet {
		t.Fatalf("still polling every half second after %d rounds", rounds.n.Load())
	}
	if n := rounds.n.Load(); n > idle+12 {
		t.Errorf("%d rounds after going idle; the pace should have slowed", n-idle)
	}

	// The crawler moves on; a pod event (a new pods version) wakes the
	// poller, which sees the change at once.
	c.Set(ctx, k.Done(), "1", 0)
	ps.ensure(ctx, "a", cj, redisControl{}, "pods-2")
	if !eventually(time.Second, func() bool { return ps.get("a").PagesDone == 1 }) {
		t.Fatal("a pod event did not wake the idle poller")
	}
	// Having seen a change, it polls fast again.
	c.Set(ctx, k.Done(), "2", 0)
	if !eventually(time.Second, func() bool { return ps.get("a").PagesDone == 2 }) {
		t.Fatal("no fast pace after a change")
	}
}
