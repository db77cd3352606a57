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
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The WARC side of the archive: records serialised by hand as WARC/1.1,
// one gzip member each, as .warc.gz files hold them (page.go says what a
// page writes).

// warcDate is the WARC-Date format (second precision, fixed length).
const warcDate = "2006-01-02T15:04:05Z"

// warcinfoMember is the warcinfo record that heads the WARC file in the
// WACZ.
func warcinfoMember(filename, session string, date time.Time) ([]byte, error) {
	var buf bytes.Buffer
	err := gzipMember(&buf, warcinfoRecord(filename, recordID(session+"/"+filename, "warcinfo"), date), 0)
	return buf.Bytes(), err
}

// recordID is a WARC-Record-ID made from a unique key (a page's id, with
// the URL for the subresources it captured) and the record's kind.
func recordID(key, kind string) string {
	return "<urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(key+"#"+kind)).String() + ">"
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

// gzipWriters keeps gzip writers of one level for reuse: each new one
// allocates about 800 kB of compressor tables, and fitting a page to its
// size writes up to nine members. Under the race detector those
// allocations were most of a test crawl's CPU time. A channel rather
// than a sync.Pool, which every garbage collection empties.
type gzipWriters struct {
	level int
	free  chan *gzip.Writer
}

var (
	smallRecordWriters  = gzipWriters{gzip.BestCompression, make(chan *gzip.Writer, 16)} // every byte counts
	paddedRecordWriters = gzipWriters{gzip.BestSpeed, make(chan *gzip.Writer, 16)}       // random text does not compress anyway
)

// get returns a writer that writes a new member to w.
func (g gzipWriters) get(w io.Writer) *gzip.Writer {
	select {
	case zw := <-g.free:
		zw.Reset(w)
		return zw
	default:
		zw, _ := gzip.NewWriterLevel(w, g.level) // fails only for a level out of range
		return zw
	}
}

// put keeps zw for reuse, unless enough are kept already.
func (g gzipWriters) put(zw *gzip.Writer) {
	select {
	case g.free <- zw:
	default:
	}
}

// gzipMember appends rec as one gzip member whose header grows by extra
// bytes: a comment for 1..5, an extra field (a well-formed "SP" subfield)
// from 6 on.
func gzipMember(w *bytes.Buffer, rec []byte, extra int) error {
	writers := smallRecordWriters
	if len(rec) > 8<<10 {
		writers = paddedRecordWriters
	}
	zw := writers.get(w)
	defer writers.put(zw)
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
