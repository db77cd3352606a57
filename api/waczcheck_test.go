package api

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// testWACZ is a small WACZ file whose one WARC holds content.
func testWACZ(t testing.TB, content string) []byte {
	t.Helper()
	sum := sha256.Sum256([]byte(content))
	pkg, err := json.Marshal(map[string]any{"profile": "data-package", "wacz_version": "1.1.1",
		"resources": []any{map[string]any{"name": "data.warc", "path": "archive/data.warc",
			"hash": "sha256:" + hex.EncodeToString(sum[:]), "bytes": len(content)}}})
	if err != nil {
		t.Fatal(err)
	}
	return zipOf(t, map[string][]byte{"archive/data.warc": []byte(content), "datapackage.json": pkg}, "archive/data.warc", "datapackage.json")
}

// zipOf is a zip of files, in order: WARCs (archive/) stored, as in
// WACZ files, so their size adds up; the rest deflated.
func zipOf(t testing.TB, files map[string][]byte, order ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range order {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		if strings.HasPrefix(name, "archive/") {
			h.Method = zip.Store
		}
		w, err := zw.CreateHeader(h)
		if err == nil {
			_, err = w.Write(files[name])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zipBomb is a WACZ-shaped zip whose datapackage.json inflates to n
// bytes; with lie, its headers say it holds 2 bytes.
func zipBomb(t testing.TB, n int, lie bool) []byte {
	t.Helper()
	var packed bytes.Buffer
	fw, _ := flate.NewWriter(&packed, flate.BestCompression)
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for left := n; left > 0; left -= len(chunk) {
		fw.Write(chunk[:min(left, len(chunk))])
	}
	fw.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "datapackage.json", Method: zip.Deflate,
		CompressedSize64: uint64(packed.Len()), UncompressedSize64: uint64(n)}
	if lie {
		h.UncompressedSize64 = 2
	}
	w, err := zw.CreateRaw(h)
	if err == nil {
		_, err = w.Write(packed.Bytes())
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// countingReaderAt counts the bytes read from r.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// Uploads took any bytes as a WACZ. The check wants a zip with a
// datapackage.json that lists resources, and reads and inflates only
// bounded amounts of it, whatever the file claims.
func TestCheckWACZ(t *testing.T) {
	random := make([]byte, 64<<10)
	rand.Read(random)
	manyNames := map[string][]byte{}
	var order []string
	for i := range 40_000 { // a directory of ~10 MB
		name := fmt.Sprintf("archive/%0250d.warc", i)
		manyNames[name], order = nil, append(order, name)
	}
	for name, c := range map[string]struct {
		file    []byte
		problem string // "" for a WACZ
	}{
		"wacz":             {testWACZ(t, "records"), ""},
		"empty":            {nil, "the file is empty"},
		"random bytes":     {random, "not a zip archive"},
		"zip without pkg":  {zipOf(t, map[string][]byte{"a.warc": []byte("x")}, "a.warc"), "no datapackage.json"},
		"pkg not json":     {zipOf(t, map[string][]byte{"datapackage.json": []byte("{nope")}, "datapackage.json"), "not a JSON object with a resources list"},
		"pkg no resources": {zipOf(t, map[string][]byte{"datapackage.json": []byte(`{"profile":"data-package"}`)}, "datapackage.json"), "not a JSON object with a resources list"},
		"pkg in a folder":  {zipOf(t, map[string][]byte{"x/datapackage.json": []byte(`{"resources":[]}`)}, "x/datapackage.json"), "no datapackage.json"},
		"zip bomb":         {zipBomb(t, 256<<20, false), "datapackage.json is larger than 4194304 bytes"},
		"lying zip bomb":   {zipBomb(t, 256<<20, true), "datapackage.json cannot be unpacked"},
		"huge directory":   {zipOf(t, manyNames, order...), "take more than 8388608 bytes"},
	} {
		r := &countingReaderAt{r: bytes.NewReader(c.file)}
		err := checkWACZ(r, int64(len(c.file)))
		var bad waczError
		switch {
		case c.problem == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.problem != "" && (!errors.As(err, &bad) || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("%s: %v, want %q", name, err, c.problem)
		}
		if r.n > maxWACZCheckRead {
			t.Errorf("%s: read %d bytes", name, r.n)
		}
	}

	// Storage that fails is no bad file.
	failing := &failingReaderAt{err: errTest}
	if err := checkWACZ(failing, 1<<20); !errors.Is(err, errTest) {
		t.Fatalf("failing storage: %v", err)
	}
}

type failingReaderAt struct{ err error }

func (f *failingReaderAt) ReadAt([]byte, int64) (int, error) { return 0, f.err }

// FuzzCheckWACZ: any file is a WACZ or refused, read within the bounds,
// never a panic.
func FuzzCheckWACZ(f *testing.F) {
	f.Add(testWACZ(f, "records"))
	f.Add(zipBomb(f, 8<<10, true)) // small: every exec may inflate it whole
	f.Add([]byte("PK\x05\x06"))
	f.Fuzz(func(t *testing.T, file []byte) {
		r := &countingReaderAt{r: bytes.NewReader(file)}
		err := checkWACZ(r, int64(len(file)))
		var bad waczError
		if err != nil && !errors.As(err, &bad) {
			t.Fatalf("not a file problem: %v", err)
		}
		if r.n > maxWACZCheckRead {
			t.Fatalf("read %d bytes", r.n)
		}
	})
}
