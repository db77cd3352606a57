// Package wacztest checks WACZ files the way a replay tool would read
// them, for tests. Inspect checks the package: the zip opens, the WARCs
// are stored uncompressed (replay reads them by range), datapackage.json
// lists every entry with its true sha256 and size and
// datapackage-digest.json matches it, every WARC record parses strictly
// (digests included) with a WARC library, the CDXJ index is sorted and
// keyed by SURT and points exactly at every response record, and
// pages.jsonl and the logs are well-formed. Lookup, Replay and
// CheckReplay then resolve pages and the resources they embed through
// the index, as ReplayWeb.page does, without a browser.
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
	"time"
)

// WACZ is what Inspect found.
type WACZ struct {
	// Entries are the zip entries' names.
	Entries []string
	// Pages are the URLs in pages/pages.jsonl, in its order.
	Pages []string
	// Titles maps each page URL to its title in pages/pages.jsonl.
	Titles map[string]string
	// Records counts WARC records by type ("warcinfo", "request", ...).
	Records map[string]int
	// Responses are the target URIs of the response records.
	Responses []string
	// Index are the CDXJ lines of indexes/, in their order.
	Index []string
	// LogLines are the lines of the logs/ files.
	LogLines []string

	files   map[string][]byte
	records map[recordAt]record // every WARC record, by where it starts
	indexes [][]cdxLine         // Index, parsed, per index file
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
	Created     string     `json:"created"`
	Resources   []resource `json:"resources"`
}

// gowarcMu serializes the WARC library: every reader it makes sets a
// global of the uuid package, which races with itself.
var gowarcMu sync.Mutex

// Inspect checks a whole WACZ file and describes it; the error says the
// first thing found wrong. The WARC library it uses races with UUIDs
// made concurrently in the same process (see gowarcMu), so call it, and
// the lookups, where nothing else makes random UUIDs meanwhile, or
// without -race.
func Inspect(data []byte) (*WACZ, error) {
	gowarcMu.Lock()
	defer gowarcMu.Unlock()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a zip: %w", err)
	}
	w := &WACZ{Records: map[string]int{}, Titles: map[string]string{}, files: map[string][]byte{}, records: map[recordAt]record{}}
	for _, f := range zr.File {
		if err := w.addEntry(f); err != nil {
			return nil, err
		}
	}
	if err := checkPackage(w.files); err != nil {
		return nil, err
	}
	for _, name := range w.Entries {
		body := w.files[name]
		switch {
		case strings.HasPrefix(name, "archive/"):
			err = w.readWARC(name, body)
		case name == "pages/pages.jsonl":
			err = w.readPages(body)
		case strings.HasPrefix(name, "indexes/"):
			err = w.readIndex(name, body)
		case strings.HasPrefix(name, "logs/"):
			err = w.readLog(name, body)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := w.checkIndex(); err != nil {
		return nil, err
	}
	return w, nil
}

// addEntry reads one zip entry. Names are plain relative paths, each
// once, and WARCs are stored: a replay tool reads a record by seeking to
// its offset, which a deflated entry does not allow.
func (w *WACZ) addEntry(f *zip.File) error {
	_, dup := w.files[f.Name]
	switch {
	case f.Name != path.Clean(f.Name) || path.IsAbs(f.Name) || strings.HasPrefix(f.Name, "../") || strings.HasSuffix(f.Name, "/"):
		return fmt.Errorf("entry %q is not a plain relative file name", f.Name)
	case dup:
		return fmt.Errorf("entry %s twice", f.Name)
	case strings.HasPrefix(f.Name, "archive/") && f.Method != zip.Store:
		return fmt.Errorf("entry %s is compressed (method %d); WARCs must be stored", f.Name, f.Method)
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("entry %s: %w", f.Name, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("entry %s: %w", f.Name, err)
	}
	w.files[f.Name] = body
	w.Entries = append(w.Entries, f.Name)
	return nil
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
	if _, err := time.Parse(time.RFC3339, pkg.Created); err != nil {
		return fmt.Errorf("datapackage.json: created %q: %w", pkg.Created, err)
	}
	listed := map[string]bool{}
	for _, r := range pkg.Resources {
		body, ok := files[r.Path]
		switch {
		case !ok:
			return fmt.Errorf("datapackage.json lists %s, which the zip lacks", r.Path)
		case listed[r.Path]:
			return fmt.Errorf("datapackage.json lists %s twice", r.Path)
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

// readLog checks that every log line is a JSON object, as the crawler
// logs.
func (w *WACZ) readLog(name string, body []byte) error {
	for i, line := range lines(body) {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			return fmt.Errorf("%s line %d: %w", name, i+1, err)
		}
		w.LogLines = append(w.LogLines, line)
	}
	return nil
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
