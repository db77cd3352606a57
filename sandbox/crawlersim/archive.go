package crawlersim

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// archive is the crawler's collection folder on the pod volume:
// collections/<name>/archive/ holds the WARC stand-ins, pages/pages.jsonl
// the page list and <name>.wacz the package built from both. WARC records
// carry a real header and are padded with a sparse hole up to the page's
// byte count, so <id>:size grows like the real thing without using disk.
type archive struct {
	dir      string // collections/<name>
	name     string
	hostname string
	session  string // @ts of this process, in WARC file names
	mu       sync.Mutex
}

func (a *archive) archiveDir() string { return filepath.Join(a.dir, "archive") }

// init creates the collection folders, as the crawler's bootstrap does.
func (a *archive) init() error {
	for _, d := range []string{a.archiveDir(), filepath.Join(a.dir, "pages")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating collection: %w", err)
		}
	}
	return nil
}

// record appends one page of n bytes to the worker's WARC file and adds the
// page to pages.jsonl.
func (a *archive) record(worker int, url, title string, n int64, now time.Time) error {
	path := filepath.Join(a.archiveDir(), fmt.Sprintf("rec-%s-%s-%d.warc", a.session, a.hostname, worker))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("opening warc: %w", err)
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("opening warc: %w", err)
	}
	header := fmt.Sprintf("WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: %s\r\nWARC-Date: %s\r\nContent-Length: %d\r\n\r\n",
		url, now.UTC().Format(time.RFC3339), n)
	if int64(len(header)) > n {
		header = header[:n]
	}
	if _, err := f.WriteString(header); err != nil {
		return fmt.Errorf("writing warc: %w", err)
	}
	if err := f.Truncate(end + n); err != nil {
		return fmt.Errorf("writing warc: %w", err)
	}
	line, err := marshalJSON(struct {
		ID        string `json:"id"`
		URL       string `json:"url"`
		Title     string `json:"title"`
		LoadState int    `json:"loadState"`
	}{pageID(url), url, title, 4})
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pages := filepath.Join(a.dir, "pages", "pages.jsonl")
	_, statErr := os.Stat(pages)
	pf, err := os.OpenFile(pages, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("opening pages: %w", err)
	}
	defer pf.Close()
	if errors.Is(statErr, fs.ErrNotExist) {
		line = append([]byte(`{"format":"json-pages-1.0","id":"pages","title":"All Pages"}`+"\n"), line...)
	}
	if _, err := pf.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing pages: %w", err)
	}
	return nil
}

func pageID(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:8])
}

// size is the apparent size of everything under archive/, what the crawler
// reports in <id>:size.
func (a *archive) size() (int64, error) {
	var total int64
	err := filepath.WalkDir(a.archiveDir(), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measuring archive: %w", err)
	}
	return total, nil
}

// warcs lists the WARC files in archive/, sorted.
func (a *archive) warcs() ([]string, error) {
	entries, err := os.ReadDir(a.archiveDir())
	if err != nil {
		return nil, fmt.Errorf("listing archive: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// wacz packages pages.jsonl and every WARC into <name>.wacz, a stored
// (uncompressed) zip with a datapackage.json, and returns its size and
// sha256. Runs of zeros are written as holes, so a sparse archive
// gives a sparse WACZ; the hash still covers every byte.
func (a *archive) wacz(warcs []string, created time.Time) (size int64, sum string, err error) {
	f, err := os.Create(filepath.Join(a.dir, a.name+".wacz"))
	if err != nil {
		return 0, "", fmt.Errorf("creating wacz: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	sw := &sparseWriter{f: f}
	zw := zip.NewWriter(io.MultiWriter(sw, h))
	type resource struct {
		Name  string `json:"name"`
		Path  string `json:"path"`
		Hash  string `json:"hash"`
		Bytes int64  `json:"bytes"`
	}
	var resources []resource
	add := func(zipPath, src string) error {
		in, err := os.Open(src)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer in.Close()
		w, err := zw.CreateHeader(&zip.FileHeader{Name: zipPath, Method: zip.Store, Modified: created})
		if err != nil {
			return err
		}
		rh := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, rh), in)
		if err != nil {
			return err
		}
		resources = append(resources, resource{filepath.Base(zipPath), zipPath, "sha256:" + hex.EncodeToString(rh.Sum(nil)), n})
		return nil
	}
	if err := add("pages/pages.jsonl", filepath.Join(a.dir, "pages", "pages.jsonl")); err != nil {
		return 0, "", fmt.Errorf("building wacz: %w", err)
	}
	for _, name := range warcs {
		if err := add("archive/"+name, filepath.Join(a.archiveDir(), name)); err != nil {
			return 0, "", fmt.Errorf("building wacz: %w", err)
		}
	}
	pkg, err := marshalJSON(map[string]any{
		"profile": "data-package", "wacz_version": "1.1.1", "software": "trawler crawlersim",
		"created": isoTime(created), "resources": resources,
	})
	if err != nil {
		return 0, "", err
	}
	if err := writeZipFile(zw, "datapackage.json", pkg, created); err != nil {
		return 0, "", fmt.Errorf("building wacz: %w", err)
	}
	if err := zw.Close(); err != nil {
		return 0, "", fmt.Errorf("building wacz: %w", err)
	}
	if err := f.Truncate(sw.off); err != nil {
		return 0, "", fmt.Errorf("building wacz: %w", err)
	}
	return sw.off, hex.EncodeToString(h.Sum(nil)), nil
}

func writeZipFile(zw *zip.Writer, name string, data []byte, modified time.Time) error {
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: modified})
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// wipe deletes the whole collection folder after a limit-triggered upload,
// so the next session's <id>:size starts again from zero.
func (a *archive) wipe() error {
	if err := os.RemoveAll(a.dir); err != nil {
		return fmt.Errorf("deleting local collection: %w", err)
	}
	return nil
}

// sparseWriter writes sequentially to f but skips blocks that are all
// zeros, leaving holes; the caller truncates to off at the end.
type sparseWriter struct {
	f   *os.File
	off int64
}

var zeroBlock = make([]byte, 64<<10)

func (w *sparseWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), len(zeroBlock))]
		if !bytes.Equal(chunk, zeroBlock[:len(chunk)]) {
			if _, err := w.f.WriteAt(chunk, w.off); err != nil {
				return written, err
			}
		}
		w.off += int64(len(chunk))
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}

// titleOf gives synthetic pages a readable title.
func titleOf(u string) string {
	if i := strings.LastIndex(u, "/sim/"); i >= 0 {
		return "Simulated page " + u[i+len("/sim/"):]
	}
	return "Simulated page " + u
}
