package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

func TestMain(m *testing.M) { mongotest.Main(m, mongotest.Options{}) }

// testConfig is a webhook configuration with the settings table's retry
// schedule (first retry after a minute, doubling up to 8 h, 12
// attempts) and adjust applied.
func testConfig(adjust func(*webhook.Config)) webhook.Config {
	c := webhook.Config{MaxAttempts: 12, RetryDelay: time.Minute, MaxRetryDelay: 8 * time.Hour,
		Timeout: 15 * time.Second, PollInterval: 10 * time.Second, Workers: 8}
	adjust(&c)
	return c
}

// receiver is a webhook endpoint that answers the statuses it is given in
// turn (200 once they run out; 503 to everything while it is down) and
// records what it got.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	down     bool
	bodies   []string
	srv      *httptest.Server
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, req.Header.Get("Content-Type")+" "+string(body))
		status := http.StatusOK
		switch {
		case r.down:
			status = http.StatusServiceUnavailable
		case len(r.statuses) > 0:
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.bodies...)
}

func (r *receiver) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// watchedStore is the store as a Notifier sees it, telling the test of
// every look into the outbox: to show that nothing is sent at a given
// time, a test waits for a look made at that time which found nothing
// more, then counts the claims.
type watchedStore struct {
	*store.Mongo
	mu     sync.Mutex
	claims int
	empty  []time.Time // the times of the looks that found nothing due
}

func (w *watchedStore) ClaimNotification(ctx context.Context, now time.Time, lease time.Duration) (*store.NotificationClaim, error) {
	c, err := w.Mongo.ClaimNotification(ctx, now, lease)
	w.mu.Lock()
	defer w.mu.Unlock()
	if c != nil {
		w.claims++
	} else if err == nil {
		w.empty = append(w.empty, now)
	}
	return c, err
}

// claimed waits for a look at at or later that found nothing due, and
// returns how many notifications were claimed until then.
func (w *watchedStore) claimed(t *testing.T, n *webhook.Notifier, at time.Time) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.mu.Lock()
		looked := slices.ContainsFunc(w.empty, func(e time.Time) bool { return !e.Before(at) })
		claims := w.claims
		w.mu.Unlock()
		if looked {
			return claims
		}
		if time.Now().After(deadline) {
			t.Fatalf("no look into the outbox at %v", at)
		}
		n.Kick()
		time.Sleep(20 * time.Millisecond) // polling, with a deadline
	}
}

// harness is a store with an org whose crawlFinished URL is the
// receiver, and a fake clock the Notifiers it starts run on.
type harness struct {
	t     *testing.T
	st    *store.Mongo
	org   *store.Org
	clock *testclock.FakeClock
	deps  webhook.Deps
}

func newHarness(t *testing.T, r *receiver) *harness {
	t.Helper()
	ctx := context.Background()
	st := mongotest.Open(t).Mongo
	org := &store.Org{ID: uuid.New(), Name: "hooks"}
	if err := st.CreateOrg(ctx, org); err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{store.EventCrawlFinished: r.srv.URL + "/finished"}
	if err := st.SetOrgWebhooks(ctx, org.ID, urls, "https://app.example.com"); err != nil {
		t.Fatal(err)
	}
	clk := testclock.NewFakeClock(time.Now().UTC().Truncate(time.Millisecond))
	// The receivers are httptest servers on loopback, which deliveries
	// reach only when the operator allows it.
	deps := webhook.Deps{Clock: clk, Allowed: loopbackAllowed(t), Resources: func(_ context.Context, c *store.Crawl) ([]string, error) {
		return []string{"/data/" + c.ID + ".wacz", "https://s3.example.com/b/x.wacz?sig=1"}, nil
	}}
	return &harness{t: t, st: st, org: org, clock: clk, deps: deps}
}

// start runs a Notifier (one replica) until the test ends or stop is
// called.
func (h *harness) start(cfg webhook.Config) (n *webhook.Notifier, w *watchedStore, stop func()) {
	h.t.Helper()
	w = &watchedStore{Mongo: h.st}
	deps := h.deps
	deps.Store = w
	n, err := webhook.New(cfg, deps)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	h.t.Cleanup(stop)
	return n, w, stop
}

// setup is a harness running one Notifier.
func setup(t *testing.T, cfg webhook.Config, r *receiver) (*harness, *webhook.Notifier, *watchedStore) {
	t.Helper()
	h := newHarness(t, r)
	n, w, _ := h.start(cfg)
	return h, n, w
}

