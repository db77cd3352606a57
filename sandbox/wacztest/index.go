package wacztest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nlnwa/gowarc/v3"

	"github.com/trawlerhq/trawler/sandbox/crawlersim/surt"
)

// cdxLine is one parsed CDXJ line: "<SURT key> <timestamp> <json>", the
// JSON with the fields cdxj-indexer writes (numbers as strings).
type cdxLine struct {
	raw      string
	key, ts  string
	URL      string `json:"url"`
	Mime     string `json:"mime"`
	Status   string `json:"status"`
	Digest   string `json:"digest"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
	length   int64
	offset   int64
}

var timestamp = regexp.MustCompile(`^\d{14}$`)

// readIndex parses a CDXJ file, which must be sorted: replay tools
// binary-search it. Compressed indexes (.cdx.gz with an .idx of blocks)
// are not what the crawler writes here, so they are refused.
func (w *WACZ) readIndex(name string, body []byte) error {
	if !strings.HasSuffix(name, ".cdx") && !strings.HasSuffix(name, ".cdxj") {
		return fmt.Errorf("index %s: not a plain CDXJ file", name)
	}
	raws := lines(body)
	if !slices.IsSorted(raws) {
		return fmt.Errorf("index %s is not sorted", name)
	}
	var file []cdxLine
	for _, raw := range raws {
		l, err := parseLine(raw)
		if err != nil {
			return fmt.Errorf("%s: index line %q: %w", name, raw, err)
		}
		l.raw = raw
		file = append(file, l)
	}
	w.Index = append(w.Index, raws...)
	w.indexes = append(w.indexes, file)
	return nil
}

func parseLine(raw string) (cdxLine, error) {
	var l cdxLine
	key, rest, _ := strings.Cut(raw, " ")
	ts, fields, _ := strings.Cut(rest, " ")
	if err := json.Unmarshal([]byte(fields), &l); err != nil {
		return l, err
	}
	l.key, l.ts = key, ts
	var errL, errO error
	l.length, errL = strconv.ParseInt(l.Length, 10, 64)
	l.offset, errO = strconv.ParseInt(l.Offset, 10, 64)
	switch {
	case key != surt.Key(l.URL):
		return l, fmt.Errorf("key %q, but the SURT of %s is %q", key, l.URL, surt.Key(l.URL))
	case !timestamp.MatchString(ts):
		return l, fmt.Errorf("timestamp %q", ts)
	case errL != nil || errO != nil || l.length <= 0 || l.offset < 0:
		return l, fmt.Errorf("offset %q, length %q", l.Offset, l.Length)
	case l.Mime == "" || l.Status == "" || l.Digest == "" || l.Filename == "":
		return l, fmt.Errorf("a field is missing")
	}
	return l, nil
}

// checkIndex checks the index against the records: each line points at
// exactly one whole response record that says what the line says, and
// every response record is indexed once.
func (w *WACZ) checkIndex() error {
	if err := w.checkRecords(); err != nil {
		return err
	}
	indexed := map[recordAt]bool{}
	for _, l := range slices.Concat(w.indexes...) {
		at := recordAt{"archive/" + l.Filename, l.offset}
		r, ok := w.records[at]
		switch {
		case !ok:
			return fmt.Errorf("index line %q: no record starts at %s:%d", l.raw, at.file, at.offset)
		case indexed[at]:
			return fmt.Errorf("index line %q: record indexed twice", l.raw)
		case r.typ != gowarc.Response:
			return fmt.Errorf("index line %q points at a %s record", l.raw, r.typ)
		case r.size != l.length:
			return fmt.Errorf("index line %q: the record takes %d bytes", l.raw, r.size)
		case r.uri != l.URL || r.ts != l.ts || r.payloadDigest != l.Digest:
			return fmt.Errorf("index line %q: the record is of %s at %s, digest %s", l.raw, r.uri, r.ts, r.payloadDigest)
		case strconv.Itoa(r.status) != l.Status || r.mime != l.Mime:
			return fmt.Errorf("index line %q: the response is %d %s", l.raw, r.status, r.mime)
		}
		indexed[at] = true
	}
	for at, r := range w.records {
		if r.typ == gowarc.Response && !indexed[at] {
			return fmt.Errorf("the response of %s at %s:%d is not indexed", r.uri, at.file, at.offset)
		}
	}
	return nil
}
