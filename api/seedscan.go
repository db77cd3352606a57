package api

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"
)

// A seed file (upstream-2026.md §4.2) is checked while it streams to
// storage, in constant memory whatever its size: the reader below fails
// the stream as soon as the file is too large or binary, and at its end
// when no line is a URL, so the storage upload is abandoned and nothing
// is left behind.

// maxSeedFileBytes is upstream's limit of a seed file (25 MB).
const maxSeedFileBytes = 25_000_000

// Why a seed file is refused; each is upstream's 400 detail.
var (
	errSeedFileTooLarge = badRequest("max_size_25_mb_exceeded")
	errSeedFileInvalid  = badRequest("invalid_seed_file")
)

// seedScan follows a seed file's lines as they pass: the first line that
// is a URL (upstream's firstSeed), the count of lines that are UTF-8
// (its seedCount, blank and non-URL lines included), and whether the
// file is binary (a NUL byte, which no text file holds).
type seedScan struct {
	firstSeed string
	count     int64
	binary    bool

	// line holds the current line while it may still be the first seed:
	// only until a first seed is found, and at most maxURLLen bytes
	// (plus surrounding space), as a longer line is no seed.
	line     []byte
	lineLong bool
	// carry is an incomplete UTF-8 sequence ending the last write, which
	// the next one completes; lineBad marks a line with invalid UTF-8.
	carry   []byte
	lineBad bool
	// sawBytes tells whether the file has a last line without a newline.
	sawBytes bool
}

// maxSeedLine bounds the bytes of a line kept for the first-seed check.
const maxSeedLine = maxURLLen + 256

// Write takes the next bytes of the file; it never fails.
func (s *seedScan) Write(p []byte) (int, error) {
	n := len(p)
	if bytes.IndexByte(p, 0) >= 0 {
		s.binary = true
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		s.addSegment(seg)
		if i < 0 {
			break
		}
		s.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// addSegment adds bytes of the current line (no newline among them).
func (s *seedScan) addSegment(seg []byte) {
	if len(seg) == 0 {
		return
	}
	s.sawBytes = true
	if s.firstSeed == "" && !s.lineLong {
		if len(s.line)+len(seg) > maxSeedLine {
			s.lineLong, s.line = true, s.line[:0]
		} else {
			s.line = append(s.line, seg...)
		}
	}
	if s.lineBad {
		return
	}
	// Complete a sequence the last write cut, one byte at a time.
	for len(s.carry) > 0 && len(seg) > 0 {
		s.carry = append(s.carry, seg[0])
		seg = seg[1:]
		if utf8.FullRune(s.carry) {
			if r, size := utf8.DecodeRune(s.carry); r == utf8.RuneError && size <= 1 {
				s.lineBad = true
				return
			}
			s.carry = s.carry[:0]
		}
	}
	// Keep an incomplete sequence at the end for the next write.
	end := len(seg)
	for j := len(seg) - 1; j >= 0 && j >= len(seg)-utf8.UTFMax; j-- {
		if utf8.RuneStart(seg[j]) {
			if !utf8.FullRune(seg[j:]) {
				end = j
			}
			break
		}
	}
	if !utf8.Valid(seg[:end]) {
		s.lineBad = true
		return
	}
	s.carry = append(s.carry, seg[end:]...)
}

// endLine ends the current line.
func (s *seedScan) endLine() {
	if !s.lineBad && len(s.carry) == 0 {
		s.count++
		if s.firstSeed == "" && !s.lineLong && isSeedURL(string(s.line)) {
			s.firstSeed = strings.TrimSpace(string(s.line))
		}
	}
	s.line, s.lineLong, s.carry, s.lineBad, s.sawBytes = s.line[:0], false, s.carry[:0], false, false
}

// finish ends the file: a last line without a newline counts too.
func (s *seedScan) finish() {
	if s.sawBytes {
		s.endLine()
	}
}

// valid tells whether the file so far is a seed file upstream accepts.
func (s *seedScan) valid() bool { return !s.binary && s.firstSeed != "" && s.count > 0 }

// isSeedURL is upstream's first-seed test: the stripped line parses as a
// URL with both a scheme and a host.
func isSeedURL(line string) bool {
	u, err := url.Parse(strings.TrimSpace(line))
	return err == nil && u.Scheme != "" && u.Host != ""
}

// seedFileReader passes a seed file through to storage, scanning it. It
// fails the stream with errSeedFileTooLarge past maxSeedFileBytes, with
// errSeedFileInvalid as soon as the file is binary and, instead of the
// end, when the whole file holds no URL: the upload then never completes.
type seedFileReader struct {
	r    io.Reader
	scan seedScan
	n    int64
	err  error // the refusal, once there is one
}

func (s *seedFileReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	_, _ = s.scan.Write(p[:n])
	switch {
	case s.n > maxSeedFileBytes:
		s.err = errSeedFileTooLarge
	case s.scan.binary:
		s.err = errSeedFileInvalid
	case errors.Is(err, io.EOF):
		if s.scan.finish(); !s.scan.valid() {
			s.err = errSeedFileInvalid
		}
	}
	if s.err != nil {
		return n, s.err
	}
	return n, err
}