// notes returns the org's notifications.
func (h *harness) notes() []store.Notification {
	h.t.Helper()
	notes, _, err := h.st.ListNotifications(context.Background(), h.org.ID, store.Paging{})
	if err != nil {
		h.t.Fatal(err)
	}
	return notes
}

// wait polls the org's notifications until cond holds for each.
func (h *harness) wait(what string, cond func(store.Notification) bool) []store.Notification {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		notes := h.notes()
		if len(notes) > 0 && !slices.ContainsFunc(notes, func(n store.Notification) bool { return !cond(n) }) {
			return notes
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: notifications %+v", what, notes)
		}
		time.Sleep(20 * time.Millisecond) // polling the store, not synchronising
	}
}

// finished reports crawl id's end.
func (h *harness) finished(n *webhook.Notifier, id string) {
	h.t.Helper()
	if err := n.CrawlFinished(context.Background(), &store.Crawl{ID: id, OID: h.org.ID, State: store.StateComplete}); err != nil {
		h.t.Fatal(err)
	}
}

func attempts(k int) func(store.Notification) bool {
	return func(n store.Notification) bool { return n.Attempts == k }
}

// TestFailedDeliveryReadsOneAttemptForAMinute: after a failed first
// delivery the notification reads attempts 1, success false, until its
// retry is due a minute later; then the retry is made at once.
func TestFailedDeliveryReadsOneAttemptForAMinute(t *testing.T) {
	r := newReceiver(t, 503)
	h, n, w := setup(t, testConfig(func(*webhook.Config) {}), r)
	t0 := h.clock.Now()
	h.finished(n, "crawl-1")
	note := h.wait("first attempt", attempts(1))[0]
	if note.Success || note.LastAttempted == nil || !note.LastAttempted.Equal(t0) ||
		note.NextAttempt == nil || !note.NextAttempt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after the failed first delivery: %+v", note)
	}
	for _, after := range []time.Duration{time.Second, 30 * time.Second, time.Minute - time.Millisecond} {
		h.clock.SetTime(t0.Add(after))
		if claims := w.claimed(t, n, t0.Add(after)); claims != 1 {
			t.Fatalf("%d claims %v after the first attempt, want none", claims-1, after)
		}
		if note := h.notes()[0]; note.Attempts != 1 || note.Success {
			t.Fatalf("%v after the first attempt: %+v", after, note)
		}
	}
	h.clock.SetTime(t0.Add(time.Minute))
	note = h.wait("retry", attempts(2))[0]
	if !note.Success || !note.LastAttempted.Equal(t0.Add(time.Minute)) || note.NextAttempt != nil {
		t.Fatalf("after the retry: %+v", note)
	}
	if got := len(r.got()); got != 2 {
		t.Fatalf("receiver got %d requests, want 2", got)
	}
}

// TestRetryAtScheduledTime: a receiver that keeps failing gets the same
// body at each retry of the schedule (the wait doubling up to its cap),
// none before its time, and none after the last attempt.
func TestRetryAtScheduledTime(t *testing.T) {
	r := newReceiver(t)
	r.setDown(true)
	h, n, w := setup(t, testConfig(func(c *webhook.Config) { c.MaxAttempts, c.MaxRetryDelay = 4, 3*time.Minute }), r)
	t0 := h.clock.Now()
	crawl := &store.Crawl{ID: "crawl-1", OID: h.org.ID, State: store.StateComplete}
	if err := n.CrawlFinished(context.Background(), crawl); err != nil {
		t.Fatal(err)
	}
	h.wait("first attempt", attempts(1))
	for i, at := range []time.Duration{time.Minute, 3 * time.Minute, 6 * time.Minute} {
		h.clock.SetTime(t0.Add(at - time.Millisecond))
		if claims := w.claimed(t, n, h.clock.Now()); claims != i+1 {
			t.Fatalf("retry %d made before %v", i+1, at)
		}
		h.clock.SetTime(t0.Add(at))
		note := h.wait(fmt.Sprintf("retry %d", i+1), attempts(i+2))[0]
		if note.Success || !note.LastAttempted.Equal(t0.Add(at)) {
			t.Fatalf("after retry %d: %+v", i+1, note)
		}
	}
	note := h.notes()[0]
	if note.NextAttempt != nil || note.AutoAttempts != 4 {
		t.Fatalf("not given up after 4 attempts: %+v", note)
	}
	h.clock.SetTime(t0.Add(48 * time.Hour))
	if claims := w.claimed(t, n, h.clock.Now()); claims != 4 {
		t.Fatalf("%d claims after giving up", claims-4)
	}
	want := fmt.Sprintf(`application/json {"downloadUrls":["https://app.example.com/data/crawl-1.wacz",`+
		`"https://s3.example.com/b/x.wacz?sig=1"],"orgId":"%s","itemId":"crawl-1","event":"crawlFinished","state":"complete"}`, h.org.ID)
	bodies := r.got()
	if len(bodies) != 4 {
		t.Fatalf("receiver got %d requests, want 4", len(bodies))
	}
	for i, b := range bodies {
		if b != want {
			t.Errorf("request %d:\n got %s\nwant %s", i, b, want)
		}
	}
	if string(note.Body) != want[len("application/json "):] {
		t.Errorf("stored body %s", note.Body)
	}
	// The same event again stores and sends nothing.
	if err := n.CrawlFinished(context.Background(), crawl); err != nil {
		t.Fatal(err)
	}
	if notes := h.notes(); len(notes) != 1 {
		t.Fatalf("%d notifications after repeating the event", len(notes))
	}
}

