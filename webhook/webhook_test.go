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

	"github.com/trawlerhq/trawler/sandbox/mongotest"
	"github.com/trawlerhq/trawler/store"
	"github.com/trawlerhq/trawler/webhook"
)

func TestMain(m *testing.M) { mongotest.Main(m, mongotest.Options{}) }

// testConfig is the settings table's webhook configuration with adjust
// applied.
func testConfig(adjust func(*webhook.Config)) webhook.Config {
	c := webhook.Config{MaxAttempts: 5, RetryDelay: 10 * time.Second, MaxRetryDelay: 10 * time.Minute,
		Timeout: 15 * time.Second, PollInterval: 10 * time.Second, Workers: 8}
	adjust(&c)
	return c
}

// receiver is a webhook endpoint that answers the statuses it is given in
// turn (200 once they run out) and records what it got.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	bodies   []string
	times    []time.Time
	srv      *httptest.Server
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, req.Header.Get("Content-Type")+" "+string(body))
		r.times = append(r.times, time.Now())
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() ([]string, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.bodies...), append([]time.Time{}, r.times...)
}

// setup is a store with an org whose crawlFinished URL is the receiver,
// and a running Notifier with adjust applied to its Deps.
func setup(t *testing.T, cfg webhook.Config, r *receiver, adjust ...func(*webhook.Deps)) (*store.Mongo, *store.Org, *webhook.Notifier) {
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
	deps := webhook.Deps{Store: st, Resources: func(_ context.Context, c *store.Crawl) ([]string, error) {
		return []string{"/data/" + c.ID + ".wacz", "https://s3.example.com/b/x.wacz?sig=1"}, nil
	}}
	for _, a := range adjust {
		a(&deps)
	}
	n, err := webhook.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { n.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return st, org, n
}

// waitNotification polls the org's only notification until cond holds.
func waitNotification(t *testing.T, st *store.Mongo, oid uuid.UUID, what string, cond func(store.Notification) bool) store.Notification {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		notes, _, err := st.ListNotifications(context.Background(), oid, store.Paging{})
		if err != nil {
			t.Fatal(err)
		}
		if len(notes) == 1 && cond(notes[0]) {
			return notes[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: notifications %+v", what, notes)
		}
		time.Sleep(20 * time.Millisecond) // polling the store, not synchronising
	}
}

// TestRetriesWithBackoff: a receiver that fails three times and then
// succeeds gets the same body four times, with growing pauses, and the
// notification records four attempts and success.
func TestRetriesWithBackoff(t *testing.T) {
	r := newReceiver(t, 500, 503, 404)
	st, org, n := setup(t, testConfig(func(c *webhook.Config) { c.RetryDelay, c.PollInterval = 100*time.Millisecond, time.Hour }), r)
	crawl := &store.Crawl{ID: "crawl-1", OID: org.ID, State: store.StateComplete}
	if err := n.CrawlFinished(context.Background(), crawl); err != nil {
		t.Fatal(err)
	}
	note := waitNotification(t, st, org.ID, "success after retries", func(n store.Notification) bool { return n.Success })
	if note.Attempts != 4 || note.LastAttempted == nil || note.NextAttempt != nil || note.Event != "crawlFinished" {
		t.Fatalf("notification %+v", note)
	}
	want := fmt.Sprintf(`application/json {"downloadUrls":["https://app.example.com/data/crawl-1.wacz",`+
		`"https://s3.example.com/b/x.wacz?sig=1"],"orgId":"%s","itemId":"crawl-1","event":"crawlFinished","state":"complete"}`, org.ID)
	bodies, times := r.got()
	if len(bodies) != 4 {
		t.Fatalf("receiver got %d requests, want 4", len(bodies))
	}
	for i, b := range bodies {
		if b != want {
			t.Errorf("request %d:\n got %s\nwant %s", i, b, want)
		}
	}
	for i, min := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if gap := times[i+1].Sub(times[i]); gap < min {
			t.Errorf("pause before attempt %d: %v, want at least %v", i+2, gap, min)
		}
	}
	if string(note.Body) != want[len("application/json "):] {
		t.Errorf("stored body %s", note.Body)
	}
	// The same event again stores and sends nothing.
	if err := n.CrawlFinished(context.Background(), crawl); err != nil {
		t.Fatal(err)
	}
	if notes, _, _ := st.ListNotifications(context.Background(), org.ID, store.Paging{}); len(notes) != 1 {
		t.Fatalf("%d notifications after repeating the event", len(notes))
	}
}

// TestGivesUpAndRetriesOnDemand: a send ends after MaxAttempts failures;
// a manual retry is a new send.
func TestGivesUpAndRetriesOnDemand(t *testing.T) {
	r := newReceiver(t, 500, 500, 500)
	st, org, n := setup(t, testConfig(func(c *webhook.Config) {
		c.MaxAttempts, c.RetryDelay, c.PollInterval = 2, 50*time.Millisecond, time.Hour
	}), r)
	if err := n.CrawlFinished(context.Background(), &store.Crawl{ID: "crawl-2", OID: org.ID, State: store.StateFailed}); err != nil {
		t.Fatal(err)
	}
	note := waitNotification(t, st, org.ID, "given up", func(n store.Notification) bool { return n.Attempts == 2 && n.NextAttempt == nil })
	if note.Success {
		t.Fatal("failed send marked success")
	}
	if err := st.RetryNotification(context.Background(), org.ID, note.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	n.Kick()
	note = waitNotification(t, st, org.ID, "retried", func(n store.Notification) bool { return n.Success })
	if note.Attempts != 4 {
		t.Fatalf("attempts %d, want 4 (2 failed, then a retry failing once and succeeding)", note.Attempts)
	}
}

// TestUnsubscribedOrgGetsNothing: without a URL for the event nothing is
// stored.
func TestUnsubscribedOrgGetsNothing(t *testing.T) {
	r := newReceiver(t)
	st, org, n := setup(t, testConfig(func(c *webhook.Config) { c.PollInterval = time.Hour }), r)
	ctx := context.Background()
	if err := n.CrawlStarted(ctx, &store.Crawl{ID: "crawl-3", OID: org.ID}); err != nil {
		t.Fatal(err)
	}
	if notes, _, _ := st.ListNotifications(ctx, org.ID, store.Paging{}); len(notes) != 0 {
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
	st, org, n := setup(t, testConfig(func(c *webhook.Config) { c.PollInterval = time.Hour }), r)
	ctx := context.Background()
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
