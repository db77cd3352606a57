package wacztest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// readPages checks pages.jsonl: the json-pages-1.0 header, then a page a
// line with a unique id, an absolute http(s) URL, an RFC 3339 timestamp
// and a title.
func (w *WACZ) readPages(body []byte) error {
	ids := map[string]bool{}
	for i, line := range lines(body) {
		var p struct {
			Format, ID, URL, TS string
			Title               *string
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			return fmt.Errorf("pages.jsonl line %d: %w", i+1, err)
		}
		if i == 0 {
			if p.Format != "json-pages-1.0" || p.ID == "" {
				return fmt.Errorf("pages.jsonl header %q", line)
			}
			continue
		}
		u, err := url.Parse(p.URL)
		_, tsErr := time.Parse(time.RFC3339, p.TS)
		switch {
		case p.ID == "" || ids[p.ID]:
			return fmt.Errorf("pages.jsonl line %d: id %q missing or not unique", i+1, p.ID)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return fmt.Errorf("pages.jsonl line %d: url %q", i+1, p.URL)
		case tsErr != nil:
			return fmt.Errorf("pages.jsonl line %d: ts %q: %w", i+1, p.TS, tsErr)
		case p.Title == nil:
			return fmt.Errorf("pages.jsonl line %d: no title", i+1)
		}
		ids[p.ID] = true
		w.Pages = append(w.Pages, p.URL)
		w.Titles[p.URL] = *p.Title
	}
	return nil
}