// TestReceiverBackGetsEachEventOnceMore: events whose first delivery
// failed, trawler restarted, and two replicas running: once the receiver
// is back, each event reaches it exactly once more, at its retry time.
func TestReceiverBackGetsEachEventOnceMore(t *testing.T) {
	r := newReceiver(t)
	r.setDown(true)
	h := newHarness(t, r)
	cfg := testConfig(func(*webhook.Config) {})
	first, _, stop := h.start(cfg)
	crawls := []string{"crawl-1", "crawl-2", "crawl-3"}
	for _, id := range crawls {
		h.finished(first, id)
	}
	h.wait("first attempts", attempts(1))
	stop()

	r.setDown(false)
	a, wa, _ := h.start(cfg)
	b, wb, _ := h.start(cfg)
	h.clock.Step(time.Minute)
	notes := h.wait("delivered", func(n store.Notification) bool { return n.Success })
	for _, note := range notes {
		if note.Attempts != 2 || note.NextAttempt != nil {
			t.Errorf("after the receiver came back: %+v", note)
		}
	}
	// Nothing is left to send, however long the replicas run.
	h.clock.Step(48 * time.Hour)
	if claims := wa.claimed(t, a, h.clock.Now()) + wb.claimed(t, b, h.clock.Now()); claims != len(crawls) {
		t.Fatalf("the replicas claimed %d times, want %d", claims, len(crawls))
	}
	per := map[string]int{}
	for _, body := range r.got() {
		for _, id := range crawls {
			if strings.Contains(body, `"itemId":"`+id+`"`) {
				per[id]++
			}
		}
	}
	for _, id := range crawls {
		if per[id] != 2 {
			t.Errorf("%s reached the receiver %d times, want 2 (down, then once more)", id, per[id])
		}
	}
}

