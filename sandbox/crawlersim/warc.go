package crawlersim

import (
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"html"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The WARC side of the archive: each page appends a request and a response
// record (WARC/1.1, one gzip member each, as .warc.gz files hold them) to
// its worker's file. A page adds exactly sim.bytes to the file when that
// is more than its records need: the response carries a padding comment
// of random text (deterministic per URL) and the gzip header of its member
// takes up the last few bytes, so <id>:size grows by exactly the
// configured bytes per page. The file's warcinfo record is put in front
// when the WACZ is built, so that it does not count against a page.

// warcPage is one successfully loaded page.
type warcPage struct {
	url   string
	title string
	links []string
	date  time.Time
	bytes int64 // what the page adds to its WARC file
	// id names the page's records uniquely and reproducibly (a fixed
	// clock gives the same WARC bytes); recordID derives their ids.
	id string
}

// warcDate is the WARC-Date format (second precision, fixed length).
const warcDate = "2006-01-02T15:04:05Z"

// appendPage writes the page's records to the WARC file at path and
// returns the index entry of its response.
func appendPage(path string, pg warcPage) (cdxEntry, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return cdxEntry{}, fmt.Errorf("opening warc: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return cdxEntry{}, fmt.Errorf("opening warc: %w", err)
	}
	respID := recordID(pg.id, "response")
	req, err := requestRecord(pg, recordID(pg.id, "request"), respID)
	if err != nil {
		return cdxEntry{}, err
	}
	var head bytes.Buffer
	if err := gzipMember(&head, req, 0); err != nil {
		return cdxEntry{}, err
	}
	resp, digest, err := fittedResponse(pg, respID, pg.bytes-int64(head.Len()))
	if err != nil {
		return cdxEntry{}, err
	}
	if _, err := f.Write(append(head.Bytes(), resp...)); err != nil {
		return cdxEntry{}, fmt.Errorf("writing warc: %w", err)
	}
	return cdxEntry{SURT: surt(pg.url), TS: pg.date.UTC().Format("20060102150405"), URL: pg.url, Digest: digest,
		Offset: st.Size() + int64(head.Len()), Length: int64(len(resp))}, nil
}

// warcinfoMember is the warcinfo record that heads the WARC file in the
// WACZ.
func warcinfoMember(filename, session string, date time.Time) ([]byte, error) {
	var buf bytes.Buffer
	err := gzipMember(&buf, warcinfoRecord(filename, recordID(session+"/"+filename, "warcinfo"), date), 0)
	return buf.Bytes(), err
}

// cdxEntry is what the index says about a response record; offsets are
// within the file as written to the volume.
type cdxEntry struct {
	SURT   string `json:"surt"`
	TS     string `json:"ts"`
	URL    string `json:"url"`
	Digest string `json:"digest"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// line is the entry's CDXJ line, "<SURT> <timestamp> <json>", for the
// named file with shift bytes put in front of it.
func (e cdxEntry) line(filename string, shift int64) (string, error) {
	fields, err := marshalJSON(struct {
		URL      string `json:"url"`
		Mime     string `json:"mime"`
		Status   string `json:"status"`
		Digest   string `json:"digest"`
		Length   string `json:"length"`
		Offset   string `json:"offset"`
		Filename string `json:"filename"`
	}{e.URL, "text/html", "200", e.Digest, strconv.FormatInt(e.Length, 10), strconv.FormatInt(e.Offset+shift, 10), filename})
	if err != nil {
		return "", err
	}
	return e.SURT + " " + e.TS + " " + string(fields), nil
}

// surt is the sort-friendly form of a URL that CDX indexes key on:
// "https://www.Example.com:8080/a?b" gives "com,example:8080)/a?b".
func surt(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return strings.ToLower(raw)
	}
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	parts := strings.Split(host, ".")
	slices.Reverse(parts)
	key := strings.Join(parts, ",")
	if p := u.Port(); p != "" && !(u.Scheme == "http" && p == "80") && !(u.Scheme == "https" && p == "443") {
		key += ":" + p
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return key + ")" + strings.ToLower(path)
}

// recordID is a WARC-Record-ID made from a page's unique id and the
// record's kind.
func recordID(pageID, kind string) string {
	return "<urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(pageID+"#"+kind)).String() + ">"
}

// warcField is one header line of a record.
type warcField struct{ name, value string }

// warcRecord serializes a WARC/1.1 record: the version line, the fields,
// the block's digest and length, the block, and the two-CRLF end.
//
// Written by hand rather than with a WARC library: the one at hand
// (nlnwa/gowarc) flips a global of the uuid package on every record,
// which races with any other UUID made in the process (the race detector
// sees it in every sandbox test). The tests read these files back with
// that library (sandbox/wacztest), strictly, digests included.
func warcRecord(fields []warcField, block []byte) []byte {
	var b bytes.Buffer
	b.WriteString("WARC/1.1\r\n")
	for _, f := range fields {
		b.WriteString(f.name + ": " + f.value + "\r\n")
	}
	fmt.Fprintf(&b, "WARC-Block-Digest: %s\r\nContent-Length: %d\r\n\r\n", sha1Digest(block), len(block))
	b.Write(block)
	b.WriteString("\r\n\r\n")
	return b.Bytes()
}

// sha1Digest is the WARC digest form: "sha1:" and base32.
func sha1Digest(data []byte) string {
	sum := sha1.Sum(data)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

func warcinfoRecord(filename, id string, date time.Time) []byte {
	return warcRecord([]warcField{
		{"WARC-Type", "warcinfo"}, {"WARC-Record-ID", id}, {"WARC-Date", date.UTC().Format(warcDate)},
		{"WARC-Filename", filename}, {"Content-Type", "application/warc-fields"},
	}, []byte("software: trawler crawlersim\r\nformat: WARC File Format 1.1\r\n"))
}

func requestRecord(pg warcPage, id, concurrentTo string) ([]byte, error) {
	u, err := url.Parse(pg.url)
	if err != nil {
		return nil, fmt.Errorf("page url %q: %w", pg.url, err)
	}
	block := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: crawlersim\r\n\r\n", u.RequestURI(), u.Host)
	return warcRecord([]warcField{
		{"WARC-Type", "request"}, {"WARC-Record-ID", id}, {"WARC-Date", pg.date.UTC().Format(warcDate)},
		{"WARC-Target-URI", pg.url}, {"WARC-Concurrent-To", concurrentTo},
		{"Content-Type", "application/http;msgtype=request"},
	}, []byte(block)), nil
}

// responseRecord is the page's response; it also returns the payload
// digest, for the index.
func responseRecord(pg warcPage, id string, padding int) ([]byte, string) {
	body := pageHTML(pg, padding)
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", len(body))
	digest := sha1Digest(body)
	return warcRecord([]warcField{
		{"WARC-Type", "response"}, {"WARC-Record-ID", id}, {"WARC-Date", pg.date.UTC().Format(warcDate)},
		{"WARC-Target-URI", pg.url}, {"WARC-Payload-Digest", digest},
		{"Content-Type", "application/http;msgtype=response"},
	}, append([]byte(head), body...)), digest
}

// pageHTML is the page: its title and links, then padding characters of
// random text in a comment.
func pageHTML(pg warcPage, padding int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!doctype html><title>%s</title>\n", html.EscapeString(pg.title))
	for _, l := range pg.links {
		fmt.Fprintf(&b, "<a href=\"%s\">link</a>\n", html.EscapeString(l))
	}
	if padding > 0 {
		b.WriteString("<!--")
		b.Write(randomText(pg.url, padding))
		b.WriteString("-->\n")
	}
	return b.Bytes()
}

// randomText is n characters of base64 text from a generator seeded by
// the URL, so a page has the same content every time.
func randomText(seed string, n int) []byte {
	h := fnv.New64a()
	h.Write([]byte(seed))
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], h.Sum64())
	raw := make([]byte, base64.StdEncoding.DecodedLen(n)+3)
	_, _ = rand.NewChaCha8(key).Read(raw)
	return []byte(base64.StdEncoding.EncodeToString(raw)[:n])
}

// gzipMember appends rec as one gzip member whose header grows by extra
// bytes: a comment for 1..5, an extra field (a well-formed "SP" subfield)
// from 6 on.
func gzipMember(w *bytes.Buffer, rec []byte, extra int) error {
	level := gzip.BestCompression // small records: every byte counts
	if len(rec) > 8<<10 {
		level = gzip.BestSpeed // padded ones: the random text does not compress anyway
	}
	zw, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return err
	}
	switch {
	case extra >= 6:
		n := extra - 6 // XLEN (2) + subfield id (2) + subfield length (2)
		field := make([]byte, 4+n)
		copy(field, "SP")
		binary.LittleEndian.PutUint16(field[2:], uint16(n))
		zw.Header.Extra = field
	case extra > 0:
		zw.Header.Comment = strings.Repeat(" ", extra-1) // plus its NUL
	}
	if _, err := zw.Write(rec); err != nil {
		return fmt.Errorf("compressing warc record: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compressing warc record: %w", err)
	}
	return nil
}

// maxHeaderPadding is the most an extra field can take up.
const maxHeaderPadding = 6 + 0xffff

// fittedResponse is the page's response record as a gzip member of want
// bytes, or as small as it gets when want is less. The padding text
// compresses to about three quarters of its length, so a few tries
// approach want from below and the gzip header fills the rest.
func fittedResponse(pg warcPage, id string, want int64) ([]byte, string, error) {
	var digest string
	member := func(padding, extra int) ([]byte, error) {
		var buf bytes.Buffer
		rec, d := responseRecord(pg, id, padding)
		digest = d
		err := gzipMember(&buf, rec, extra)
		return buf.Bytes(), err
	}
	out, err := member(0, 0)
	if err != nil || int64(len(out)) >= want {
		return out, digest, err
	}
	base, padding := int64(len(out)), 0
	for range 8 {
		gap := want - int64(len(out))
		if gap >= 0 && gap < maxHeaderPadding && (padding > 0 || gap < 256) {
			out, err := member(padding, int(gap))
			return out, digest, err
		}
		// Aim a little short; the header takes what is left.
		next := int((float64(want-base) - 64) / 0.77)
		if padding > 0 {
			slope := float64(int64(len(out))-base) / float64(padding)
			next = padding + int((float64(gap)-64)/max(slope, 0.5))
		}
		padding = max(next, 0)
		if out, err = member(padding, 0); err != nil {
			return nil, "", err
		}
	}
	return nil, "", fmt.Errorf("could not fit the response of %s into %d bytes", pg.url, want)
}
