package crawlersim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// archive is the crawler's collection folder on the pod volume:
// collections/<name>/archive/ holds one .warc.gz per worker and session,
// pages/pages.jsonl the page list, logs/ the crawl log of each session and
// <name>.wacz the package built from all of them (wacz.go).
type archive struct {
	dir      string // collections/<name>
	name     string
	hostname string
	session  string // @ts of this process, in WARC and log file names
	mu       sync.Mutex
	run      int          // the container's restart count
	pages    atomic.Int64 // pages recorded by this process
	// captured are the URLs in this collection's index, under mu: a
	// subresource is captured only by the first page that needs it.
	captured map[string]bool
}

func (a *archive) archiveDir() string { return filepath.Join(a.dir, "archive") }

func (a *archive) logsDir() string { return filepath.Join(a.dir, "logs") }

func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// init creates the collection folders, as the crawler's bootstrap does,
// and reads what earlier sessions captured into them.
func (a *archive) init() error {
	for _, d := range []string{a.archiveDir(), filepath.Join(a.dir, "pages"), filepath.Join(a.dir, "indexes"), a.logsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating collection: %w", err)
		}
	}
	captured, err := a.indexed()
	a.captured = captured
	return err
}

// logFile opens this session's crawl log, which the WACZ carries.
func (a *archive) logFile() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(a.logsDir(), "crawl-"+a.session+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening crawl log: %w", err)
	}
	return f, nil
}

// Load states of pages.jsonl, as the crawler numbers them: an error
// status ends the page's load once its content is in.
const (
	loadStateContentLoaded = 1
	loadStateBehaviorsDone = 4
)

// record appends one page, with the subresources of its origin not yet
// in the collection, to the worker's WARC file, indexes them and adds the
// page to pages.jsonl. An error page embeds nothing.
func (a *archive) record(worker int, pg warcPage) error {
	path := filepath.Join(a.archiveDir(), fmt.Sprintf("rec-%s-%s-%d.warc.gz", a.session, a.hostname, worker))
	pg.id = fmt.Sprintf("%s/%s/%d/%d", a.hostname, a.session, a.run, a.pages.Add(1))
	var subs []capture
	loadState := loadStateContentLoaded
	if pg.status == 0 {
		subs, loadState = a.uncaptured(pg.fetched()), loadStateBehaviorsDone
	}
	entries, err := appendPage(path, pg, subs)
	if err != nil {
		return err
	}
	var cdx [][]byte
	for _, e := range entries {
		line, err := marshalJSON(e)
		if err != nil {
			return err
		}
		cdx = append(cdx, line)
	}
	line, err := marshalJSON(struct {
		ID        string `json:"id"`
		URL       string `json:"url"`
		TS        string `json:"ts"`
		Title     string `json:"title"`
		LoadState int    `json:"loadState"`
	}{pageID(pg.url), pg.url, isoTime(pg.date), pg.title, loadState})
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := appendLine(a.indexPath(filepath.Base(path)), bytes.Join(cdx, []byte("\n"))); err != nil {
		return fmt.Errorf("writing index: %w", err)
	}
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

// uncaptured returns the subresources of the page at pageURL that the
// collection lacks, and counts them as captured from now on. Should the
// page's write fail, the process fails too, and the next one reads what
// really is in the index.
func (a *archive) uncaptured(pageURL string) []capture {
	origin := originOf(pageURL)
	if origin == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []capture
	for _, r := range subresources {
		c := r.captureAt(origin, pageURL)
		if !a.captured[c.url] {
			a.captured[c.url] = true
			out = append(out, c)
		}
	}
	return out
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

// wipe deletes the whole collection folder after a limit-triggered upload,
// so the next session's <id>:size starts again from zero.
func (a *archive) wipe() error {
	a.mu.Lock()
	a.captured = map[string]bool{}
	a.mu.Unlock()
	if err := os.RemoveAll(a.dir); err != nil {
		return fmt.Errorf("deleting local collection: %w", err)
	}
	return nil
}

// titleOf gives synthetic pages a readable title, the same for every
// fragment of a URL, since the fragment is not part of what is fetched.
func titleOf(u string) string {
	u, _, _ = strings.Cut(u, "#")
	if i := strings.LastIndex(u, "/sim/"); i >= 0 {
		return "Simulated page " + u[i+len("/sim/"):]
	}
	return "Simulated page " + u
}