// TestManualRetrySendsAtOnce: a retry asked for through the API is sent
// without waiting for the schedule and counts one attempt; the automatic
// retry stays a backoff away.
func TestManualRetrySendsAtOnce(t *testing.T) {
	r := newReceiver(t, 503, 503)
	h, n, w := setup(t, testConfig(func(*webhook.Config) {}), r)
	t0 := h.clock.Now()
	h.finished(n, "crawl-1")
	note := h.wait("first attempt", attempts(1))[0]
	ctx := context.Background()
	if err := h.st.RetryNotification(ctx, h.org.ID, note.ID, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.Kick()
	note = h.wait("manual retry", attempts(2))[0]
	if note.Success || note.AutoAttempts != 1 || note.RetriesRequested != 0 ||
		note.NextAttempt == nil || !note.NextAttempt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after a failed manual retry: %+v", note)
	}
	if claims := w.claimed(t, n, t0); claims != 2 {
		t.Fatalf("%d claims, want 2 (the first delivery and the manual retry)", claims)
	}
	if err := h.st.RetryNotification(ctx, h.org.ID, note.ID, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.Kick()
	note = h.wait("second manual retry", attempts(3))[0]
	if !note.Success || note.NextAttempt != nil {
		t.Fatalf("after a successful manual retry: %+v", note)
	}
	h.clock.SetTime(t0.Add(48 * time.Hour))
	if claims := w.claimed(t, n, h.clock.Now()); claims != 3 || len(r.got()) != 3 {
		t.Fatalf("%d claims, %d requests after delivery; want 3", claims, len(r.got()))
	}
}

// TestManualRetryIsOneAttempt: with upstream's single try
// (MaxAttempts 1), a manual retry of a failed notification is exactly one
// more attempt, as upstream's clients expect.
func TestManualRetryIsOneAttempt(t *testing.T) {
	r := newReceiver(t)
	r.setDown(true)
	h, n, w := setup(t, testConfig(func(c *webhook.Config) { c.MaxAttempts = 1 }), r)
	h.finished(n, "crawl-1")
	note := h.wait("first attempt", attempts(1))[0]
	if note.NextAttempt != nil {
		t.Fatalf("retry scheduled with MaxAttempts 1: %+v", note)
	}
	if err := h.st.RetryNotification(context.Background(), h.org.ID, note.ID, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.Kick()
	h.wait("manual retry", attempts(2))
	h.clock.Step(48 * time.Hour)
	if claims := w.claimed(t, n, h.clock.Now()); claims != 2 {
		t.Fatalf("%d claims, want 2", claims)
	}
	if note := h.notes()[0]; note.Attempts != 2 || note.Success || note.NextAttempt != nil {
		t.Fatalf("after the manual retry: %+v", note)
	}
}

// TestUnsubscribedOrgGetsNothing: without a URL for the event nothing is
// stored.
func TestUnsubscribedOrgGetsNothing(t *testing.T) {
	r := newReceiver(t)
	h, n, _ := setup(t, testConfig(func(*webhook.Config) {}), r)
	if err := n.CrawlStarted(context.Background(), &store.Crawl{ID: "crawl-3", OID: h.org.ID}); err != nil {
		t.Fatal(err)
	}
	if notes := h.notes(); len(notes) != 0 {
		t.Fatalf("notification stored without a URL: %+v", notes)
	}
}

// TestConfigRequired: a Config missing a value is refused.
func TestConfigRequired(t *testing.T) {
	if _, err := webhook.New(testConfig(func(c *webhook.Config) { c.Workers = 0 }), webhook.Deps{Store: mongotest.Open(t)}); err == nil {
		t.Fatal("accepted a Config without Workers")
	}
}

// TestUploadAndCollectionEvents: the bodies of uploadFinished (once per
// stored version, then addedToCollection per collection) and of the
// collection events the API sends.
func TestUploadAndCollectionEvents(t *testing.T) {
	r := newReceiver(t)
	h := newHarness(t, r)
	// The list is in creation order: the events need times of their own.
	h.deps.Clock = clock.RealClock{}
	n, _, _ := h.start(testConfig(func(*webhook.Config) {}))
	st, org, ctx := h.st, h.org, context.Background()
	urls := map[string]string{}
	for _, e := range []string{store.EventUploadFinished, store.EventAddedToCollection, store.EventRemovedFromCollection} {
		urls[e] = r.srv.URL + "/" + e
	}
	if err := st.SetOrgWebhooks(ctx, org.ID, urls, "https://app.example.com"); err != nil {
		t.Fatal(err)
	}
	coll := uuid.New()
	upload := &store.Crawl{ID: "upload-1", OID: org.ID, Type: store.TypeUpload, CollectionIDs: []uuid.UUID{coll},
		Files: []store.CrawlFile{{Filename: "a.wacz"}}}
	for range 2 {
		if err := n.UploadFinished(ctx, upload); err != nil {
			t.Fatal(err)
		}
	}
	replaced := *upload
	replaced.Files = []store.CrawlFile{{Filename: "b.wacz"}}
	if err := n.UploadFinished(ctx, &replaced); err != nil {
		t.Fatal(err)
	}
	if err := n.CollectionChanged(ctx, org.ID, store.EventRemovedFromCollection, coll, []string{"upload-1", "crawl-9"}); err != nil {
		t.Fatal(err)
	}
	notes, _, err := st.ListNotifications(ctx, org.ID, store.Paging{})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, note := range notes {
		bodies = append(bodies, string(note.Body))
	}
	download := fmt.Sprintf("https://app.example.com/api/orgs/%s/collections/%s/download", org.ID, coll)
	finished := fmt.Sprintf(`{"downloadUrls":["https://app.example.com/data/upload-1.wacz","https://s3.example.com/b/x.wacz?sig=1"],"orgId":"%s","itemId":"upload-1","event":"uploadFinished"}`, org.ID)
	added := fmt.Sprintf(`{"downloadUrls":["%s"],"orgId":"%s","collectionId":"%s","itemIds":["upload-1"],"event":"addedToCollection"}`, download, org.ID, coll)
	removed := fmt.Sprintf(`{"downloadUrls":["%s"],"orgId":"%s","collectionId":"%s","itemIds":["upload-1","crawl-9"],"event":"removedFromCollection"}`, download, org.ID, coll)
	want := []string{finished, added, finished, added, removed}
	if !slices.Equal(bodies, want) {
		t.Fatalf("bodies:\n%s\nwant:\n%s", strings.Join(bodies, "\n"), strings.Join(want, "\n"))
	}
}
