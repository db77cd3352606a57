package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trawlerhq/trawler/sandbox/mongotest"
)

// sseEvent is one event a test client received.
type sseEvent struct {
	ID, Name string
	Data     []byte
	At       time.Time
}

// decode decodes the event's data.
func (ev sseEvent) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(ev.Data, v); err != nil {
		t.Fatalf("event %s %q: %v", ev.Name, ev.Data, err)
	}
}

// sseClient reads one event stream as EventSource would, handing over
// its events and keep-alive comments as they arrive.
type sseClient struct {
	Events   chan sseEvent // closed when the stream ends
	Comments chan time.Time
	Retry    string
	cancel   context.CancelFunc
}

// Close drops the connection.
func (c *sseClient) Close() { c.cancel() }

// httpServer serves the API on a loopback port until the test ends,
// after the test's streams were dropped.
func (e *env) httpServer() *httptest.Server {
	srv := httptest.NewServer(e.srv.Handler())
	e.t.Cleanup(srv.Close)
	return srv
}

// openStream GETs a crawl's event stream on srv as role, with the token
// in the auth_bearer query parameter (as a browser's EventSource sends
// it) and lastID as Last-Event-ID when not empty. A response other than
// an event stream is returned as it is, with a nil client.
func (e *env) openStream(srv *httptest.Server, as, crawlID, lastID string) (*sseClient, *http.Response) {
	e.t.Helper()
	u := srv.URL + e.orgPath("/crawls/"+crawlID+"/events")
	if tok := e.tokens[as]; tok != "" {
		u += "?auth_bearer=" + url.QueryEscape(tok)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		return nil, resp
	}
	c := &sseClient{Events: make(chan sseEvent, 10000), Comments: make(chan time.Time, 1000), cancel: cancel}
	e.t.Cleanup(cancel)
	go c.read(resp)
	return c, resp
}

// read parses the stream (text/event-stream as the HTML standard says,
// for the fields this server sends) until it ends.
func (c *sseClient) read(resp *http.Response) {
	defer close(c.Events)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if ev.Name != "" || data != nil {
				ev.Data, ev.At = []byte(strings.Join(data, "\n")), time.Now()
				c.Events <- ev
			}
			ev, data = sseEvent{ID: ev.ID}, nil
		case field == "":
			select {
			case c.Comments <- time.Now():
			default:
			}
		case field == "id":
			ev.ID = value
		case field == "event":
			ev.Name = value
		case field == "data":
			data = append(data, value)
		case field == "retry":
			c.Retry = value
		}
	}
}

// until receives events until one satisfies stop (returned last) or the
// stream ends; it fails the test after timeout.
func (c *sseClient) until(t testing.TB, timeout time.Duration, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var got []sseEvent
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-c.Events:
			if !ok {
				return got
			}
			got = append(got, ev)
			if stop != nil && stop(ev) {
				return got
			}
		case <-deadline:
			t.Fatalf("stream: no wanted event within %v; got %d events: %s", timeout, len(got), describe(got))
		}
	}
}

// all receives events until the stream ends.
func (c *sseClient) all(t testing.TB, timeout time.Duration) []sseEvent {
	t.Helper()
	return c.until(t, timeout, nil)
}

// named returns the events of one name.
func named(evs []sseEvent, name string) []sseEvent {
	var out []sseEvent
	for _, ev := range evs {
		if ev.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// statesOf lists the states of the "state" events.
func statesOf(t testing.TB, evs []sseEvent) []string {
	t.Helper()
	var out []string
	for _, ev := range named(evs, "state") {
		var st stateEventOut
		ev.decode(t, &st)
		out = append(out, st.State)
	}
	return out
}

// describe summarises events for failure messages.
func describe(evs []sseEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString("\n  " + ev.Name + " " + ev.ID + " " + string(ev.Data))
	}
	return b.String()
}

// crawlEvent decodes a "crawl" event.
func crawlEvent(t testing.TB, ev sseEvent) crawlEventOut {
	t.Helper()
	var out crawlEventOut
	ev.decode(t, &out)
	return out
}

// redisClient is a client of the package's redis-server, which stands in
// for every crawl's Redis.
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: mongotest.RedisAddr(t)})
	t.Cleanup(func() { c.Close() })
	return c
}
