package crawlersim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/trawlerhq/trawler/sandbox/crawlersim/surt"
)

// The CDXJ index: while crawling, each WARC file's response records are
// listed in indexes/<warc>.cdxj on the volume, one cdxEntry (JSON) a
// line; building the WACZ turns them into one sorted CDXJ file, as the
// crawler's WACZ tool indexes its WARCs.

// cdxEntry is what the index says about a response record; offsets are
// within the file as written to the volume.
type cdxEntry struct {
	TS     string `json:"ts"`
	URL    string `json:"url"`
	Mime   string `json:"mime"`
	Status int    `json:"status"`
	Digest string `json:"digest"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// line is the entry's CDXJ line, "<SURT> <timestamp> <json>" with the
// fields cdxj-indexer writes, for the named file with shift bytes put in
// front of it.
func (e cdxEntry) line(filename string, shift int64) (string, error) {
	fields, err := marshalJSON(struct {
		URL      string `json:"url"`
		Mime     string `json:"mime"`
		Status   string `json:"status"`
		Digest   string `json:"digest"`
		Length   string `json:"length"`
		Offset   string `json:"offset"`
		Filename string `json:"filename"`
	}{e.URL, e.Mime, strconv.Itoa(e.Status), e.Digest, strconv.FormatInt(e.Length, 10), strconv.FormatInt(e.Offset+shift, 10), filename})
	if err != nil {
		return "", err
	}
	return surt.Key(e.URL) + " " + e.TS + " " + string(fields), nil
}

// indexPath is where the index entries of a WARC file collect until the
// WACZ is built; it lives beside archive/ so <id>:size leaves it out.
func (a *archive) indexPath(warc string) string { return filepath.Join(a.dir, "indexes", warc+".cdxj") }

// entries reads the index entries of one WARC file; a file without any
// has none.
func (a *archive) entries(warc string) ([]cdxEntry, error) {
	data, err := os.ReadFile(a.indexPath(warc))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading index: %w", err)
	}
	var out []cdxEntry
	for _, raw := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if raw == "" {
			continue
		}
		var e cdxEntry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("reading index of %s: %w", warc, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// index returns the sorted CDXJ lines of the given WARC files, each with
// shift[name] bytes put in front of it. Sorting whole lines sorts by
// key, then timestamp: a key never holds a space.
func (a *archive) index(warcs []string, shift map[string]int64) ([]byte, error) {
	var lines []string
	for _, w := range warcs {
		entries, err := a.entries(w)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			line, err := e.line(w, shift[w])
			if err != nil {
				return nil, err
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}

// indexed lists the URLs this collection's indexes already hold, so that
// a process resuming the collection does not capture its subresources
// again.
func (a *archive) indexed() (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(a.dir, "indexes", "*.cdxj"))
	if err != nil {
		return nil, fmt.Errorf("listing indexes: %w", err)
	}
	urls := map[string]bool{}
	for _, f := range files {
		entries, err := a.entries(strings.TrimSuffix(filepath.Base(f), ".cdxj"))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			urls[e.URL] = true
		}
	}
	return urls, nil
}
