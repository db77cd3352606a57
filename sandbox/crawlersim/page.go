package crawlersim

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"os"
	"strings"
	"time"
)

// A page's records: its request and response, then those of the
// subresources this collection has not captured yet. A page adds exactly
// sim.bytes to its worker's WARC file when that is more than its records
// need: the page's response carries a padding comment of random text
// (deterministic per URL) and the gzip header of its member takes up the
// last few bytes, so <id>:size grows by exactly the configured bytes per
// page. The file's warcinfo record is put in front when the WACZ is
// built, so that it does not count against a page.

// warcPage is one page that answered: it loaded, or it is the error page
// of its HTTP error status, which embeds nothing and is not padded.
type warcPage struct {
	url    string // as queued; a fragment is not part of what is fetched
	title  string
	links  []string
	date   time.Time
	bytes  int64 // what the page adds to its WARC file
	status int   // the HTTP error status it answered with, 0 for 200 OK
	// id names the page's records uniquely and reproducibly (a fixed
	// clock gives the same WARC bytes); recordID derives their ids.
	id string
}

// fetched is the URL the browser requests for the page.
func (pg warcPage) fetched() string {
	u, _, _ := strings.Cut(pg.url, "#")
	return u
}

// appendPage writes the page's records, then those of the given
// subresources, to the WARC file at path and returns their index entries,
// the page's first.
func appendPage(path string, pg warcPage, subs []capture) ([]cdxEntry, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening warc: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening warc: %w", err)
	}
	respID := recordID(pg.id, "response")
	req, err := capture{url: pg.fetched()}.requestRecord(recordID(pg.id, "request"), respID, pg.date)
	if err != nil {
		return nil, err
	}
	var head, tail bytes.Buffer
	if err := gzipMember(&head, req, 0); err != nil {
		return nil, err
	}
	entries := []cdxEntry{{}}
	for _, c := range subs {
		e, err := c.appendTo(&tail, pg.id+"/"+c.url, pg.date)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	resp, page, err := fittedResponse(pg, respID, pg.bytes-int64(head.Len()+tail.Len()))
	if err != nil {
		return nil, err
	}
	entries[0] = page
	entries[0].Offset = st.Size() + int64(head.Len())
	for i := range entries[1:] {
		entries[i+1].Offset += entries[0].Offset + entries[0].Length
	}
	if _, err := f.Write(bytes.Join([][]byte{head.Bytes(), resp, tail.Bytes()}, nil)); err != nil {
		return nil, fmt.Errorf("writing warc: %w", err)
	}
	return entries, nil
}

// pageHTML is the page: its title, stylesheet, image and links, then
// padding characters of random text in a comment. The subresources are
// linked by path, so they resolve against the page's own origin. The
// image is also the page's icon: without one, a browser (and
// ReplayWeb.page, for its tab) asks for a /favicon.ico that was never
// captured, a failed request in every replay.
func pageHTML(pg warcPage, padding int) []byte {
	var b bytes.Buffer
	title := html.EscapeString(pg.title)
	if pg.status != 0 {
		fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>\n<body><h1>%[1]s</h1></body></html>\n", title)
		return b.Bytes()
	}
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n<link rel=\"icon\" href=\"%simage.png\">\n", title, staticPrefix)
	fmt.Fprintf(&b, "<link rel=\"stylesheet\" href=\"%sstyle.css\"></head>\n", staticPrefix)
	fmt.Fprintf(&b, "<body><h1>%s</h1>\n<img src=\"%simage.png\" alt=\"\" width=\"48\" height=\"48\">\n", title, staticPrefix)
	for _, l := range pg.links {
		fmt.Fprintf(&b, "<a href=\"%s\">%[1]s</a><br>\n", html.EscapeString(l))
	}
	if padding > 0 {
		b.WriteString("<!--")
		b.Write(randomText(pg.fetched(), padding))
		b.WriteString("-->\n")
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// fittedResponse is the page's response record as a gzip member of want
// bytes, or as small as it gets when want is less, with its index entry
// (offset 0). The padding text compresses to about three quarters of its
// length, so a few tries approach want from below and the gzip header
// fills the rest.
func fittedResponse(pg warcPage, id string, want int64) ([]byte, cdxEntry, error) {
	var digest string
	member := func(padding, extra int) ([]byte, error) {
		var buf bytes.Buffer
		rec, d := capture{url: pg.fetched(), mime: "text/html", body: pageHTML(pg, padding), status: pg.status}.responseRecord(id, pg.date)
		digest = d
		err := gzipMember(&buf, rec, extra)
		return buf.Bytes(), err
	}
	done := func(out []byte, err error) ([]byte, cdxEntry, error) {
		if err != nil {
			return nil, cdxEntry{}, err
		}
		return out, capture{url: pg.fetched(), mime: "text/html", status: pg.status}.entry(pg.date, digest, 0, int64(len(out))), nil
	}
	out, err := member(0, 0)
	if err != nil || int64(len(out)) >= want {
		return done(out, err)
	}
	base, padding := int64(len(out)), 0
	for range 8 {
		gap := want - int64(len(out))
		if gap >= 0 && gap < maxHeaderPadding && (padding > 0 || gap < 256) {
			return done(member(padding, int(gap)))
		}
		// Aim a little short; the header takes what is left.
		next := int((float64(want-base) - 64) / 0.77)
		if padding > 0 {
			slope := float64(int64(len(out))-base) / float64(padding)
			next = padding + int((float64(gap)-64)/max(slope, 0.5))
		}
		padding = max(next, 0)
		if out, err = member(padding, 0); err != nil {
			return nil, cdxEntry{}, err
		}
	}
	return nil, cdxEntry{}, fmt.Errorf("could not fit the response of %s into %d bytes", pg.url, want)
}

// errorTitle is the title of the error page of an HTTP status, its status
// line as servers word it.
func errorTitle(status int) string { return fmt.Sprintf("%d %s", status, http.StatusText(status)) }
