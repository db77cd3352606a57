package wacztest

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image"
	_ "image/png" // the simulator's pages embed PNGs; decoding one proves it replays
	"io"
	"mime"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/nlnwa/gowarc/v3"

	"github.com/trawlerhq/trawler/sandbox/crawlersim/surt"
)

// Capture is a response as a replay tool serves it.
type Capture struct {
	URL    string
	TS     string // CDXJ timestamp
	Status int
	Mime   string // Content-Type without parameters
	Body   []byte
}

// ErrNotFound is Lookup's answer for a URL the index does not hold.
var ErrNotFound = errors.New("not in the index")

// Lookup finds the capture of rawURL the way a replay tool does: drop
// the fragment (a browser never sends it), binary-search each sorted
// index for the URL's SURT key, keep the lines for exactly this URL
// (several URLs can share a key), take the latest, and read the record
// at its offset and length alone, as a ranged read of the WARC would.
func (w *WACZ) Lookup(rawURL string) (*Capture, error) {
	target, _, _ := strings.Cut(rawURL, "#")
	key := surt.Key(target)
	var best *cdxLine
	for _, file := range w.indexes {
		for i := sort.Search(len(file), func(i int) bool { return file[i].key >= key }); i < len(file) && file[i].key == key; i++ {
			if file[i].URL == target && (best == nil || file[i].ts > best.ts) {
				best = &file[i]
			}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%s: %w", target, ErrNotFound)
	}
	warc := w.files["archive/"+best.Filename]
	if best.offset+best.length > int64(len(warc)) {
		return nil, fmt.Errorf("%s: index line %q points past its WARC", target, best.raw)
	}
	c, err := readResponse(warc[best.offset : best.offset+best.length])
	if err != nil {
		return nil, fmt.Errorf("%s: index line %q: %w", target, best.raw, err)
	}
	if c.URL != target {
		return nil, fmt.Errorf("%s: index line %q gives the record of %s", target, best.raw, c.URL)
	}
	c.TS = best.ts
	return c, nil
}

// readResponse parses the one record in member, which must be an HTTP
// response.
func readResponse(member []byte) (*Capture, error) {
	gowarcMu.Lock()
	defer gowarcMu.Unlock()
	r, err := gowarc.NewWarcFileReaderFromStream(bytes.NewReader(member), 0, gowarc.WithStrictValidation())
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	block, ok := rec.WarcRecord.Block().(gowarc.HttpResponseBlock)
	if rec.WarcRecord.Type() != gowarc.Response || !ok {
		return nil, fmt.Errorf("a %s record, not an HTTP response", rec.WarcRecord.Type())
	}
	payload, err := block.PayloadBytes()
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(payload)
	if err != nil {
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(block.HttpHeader().Get("Content-Type"))
	return &Capture{URL: rec.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI), Status: block.HttpStatusCode(), Mime: mt, Body: body}, nil
}

// Page is an archived page as a replay tool shows it.
type Page struct {
	URL string
	// Status is the archived response's: 200, or the HTTP error a replay
	// tool shows as it was captured.
	Status int
	// Title is the text of the archived HTML's <title>.
	Title string
	// Resources are the icons, stylesheets, images and scripts the HTML
	// embeds, each found through the index, in the HTML's order.
	Resources []*Capture
}

var (
	titleTag    = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	embedTag    = regexp.MustCompile(`(?is)<(img|script|link)\b([^>]*)>`)
	attribute   = regexp.MustCompile(`(?is)\b(src|href|rel)\s*=\s*"([^"]*)"`)
	whitespaces = regexp.MustCompile(`\s+`)
)

// Replay opens the page at pageURL: its HTML through Lookup (a text/html
// response, 200 or an HTTP error page), then every resource the HTML
// embeds, resolved
// against the page's URL. The simulator writes simple HTML, so tags are
// found with patterns rather than a full HTML parser.
func (w *WACZ) Replay(pageURL string) (*Page, error) {
	doc, err := w.Lookup(pageURL)
	if err != nil {
		return nil, err
	}
	if (doc.Status != 200 && doc.Status < 400) || doc.Mime != "text/html" {
		return nil, fmt.Errorf("%s: a %d %s response, not a page", pageURL, doc.Status, doc.Mime)
	}
	base, err := url.Parse(doc.URL)
	if err != nil {
		return nil, err
	}
	p := &Page{URL: pageURL, Status: doc.Status}
	if m := titleTag.FindSubmatch(doc.Body); m != nil {
		// document.title: entities decoded, white space collapsed.
		p.Title = strings.TrimSpace(whitespaces.ReplaceAllString(html.UnescapeString(string(m[1])), " "))
	}
	for _, tag := range embedTag.FindAllSubmatch(doc.Body, -1) {
		attrs := map[string]string{}
		for _, a := range attribute.FindAllSubmatch(tag[2], -1) {
			attrs[strings.ToLower(string(a[1]))] = html.UnescapeString(string(a[2]))
		}
		ref := attrs["src"]
		if strings.EqualFold(string(tag[1]), "link") {
			ref = ""
			if rel := strings.ToLower(attrs["rel"]); strings.Contains(rel, "stylesheet") || strings.Contains(rel, "icon") {
				ref = attrs["href"]
			}
		}
		if ref == "" || strings.HasPrefix(ref, "data:") {
			continue // nothing to fetch
		}
		u, err := base.Parse(ref)
		if err != nil {
			return nil, fmt.Errorf("%s embeds %q: %w", pageURL, ref, err)
		}
		c, err := w.Lookup(u.String())
		if err != nil {
			return nil, fmt.Errorf("%s embeds %s: %w", pageURL, u, err)
		}
		p.Resources = append(p.Resources, c)
	}
	return p, nil
}

// CheckReplay replays every page of pages.jsonl and returns them: each
// must open with the title pages.jsonl gives it, and each resource it
// embeds must be a 200 whose body is what its type says (an image
// decodes, a stylesheet is not empty).
func (w *WACZ) CheckReplay() ([]*Page, error) {
	var pages []*Page
	for _, u := range w.Pages {
		p, err := w.Replay(u)
		if err != nil {
			return nil, err
		}
		if p.Title != w.Titles[u] {
			return nil, fmt.Errorf("%s: archived title %q, pages.jsonl says %q", u, p.Title, w.Titles[u])
		}
		for _, r := range p.Resources {
			if err := checkBody(r); err != nil {
				return nil, fmt.Errorf("%s embeds %s: %w", u, r.URL, err)
			}
		}
		pages = append(pages, p)
	}
	return pages, nil
}

func checkBody(c *Capture) error {
	switch {
	case c.Status != 200:
		return fmt.Errorf("status %d", c.Status)
	case len(c.Body) == 0:
		return fmt.Errorf("empty %s", c.Mime)
	case strings.HasPrefix(c.Mime, "image/"):
		if _, format, err := image.DecodeConfig(bytes.NewReader(c.Body)); err != nil || "image/"+format != c.Mime {
			return fmt.Errorf("a %s that does not decode as one (%s, %v)", c.Mime, format, err)
		}
	}
	return nil
}
