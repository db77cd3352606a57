package crawlersim

import (
	"context"
	"errors"
	"net/url"
	"path"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// What the simulator does only when it speaks the 1.x protocol (see the
// package comment): page records in <id>:pages, the name of the next
// WACZ in <id>:nextWacz, and the fast cancel of <id>:canceled.

// errCanceled unwinds a crawl canceled through <id>:canceled: the
// process exits 0 at once, packaging and uploading nothing.
var errCanceled = errors.New("crawl canceled")

// pageRecord is the JSON a 1.x crawler pushes to <id>:pages for every
// finished page (upstream-2026 §3.1).
type pageRecord struct {
	ID         string `json:"id"`
	URL        string `json:"url"`
	Title      string `json:"title,omitempty"`
	LoadState  int    `json:"loadState"`
	TS         string `json:"ts"`
	Mime       string `json:"mime"`
	Status     int    `json:"status,omitempty"`
	Depth      int    `json:"depth"`
	FavIconURL string `json:"favIconUrl,omitempty"`
	Seed       bool   `json:"seed,omitempty"`
	Filename   string `json:"filename,omitempty"`
}

// loadStateFailed is the load state of a failed page's record.
const loadStateFailed = 0

// newPageRecord is the record of a page crawled from entry e that began
// at ts: a page that loaded has the last load state, one that failed
// (no response, or an HTTP error, which the simulator counts as failed)
// the first, with its status when it had a response.
func newPageRecord(pageURL, ts string, depth int, outcome pageOutcome, status int, filename string) pageRecord {
	// A name-based id, not uuid.NewString: the random one reads a global
	// of the uuid package that gowarc writes on every reader it makes, a
	// data race when tests run the simulator beside WACZ checks.
	id := uuid.NewSHA1(uuid.NameSpaceURL, []byte(pageURL+"#"+ts+"#"+filename)).String()
	r := pageRecord{ID: id, URL: pageURL, TS: ts, Mime: "text/html", Depth: depth,
		Seed: depth == 0, Filename: filename, FavIconURL: favIconOf(pageURL)}
	switch outcome {
	case pageLoaded:
		r.LoadState, r.Status, r.Title = loadStateBehaviorsDone, 200, titleOf(pageURL)
	case pageErrorStatus:
		r.LoadState, r.Status, r.Title = loadStateFailed, status, errorTitle(status)
	default:
		r.LoadState = loadStateFailed
	}
	return r
}

// favIconOf is the icon a page of the synthetic web declares: its
// origin's /favicon.ico.
func favIconOf(pageURL string) string {
	u, err := url.Parse(pageURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/favicon.ico"
}

// pushPage writes a finished page's record (--writePagesToRedis).
func (p *process) pushPage(r pageRecord) error {
	if !p.p.writePagesToRedis {
		return nil
	}
	b, err := marshalJSON(r)
	if err != nil {
		return err
	}
	return p.state.pushPage(string(b))
}

// startWACZ fixes the name this session's WACZ will be uploaded under and
// publishes it in <id>:nextWacz, so page records can name it.
func (p *process) startWACZ() error {
	if !p.p.protocolV1 || p.store == nil {
		return nil
	}
	p.waczTarget = interpolateFilename(p.store.template, p.opts.Now(), p.opts.Hostname, p.p.crawlID)
	return p.state.setNextWACZ(path.Base(p.waczTarget))
}

// waczFilename is the WACZ basename page records name ("" before one is
// known).
func (p *process) waczFilename() string {
	if p.waczTarget == "" {
		return ""
	}
	return path.Base(p.waczTarget)
}

// checkCanceled returns errCanceled when the 1.x crawl was canceled.
func (p *process) checkCanceled() error {
	if !p.p.protocolV1 {
		return nil
	}
	canceled, err := p.state.isCanceled()
	if err != nil {
		return err
	}
	if canceled {
		return errCanceled
	}
	return nil
}

func (c *crawlState) pushPage(record string) error {
	return c.do(func(ctx context.Context) error { return c.rdb.LPush(ctx, c.k("pages"), record).Err() })
}

func (c *crawlState) setNextWACZ(name string) error {
	return c.do(func(ctx context.Context) error { return c.rdb.HSet(ctx, c.k("nextWacz"), c.uid, name).Err() })
}

// isCanceled reports <id>:canceled.
func (c *crawlState) isCanceled() (bool, error) {
	var canceled bool
	err := c.do(func(ctx context.Context) error {
		v, err := c.rdb.Get(ctx, c.k("canceled")).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		canceled = v == "1"
		return err
	})
	return canceled, err
}
