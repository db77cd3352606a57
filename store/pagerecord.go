package store

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
)

// pageRecord is a page as the crawler writes it, to <id>:pages (1.x) or
// as a line of a WACZ's pages/*.jsonl.
type pageRecord struct {
	ID         string          `json:"id"`
	URL        string          `json:"url"`
	Title      *string         `json:"title"`
	TS         string          `json:"ts"`
	LoadState  *int            `json:"loadState"`
	Status     *int            `json:"status"`
	Mime       json.RawMessage `json:"mime"`
	Depth      *int            `json:"depth"`
	FavIconURL *string         `json:"favIconUrl"`
	Seed       bool            `json:"seed"`
	Filename   *string         `json:"filename"`
}

// PageSource says where a page record was read and how its page is
// identified.
type PageSource struct {
	OID     uuid.UUID
	CrawlID string
	// Filename, when set, is the WACZ the record was read from; it
	// replaces the record's own.
	Filename string
	// Seed marks every page a seed (lines of pages/pages.jsonl).
	Seed bool
	// NewIDs ignores the crawler's page ids (uploads): each page's id is
	// derived from Key instead.
	NewIDs bool
	// Key identifies the record within its item (file and line) for pages
	// whose id is derived: reading the same record again gives the same
	// id, so a repeated read adds nothing.
	Key string
}

// PageFromRecord turns one crawler page record into a page
// (upstream-2026 §3.2). It reports false for a record that is not a page:
// not JSON, or without url (such as a pages.jsonl header line). now is the
// ts of a record without one.
func PageFromRecord(raw []byte, src PageSource, now time.Time) (Page, bool) {
	var r pageRecord
	if err := json.Unmarshal(raw, &r); err != nil || r.URL == "" {
		return Page{}, false
	}
	p := Page{OID: src.OID, CrawlID: src.CrawlID, URL: r.URL, Title: r.Title, LoadState: r.LoadState,
		Status: r.Status, Depth: r.Depth, FavIconURL: r.FavIconURL, IsSeed: r.Seed || src.Seed, Filename: r.Filename}
	id, err := uuid.Parse(r.ID)
	switch {
	case err == nil && !src.NewIDs:
		p.ID = id
	default:
		p.ID = uuid.NewSHA1(uuid.NameSpaceURL, []byte(src.CrawlID+"\x00"+src.Key+"\x00"+string(raw)))
	}
	if src.Filename != "" {
		p.Filename = &src.Filename
	}
	p.TS = now.UTC().Truncate(time.Millisecond)
	if ts, err := time.Parse(time.RFC3339Nano, r.TS); err == nil {
		p.TS = ts.UTC().Truncate(time.Millisecond)
	}
	// A missing mime is text/html; an explicit null stays unknown.
	switch m := strings.TrimSpace(string(r.Mime)); {
	case m == "":
		html := "text/html"
		p.Mime = &html
	case m != "null":
		var s string
		if json.Unmarshal(r.Mime, &s) == nil {
			p.Mime = &s
		}
	}
	if p.Status == nil && r.LoadState != nil && *r.LoadState != 0 {
		ok := 200
		p.Status = &ok
	}
	if r.LoadState != nil {
		p.IsError = *r.LoadState == 0
		p.IsFile = *r.LoadState == 2 && ((p.Mime != nil && !strings.Contains(*p.Mime, "html")) ||
			(p.Title == nil && p.Status != nil && *p.Status == 200))
	}
	return p, true
}
