package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// GET /api/orgs/{oid}/crawls/{crawl_id}/events is a crawl's live progress
// as Server-Sent Events (text/event-stream), for viewers of the crawl; the
// token may come in the auth_bearer query parameter, as browsers'
// EventSource cannot set headers. The stream sends
//
//	event: state   {"seq", "state", "at"}  every state the crawl passed
//	               through, in order, the first time from its first state
//	event: crawl   crawlEventOut           the crawl now, whenever what it
//	               shows changed (slow clients skip intermediate ones)
//	event: end     {"reason", "state"}     after the final state (or when
//	               the crawl was deleted); then the stream closes
//
// and a comment at least every keep-alive period. Every event carries an
// id "<seq>-<hash>": the last state sent and the crawl event sent. A
// client that reconnects with it in Last-Event-ID (EventSource does)
// gets only what it missed: the later states, and the crawl event if it
// differs from the one it has.

// crawlEventOut is the data of a "crawl" event.
type crawlEventOut struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Stopping bool   `json:"stopping"`
	// ShouldPause is the last pause (true) or resume request: with the
	// state it tells "pausing" and "resuming", which are never stored.
	ShouldPause bool    `json:"shouldPause"`
	Scale       int     `json:"scale"`
	Started     string  `json:"started"`
	Finished    *string `json:"finished"`
	// Stats are the live counters while the crawl runs, else the stored.
	Stats *statsOut `json:"stats"`
	// PagesFailed is known while the crawl runs (null otherwise).
	PagesFailed *int64        `json:"pagesFailed"`
	FileCount   int           `json:"fileCount"`
	FileSize    int64         `json:"fileSize"`
	Instances   []instanceOut `json:"instances"`
}

// instanceOut is one crawler instance of a crawl.
type instanceOut struct {
	// Index is the instance's number (0 .. scale-1); Name its pod.
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Status is what the crawler says it does (running, pending-wait,
	// generate-wacz, uploading-wacz, done, interrupted, failing, failed),
	// while the crawl runs; null otherwise.
	Status *string `json:"status"`
	// Phase is the pod's phase as the operator last recorded it.
	Phase    *string `json:"phase"`
	Restarts int32   `json:"restarts"`
	// Reason is why the crawler last exited (e.g. OOMKilled), if it did.
	Reason string `json:"reason"`
	// Size is the bytes this instance archived, while the crawl runs.
	Size int64 `json:"size"`
}

// stateEventOut is the data of a "state" event.
type stateEventOut struct {
	Seq   int    `json:"seq"`
	State string `json:"state"`
	At    string `json:"at"`
}

// endEventOut is the data of the "end" event.
type endEventOut struct {
	Reason string  `json:"reason"` // "finished" or "deleted"
	State  *string `json:"state"`
}

// eventStream marks a route answering with Server-Sent Events; data is
// the type of its main event, for the OpenAPI document.
type eventStream struct{ data any }

// toCrawlEvent is what the crawl's streams show: the stored crawl with,
// while it runs, the live progress read from its Redis (nil: unknown).
func toCrawlEvent(c *store.Crawl, live *crawlredis.Progress) crawlEventOut {
	ev := crawlEventOut{ID: c.ID, State: c.State, Stopping: c.Stopping, ShouldPause: c.ShouldPause, Scale: c.Scale,
		Started: fmtTime(c.Started), Finished: fmtTimePtr(c.Finished),
		FileCount: c.FileCount, FileSize: c.FileSize, Instances: []instanceOut{}}
	if c.Stats != nil {
		ev.Stats = &statsOut{Found: c.Stats.Found, Done: c.Stats.Done, Size: c.Stats.Size}
	}
	byIndex := map[int]*instanceOut{}
	instance := func(i int) *instanceOut {
		if byIndex[i] == nil {
			byIndex[i] = &instanceOut{Index: i, Name: k8s.CrawlerName(c.ID, i)}
		}
		return byIndex[i]
	}
	for key, p := range c.Pods {
		if i, err := strconv.Atoi(key); err == nil && i >= 0 {
			in := instance(i)
			in.Phase, in.Restarts, in.Reason = &p.Phase, p.Restarts, p.Reason
		}
	}
	if live != nil {
		ev.Stats = &statsOut{Found: live.Found, Done: live.Done, Size: live.Size}
		ev.PagesFailed = &live.Failed
		for uid, st := range live.Statuses {
			if i, ok := k8s.CrawlerIndex(c.ID, uid); ok {
				instance(i).Status = &st
			}
		}
		for uid, size := range live.Sizes {
			if i, ok := k8s.CrawlerIndex(c.ID, uid); ok {
				instance(i).Size = size
			}
		}
	}
	for _, in := range byIndex {
		ev.Instances = append(ev.Instances, *in)
	}
	slices.SortFunc(ev.Instances, func(a, b instanceOut) int { return a.Index - b.Index })
	return ev
}

// eventPosition is where a client is in a stream: the last state and the
// last crawl event it was sent.
type eventPosition struct {
	seq  int
	hash string
}

func (p eventPosition) id() string { return fmt.Sprintf("%d-%s", p.seq, p.hash) }

// parseEventPosition reads a Last-Event-ID; anything else starts over.
func parseEventPosition(id string) eventPosition {
	seq, hash, ok := strings.Cut(id, "-")
	n, err := strconv.Atoi(seq)
	if !ok || err != nil || n < 0 {
		return eventPosition{}
	}
	return eventPosition{seq: n, hash: hash}
}

// eventWriter writes one client's stream.
type eventWriter struct {
	w   *echo.Response
	pos eventPosition
}

func (e *eventWriter) event(name string, data []byte) error {
	if _, err := fmt.Fprintf(e.w, "id: %s\nevent: %s\ndata: %s\n\n", e.pos.id(), name, data); err != nil {
		return err
	}
	return nil
}

// send writes what the client has not seen of v and flushes.
func (e *eventWriter) send(v *crawlView) error {
	for _, h := range v.history {
		if h.Seq <= e.pos.seq {
			continue
		}
		e.pos.seq = h.Seq
		if err := e.event("state", mustJSON(stateEventOut{Seq: h.Seq, State: h.State, At: fmtTime(h.At)})); err != nil {
			return err
		}
	}
	if v.data != nil && v.hash != e.pos.hash {
		e.pos.hash = v.hash
		if err := e.event("crawl", v.data); err != nil {
			return err
		}
	}
	e.w.Flush()
	return nil
}

// end writes the end event and flushes.
func (e *eventWriter) end(v *crawlView) error {
	out := endEventOut{Reason: "finished"}
	if errors.Is(v.err, store.ErrNotFound) {
		out.Reason = "deleted"
	} else {
		out.State = &v.event.State
	}
	if err := e.event("end", mustJSON(out)); err != nil {
		return err
	}
	e.w.Flush()
	return nil
}

// comment writes a keep-alive comment and flushes.
func (e *eventWriter) comment() error {
	if _, err := fmt.Fprint(e.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	e.w.Flush()
	return nil
}

// mustJSON encodes plain event data (an error is a bug).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding event: %v", err))
	}
	return b
}

