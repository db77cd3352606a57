package crawlersim

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// capture is one URL as the browser fetched it; the crawler's recorder
// writes a request and a response record for each.
type capture struct {
	url     string // as requested: absolute, without a fragment
	referer string // the page that embeds it, "" for a page itself
	mime    string
	body    []byte
	status  int // the HTTP status, 0 for 200 OK
}

// code is the HTTP status of the response.
func (c capture) code() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}

func (c capture) requestRecord(id, concurrentTo string, date time.Time) ([]byte, error) {
	u, err := url.Parse(c.url)
	if err != nil {
		return nil, fmt.Errorf("captured url %q: %w", c.url, err)
	}
	block := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: crawlersim\r\n", u.RequestURI(), u.Host)
	if c.referer != "" {
		block += "Referer: " + c.referer + "\r\n"
	}
	return warcRecord([]warcField{
		{"WARC-Type", "request"}, {"WARC-Record-ID", id}, {"WARC-Date", date.UTC().Format(warcDate)},
		{"WARC-Target-URI", c.url}, {"WARC-Concurrent-To", concurrentTo},
		{"Content-Type", "application/http;msgtype=request"},
	}, []byte(block+"\r\n")), nil
}

// responseRecord also returns the payload digest, for the index.
func (c capture) responseRecord(id string, date time.Time) ([]byte, string) {
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", c.code(), http.StatusText(c.code()), c.mime, len(c.body))
	digest := sha1Digest(c.body)
	return warcRecord([]warcField{
		{"WARC-Type", "response"}, {"WARC-Record-ID", id}, {"WARC-Date", date.UTC().Format(warcDate)},
		{"WARC-Target-URI", c.url}, {"WARC-Payload-Digest", digest},
		{"Content-Type", "application/http;msgtype=response"},
	}, append([]byte(head), c.body...)), digest
}

// appendTo writes the request and response records to w as a gzip member
// each, ids derived from key, and returns the index entry of the response
// with its offset within w.
func (c capture) appendTo(w *bytes.Buffer, key string, date time.Time) (cdxEntry, error) {
	respID := recordID(key, "response")
	req, err := c.requestRecord(recordID(key, "request"), respID, date)
	if err != nil {
		return cdxEntry{}, err
	}
	if err := gzipMember(w, req, 0); err != nil {
		return cdxEntry{}, err
	}
	resp, digest := c.responseRecord(respID, date)
	start := w.Len()
	if err := gzipMember(w, resp, 0); err != nil {
		return cdxEntry{}, err
	}
	return c.entry(date, digest, int64(start), int64(w.Len()-start)), nil
}

func (c capture) entry(date time.Time, digest string, offset, length int64) cdxEntry {
	return cdxEntry{TS: date.UTC().Format("20060102150405"), URL: c.url, Mime: c.mime, Status: c.code(), Digest: digest, Offset: offset, Length: length}
}
