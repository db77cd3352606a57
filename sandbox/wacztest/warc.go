package wacztest

import (
	"bytes"
	"fmt"
	"mime"
	"strings"

	"github.com/nlnwa/gowarc/v3"
)

// recordAt is where a record starts: its WARC entry and offset.
type recordAt struct {
	file   string
	offset int64
}

// record is what the index has to agree with about a WARC record.
type record struct {
	typ           gowarc.RecordType
	id            string
	concurrentTo  string
	uri           string
	ts            string // WARC-Date as a CDXJ timestamp
	size          int64  // bytes it takes in the file: its gzip member
	payloadDigest string
	status        int    // of an HTTP response
	mime          string // of an HTTP response, without parameters
}

// readWARC parses every record strictly (digests and lengths checked).
func (w *WACZ) readWARC(name string, body []byte) error {
	r, err := gowarc.NewWarcFileReaderFromStream(bytes.NewReader(body), 0, gowarc.WithStrictValidation())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer r.Close()
	for rec, err := range r.Records() {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		got, err := describe(rec)
		rec.Close()
		if err != nil {
			return fmt.Errorf("%s at %d: %w", name, rec.Offset, err)
		}
		w.records[recordAt{name, rec.Offset}] = got
		w.Records[got.typ.String()]++
		if got.typ == gowarc.Response {
			w.Responses = append(w.Responses, got.uri)
		}
	}
	return nil
}

func describe(rec gowarc.Record) (record, error) {
	wr := rec.WarcRecord
	if _, err := wr.ValidateDigest(); err != nil {
		return record{}, err
	}
	h := wr.WarcHeader()
	date, err := wr.Date()
	if err != nil {
		return record{}, err
	}
	out := record{typ: wr.Type(), id: wr.RecordId(), concurrentTo: h.GetId(gowarc.WarcConcurrentTo),
		uri: h.Get(gowarc.WarcTargetURI), ts: date.UTC().Format("20060102150405"), size: rec.Size,
		payloadDigest: h.Get(gowarc.WarcPayloadDigest)}
	if strings.Contains(out.uri, "#") {
		return record{}, fmt.Errorf("%s record of %s: a fragment is never fetched", out.typ, out.uri)
	}
	if out.typ != gowarc.Response {
		return out, nil
	}
	block, ok := wr.Block().(gowarc.HttpResponseBlock)
	if !ok {
		return record{}, fmt.Errorf("response of %s holds no HTTP response", out.uri)
	}
	out.status = block.HttpStatusCode()
	out.mime, _, _ = mime.ParseMediaType(block.HttpHeader().Get("Content-Type"))
	return out, nil
}

// checkRecords checks that record ids are unique and that each request
// names the response it belongs to, of the same URI.
func (w *WACZ) checkRecords() error {
	byID := map[string]record{}
	for _, r := range w.records {
		if _, dup := byID[r.id]; dup {
			return fmt.Errorf("record id %s twice", r.id)
		}
		byID[r.id] = r
	}
	for _, r := range w.records {
		if r.typ != gowarc.Request {
			continue
		}
		if resp, ok := byID[r.concurrentTo]; !ok || resp.typ != gowarc.Response || resp.uri != r.uri {
			return fmt.Errorf("request of %s is concurrent to %q, not to a response of its URI", r.uri, r.concurrentTo)
		}
	}
	return nil
}
