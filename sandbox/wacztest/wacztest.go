// Package wacztest checks WACZ files the way a replay tool would read
// them, for tests: the zip opens, datapackage.json lists every entry with
// its true sha256 and size, datapackage-digest.json matches it, every WARC
// record parses (strictly, digests included) with a WARC library, and the
// CDXJ index points at real response records.
package wacztest

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/nlnwa/gowarc/v3"
)

// WACZ is what Inspect found.
type WACZ struct {
	// Entries are the zip entries' names.
	Entries []string
	// Pages are the URLs in pages/pages.jsonl.
	Pages []string
	// Records counts WARC records by type ("warcinfo", "request", ...).
	Records map[string]int
	// Responses are the target URIs of the response records.
	Responses []string
	// Index are the CDXJ lines of indexes/.
	Index []string
	// LogLines are the lines of the logs/ files.
	LogLines []string
}

type resource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

type datapackage struct {
	Profile     string     `json:"profile"`
	WACZVersion string     `json:"wacz_version"`
	Resources   []resource `json:"resources"`
}

// gowarcMu serializes the WARC library: every reader it makes sets a
// global of the uuid package, which races with itself.
var gowarcMu sync.Mutex

// Inspect checks a whole WACZ file and describes it; the error says the
// first thing found wrong. The WARC library it uses races with UUIDs
// made concurrently in the same process (see gowarcMu), so call it where
// nothing else makes random UUIDs meanwhile, or without -race.
func Inspect(data []byte) (*WACZ, error) {
	gowarcMu.Lock()
	defer gowarcMu.Unlock()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a zip: %w", err)
	}
	files := map[string][]byte{}
	w := &WACZ{Records: map[string]int{}}
	for _, f := range zr.File {
		body, err := readEntry(f)
		if err != nil {
			return nil, err
		}
		files[f.Name] = body
		w.Entries = append(w.Entries, f.Name)
	}
	if err := checkPackage(files); err != nil {
		return nil, err
	}
	for _, name := range w.Entries {
		body := files[name]
		switch {
		case strings.HasPrefix(name, "archive/"):
			if err := w.readWARC(name, body); err != nil {
				return nil, err
			}
		case name == "pages/pages.jsonl":
			if w.Pages, err = pageURLs(body); err != nil {
				return nil, err
			}
		case strings.HasPrefix(name, "indexes/"):
			w.Index = lines(body)
		case strings.HasPrefix(name, "logs/"):
			w.LogLines = append(w.LogLines, lines(body)...)
		}
	}
	if err := w.checkIndex(files); err != nil {
		return nil, err
	}
	return w, nil
}

func readEntry(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", f.Name, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", f.Name, err)
	}
	return body, nil
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// checkPackage verifies datapackage.json against the entries, and its
// digest file against it.
func checkPackage(files map[string][]byte) error {
	raw, ok := files["datapackage.json"]
	if !ok {
		return fmt.Errorf("no datapackage.json")
	}
	var pkg datapackage
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return fmt.Errorf("datapackage.json: %w", err)
	}
	if pkg.Profile != "data-package" || pkg.WACZVersion != "1.1.1" {
		return fmt.Errorf("datapackage.json: profile %q, wacz_version %q", pkg.Profile, pkg.WACZVersion)
	}
	listed := map[string]bool{}
	for _, r := range pkg.Resources {
		body, ok := files[r.Path]
		switch {
		case !ok:
			return fmt.Errorf("datapackage.json lists %s, which the zip lacks", r.Path)
		case sha(body) != r.Hash || int64(len(body)) != r.Bytes:
			return fmt.Errorf("%s: datapackage.json says %s, %d bytes; entry is %s, %d bytes",
				r.Path, r.Hash, r.Bytes, sha(body), len(body))
		case r.Name != path.Base(r.Path):
			return fmt.Errorf("%s: resource name %q", r.Path, r.Name)
		}
		listed[r.Path] = true
	}
	for name := range files {
		if !listed[name] && name != "datapackage.json" && name != "datapackage-digest.json" {
			return fmt.Errorf("entry %s is not in datapackage.json", name)
		}
	}
	var digest struct{ Path, Hash string }
	if err := json.Unmarshal(files["datapackage-digest.json"], &digest); err != nil {
		return fmt.Errorf("datapackage-digest.json: %w", err)
	}
	if digest.Path != "datapackage.json" || digest.Hash != sha(raw) {
		return fmt.Errorf("datapackage-digest.json %+v does not match datapackage.json (%s)", digest, sha(raw))
	}
	for _, dir := range []string{"archive/", "indexes/", "pages/"} {
		if !slices.ContainsFunc(pkg.Resources, func(r resource) bool { return strings.HasPrefix(r.Path, dir) }) {
			return fmt.Errorf("no %s entry", dir)
		}
	}
	return nil
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
		if _, err := rec.WarcRecord.ValidateDigest(); err != nil {
			rec.WarcRecord.Close()
			return fmt.Errorf("%s at %d: %w", name, rec.Offset, err)
		}
		w.Records[rec.WarcRecord.Type().String()]++
		if rec.WarcRecord.Type() == gowarc.Response {
			w.Responses = append(w.Responses, rec.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI))
		}
		rec.WarcRecord.Close()
	}
	return nil
}

// checkIndex reads the record each CDXJ line points at.
func (w *WACZ) checkIndex(files map[string][]byte) error {
	for _, line := range w.Index {
		parts := strings.SplitN(line, " ", 3)
		if len(parts) != 3 {
			return fmt.Errorf("index line %q", line)
		}
		var f struct {
			URL, Filename  string
			Offset, Length json.Number
		}
		if err := json.Unmarshal([]byte(parts[2]), &f); err != nil {
			return fmt.Errorf("index line %q: %w", line, err)
		}
		body := files["archive/"+f.Filename]
		off, _ := f.Offset.Int64()
		n, _ := f.Length.Int64()
		if body == nil || off < 0 || n <= 0 || off+n > int64(len(body)) {
			return fmt.Errorf("index line %q points outside its WARC", line)
		}
		r, err := gowarc.NewWarcFileReaderFromStream(bytes.NewReader(body[off:off+n]), 0)
		if err != nil {
			return fmt.Errorf("index line %q: %w", line, err)
		}
		rec, err := r.Next()
		r.Close()
		if err != nil {
			return fmt.Errorf("index line %q: %w", line, err)
		}
		uri := rec.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI)
		rec.WarcRecord.Close()
		if rec.WarcRecord.Type() != gowarc.Response || uri != f.URL {
			return fmt.Errorf("index line %q points at a %s record of %s", line, rec.WarcRecord.Type(), uri)
		}
	}
	return nil
}

func pageURLs(body []byte) ([]string, error) {
	var out []string
	for i, line := range lines(body) {
		var p struct {
			URL    string `json:"url"`
			Format string `json:"format"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			return nil, fmt.Errorf("pages.jsonl line %d: %w", i+1, err)
		}
		if i == 0 {
			if p.Format != "json-pages-1.0" {
				return nil, fmt.Errorf("pages.jsonl header %q", line)
			}
			continue
		}
		out = append(out, p.URL)
	}
	return out, nil
}

func lines(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if sc.Text() != "" {
			out = append(out, sc.Text())
		}
	}
	return out
}
