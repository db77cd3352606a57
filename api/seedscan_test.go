package api

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestSeedScan: firstSeed and seedCount as upstream computes them, the
// same whichever way the file is cut into writes (UTF-8 sequences and
// lines split across writes included).
func TestSeedScan(t *testing.T) {
	cases := []struct {
		name, in string
		first    string
		count    int64
		valid    bool
	}{
		{"two URLs", "https://specs.webrecorder.net\nhttps://old.webrecorder.net/\n", "https://specs.webrecorder.net", 2, true},
		{"no final newline", "https://a.example/\nhttps://b.example/", "https://a.example/", 2, true},
		{"blank and text lines count", "notes\n\n  https://a.example/x  \nmore", "https://a.example/x", 4, true},
		{"no URL", "hello\nworld\n", "", 2, false},
		{"empty", "", "", 0, false},
		{"scheme without host", "mailto:x@y\n", "", 1, false},
		{"bad UTF-8 line not counted", "\xff\xfe\nhttps://a.example/\n", "https://a.example/", 1, true},
		{"multibyte", "https://ü.example/é\n", "https://ü.example/é", 1, true},
		{"replacement char is text", "\uFFFD\nhttps://a.example/\n", "https://a.example/", 2, true},
		{"truncated sequence at end", "https://a.example/\n\xe2\x82", "https://a.example/", 1, true},
		{"overlong line is no seed", "https://a.example/" + strings.Repeat("a", maxSeedLine) + "\nhttps://b.example/\n", "https://b.example/", 2, true},
	}
	for _, tc := range cases {
		for _, chunk := range []int{1, 2, 3, 7, 1 << 20} {
			var s seedScan
			for p := []byte(tc.in); len(p) > 0; {
				n := min(chunk, len(p))
				_, _ = s.Write(p[:n])
				p = p[n:]
			}
			s.finish()
			if s.firstSeed != tc.first || s.count != tc.count || s.valid() != tc.valid {
				t.Errorf("%s (writes of %d): firstSeed %q count %d valid %v; want %q %d %v",
					tc.name, chunk, s.firstSeed, s.count, s.valid(), tc.first, tc.count, tc.valid)
			}
		}
	}
}

// TestSeedFileReader: the reader fails the stream at the first byte past
// the limit, at the first NUL byte, and instead of EOF for a file without
// URLs; a good file passes through unchanged.
func TestSeedFileReader(t *testing.T) {
	read := func(in io.Reader) ([]byte, error) {
		return io.ReadAll(&seedFileReader{r: iotest.HalfReader(in)})
	}
	good := "https://a.example/\nhttps://b.example/\n"
	if out, err := read(strings.NewReader(good)); err != nil || string(out) != good {
		t.Fatalf("good file: %q, %v", out, err)
	}
	if _, err := read(strings.NewReader("just text\n")); !errors.Is(err, errSeedFileInvalid) {
		t.Fatalf("no URL: %v", err)
	}
	if _, err := read(bytes.NewReader([]byte("https://a.example/\n\x00\x01"))); !errors.Is(err, errSeedFileInvalid) {
		t.Fatalf("binary: %v", err)
	}
	big := io.MultiReader(strings.NewReader(good), bytes.NewReader(make([]byte, 0)), strings.NewReader(strings.Repeat("x", maxSeedFileBytes)))
	r := &seedFileReader{r: big}
	n, err := io.Copy(io.Discard, r)
	if !errors.Is(err, errSeedFileTooLarge) || n > maxSeedFileBytes+64<<10 {
		t.Fatalf("too large: %d bytes read, %v", n, err)
	}
}