// reconnectDelay is the retry the stream asks EventSource clients to wait
// before reconnecting after a dropped connection.
const reconnectDelay = 2 * time.Second

func (s *Server) crawlEvents(c echo.Context) error {
	ctx := c.Request().Context()
	feed := s.feeds.subscribe(c.Param("crawl_id"))
	defer s.feeds.unsubscribe(feed)
	v, changed, err := feed.first(ctx)
	if err != nil {
		return nil // the client left before the first read
	}
	switch {
	case errors.Is(v.err, store.ErrNotFound):
		return notFound(detailCrawlNotFound)
	case v.err != nil:
		return v.err
	case v.oid != currentOrg(c).ID || (v.typ != store.TypeCrawl && v.typ != ""):
		return notFound(detailCrawlNotFound)
	}

	res := c.Response()
	h := res.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must pass events on at once
	res.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(res, "retry: %d\n\n", reconnectDelay.Milliseconds()); err != nil {
		return nil
	}
	ew := &eventWriter{w: res, pos: parseEventPosition(c.Request().Header.Get("Last-Event-ID"))}
	for {
		if err := ew.send(v); err != nil {
			return nil // the client is gone
		}
		if v.final {
			_ = ew.end(v)
			return nil
		}
		var ok bool
		if v, changed, ok = s.nextView(ctx, feed, changed, ew); !ok {
			return nil
		}
	}
}

// nextView waits for the feed's next view, keeping the stream alive
// meanwhile; false when the stream is to end (client gone, or shutdown).
func (s *Server) nextView(ctx context.Context, feed *crawlFeed, changed <-chan struct{}, ew *eventWriter) (*crawlView, <-chan struct{}, bool) {
	keepAlive := time.NewTicker(s.cfg.EventsKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil, false
		case <-s.streamsDone:
			return nil, nil, false
		case <-changed:
			v, next := feed.current()
			return v, next, true
		case <-keepAlive.C:
			if ew.comment() != nil {
				return nil, nil, false
			}
		}
	}
}
