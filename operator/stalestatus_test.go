package operator_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/k8s/generated/clientset/versioned"
	"github.com/trawlerhq/trawler/store"
)

// lagging is the operator's transport in TestRestartSurvivesAnInformerThatLags:
// once the operator deletes pod for the first time, it holds back the
// CrawlJob watch (the informer shows nothing newer) and counts the status
// writes and the deletes of pod that follow.
type lagging struct {
	pod string

	mu      sync.Mutex
	held    chan struct{} // closed when the watch may go on; nil before the hold
	writes  int
	deletes int
}

// lagTransport is one client's transport through lagging.
type lagTransport struct {
	next http.RoundTripper
	l    *lagging
}

func (t lagTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	l := t.l
	l.mu.Lock()
	switch {
	case r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/pods/"+l.pod):
		l.deletes++
		if l.held == nil {
			l.held = make(chan struct{})
		}
	case r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/crawljobs/") && strings.HasSuffix(r.URL.Path, "/status") && l.held != nil:
		l.writes++
	}
	l.mu.Unlock()
	resp, err := t.next.RoundTrip(r)
	if err == nil && r.URL.Query().Get("watch") == "true" && strings.HasSuffix(r.URL.Path, "/crawljobs") {
		resp.Body = laggingBody{resp.Body, l}
	}
	return resp, err
}

// wait blocks while the watch is held.
func (l *lagging) wait() {
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	if held != nil {
		<-held
	}
}

func (l *lagging) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = make(chan struct{})
	}
	select {
	case <-l.held:
	default:
		close(l.held)
	}
}

func (l *lagging) counts() (writes, deletes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes, l.deletes
}

// laggingBody hands on what the watch sent only while it is not held, so
// events that arrive during the hold reach the informer after it.
type laggingBody struct {
	body io.ReadCloser
	l    *lagging
}

func (b laggingBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.l.wait()
	return n, err
}

func (b laggingBody) Close() error { return b.body.Close() }

// TestRestartSurvivesAnInformerThatLags restarts a running crawl while
// the operator's CrawlJob informer stops showing changes right after the
// restart's spec: the operator then writes the status several times
// (the restart recorded with the new pod, then its progress) that the
// informer does not show. No pass may take the restart as pending again
// from the stale cache and delete the new pod.
func TestRestartSurvivesAnInformerThatLags(t *testing.T) {
	h := newHarness(t)
	id := h.startCrawl(crawlOpts{seed: slowSite})
	lag := &lagging{pod: k8s.CrawlerName(id, 0)}
	rc := h.env.Config()
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return lagTransport{next: rt, l: lag} }
	deps := h.deps()
	deps.Kube = kubernetes.NewForConfigOrDie(rc)
	deps.Trawler = versioned.NewForConfigOrDie(rc)
	op := h.startOperatorWith(h.config(), deps)
	t.Cleanup(func() { lag.release(); op.stop() })
	h.waitPagesDone(id, 3)

	if err := h.launch.RestartCrawl(context.Background(), id, []byte(`{"seeds":[{"url":"`+slowSite+`"}]}`)); err != nil {
		t.Fatal(err)
	}
	h.waitFor("three status writes the informer does not show, or the new pod deleted", 60*time.Second, func() bool {
		writes, deletes := lag.counts()
		return writes >= 3 || deletes > 1
	})
	writes, deletes := lag.counts()
	if deletes > 1 {
		t.Fatalf("the new crawler pod was deleted %d times after %d unobserved status writes: a pass acted on stale status", deletes-1, writes)
	}
	lag.release()
	h.waitFor("the restart recorded and the crawl running on", 30*time.Second, func() bool {
		j, err := h.job(id)
		return err == nil && j.Status.RestartTime == j.Spec.RestartTime && j.Status.State == store.StateRunning
	})
	if _, deletes := lag.counts(); deletes > 1 {
		t.Errorf("the new crawler pod was deleted once the informer caught up")
	}
}
