package api

import (
	"archive/zip"
	"bufio"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// jsonLines is the content type of crawl log streams.
const jsonLines = "text/jsonl"

// crawlLogs streams a finished crawl's log lines from the logs/ files
// inside its WACZ files, merged by timestamp (each file is already in
// order), as JSON lines, keeping only the levels and contexts asked for
// (comma lists; none means all). The files are read in place with ranged
// reads, never downloaded whole.
func (s *Server) crawlLogs(c echo.Context) error {
	crawl, err := s.crawlParam(c, false, detailCrawlNotFound)
	if err != nil {
		return err
	}
	if !store.IsFinished(crawl.State) {
		return badRequest("crawl_not_finished")
	}
	q := newQuery(c)
	levels, contexts := commaList(q.str("logLevel")), commaList(q.str("context"))
	ctx := c.Request().Context()
	streams, closeAll, err := s.openLogs(ctx, currentOrg(c), crawl)
	defer closeAll()
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, jsonLines)
	w.WriteHeader(http.StatusOK)
	m := &logMerge{}
	for _, st := range streams {
		m.push(st)
	}
	for m.Len() > 0 {
		line := m.pop()
		if (len(levels) == 0 || slices.Contains(levels, line.LogLevel)) &&
			(len(contexts) == 0 || slices.Contains(contexts, line.Context)) {
			if _, err := w.Write(append(line.raw, '\n')); err != nil {
				return nil // the client went away
			}
		}
	}
	w.Flush()
	return nil
}

func commaList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// openLogs opens every log file of every WACZ of the crawl. Failing to
// reach storage is an error before anything is written; the returned
// function closes what was opened.
func (s *Server) openLogs(ctx context.Context, org *store.Org, crawl *store.Crawl) ([]*logStream, func(), error) {
	var closers []io.Closer
	closeAll := func() {
		for _, c := range closers {
			_ = c.Close()
		}
	}
	if s.objects == nil {
		return nil, closeAll, nil
	}
	var streams []*logStream
	for i := range crawl.Files {
		b, key, err := s.fileObject(org, &crawl.Files[i])
		if err != nil {
			return nil, closeAll, err
		}
		obj, err := b.Open(ctx, key)
		if err != nil {
			return nil, closeAll, err
		}
		closers = append(closers, obj)
		zr, err := zip.NewReader(obj, obj.Info.Size)
		if err != nil {
			return nil, closeAll, fmt.Errorf("reading %s as a WACZ: %w", key, err)
		}
		for _, f := range zr.File {
			if !strings.HasPrefix(f.Name, "logs/") || !strings.HasSuffix(f.Name, ".log") {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return nil, closeAll, fmt.Errorf("reading %s in %s: %w", f.Name, key, err)
			}
			closers = append(closers, rc)
			sc := bufio.NewScanner(bufio.NewReaderSize(rc, 256<<10))
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			streams = append(streams, &logStream{sc: sc, name: key + "/" + f.Name})
		}
	}
	return streams, closeAll, nil
}

// logLine is a crawler log line with the fields the merge and the
// filters need; raw is written out as it was.
type logLine struct {
	Timestamp string `json:"timestamp"`
	LogLevel  string `json:"logLevel"`
	Context   string `json:"context"`
	raw       []byte
}

// logStream reads one log file's JSON lines, skipping lines that are not
// JSON objects.
type logStream struct {
	sc   *bufio.Scanner
	name string
	head logLine
}

func (l *logStream) next() bool {
	for l.sc.Scan() {
		var line logLine
		if json.Unmarshal(l.sc.Bytes(), &line) != nil {
			continue
		}
		line.raw = slices.Clone(l.sc.Bytes())
		l.head = line
		return true
	}
	return false
}

// logMerge is a heap of streams ordered by their next line's timestamp
// (ISO 8601 in UTC, so text order is time order).
type logMerge []*logStream

func (m logMerge) Len() int           { return len(m) }
func (m logMerge) Less(i, j int) bool { return m[i].head.Timestamp < m[j].head.Timestamp }
func (m logMerge) Swap(i, j int)      { m[i], m[j] = m[j], m[i] }
func (m *logMerge) Push(x any)        { *m = append(*m, x.(*logStream)) }
func (m *logMerge) Pop() any {
	old := *m
	x := old[len(old)-1]
	*m = old[:len(old)-1]
	return x
}

// push adds a stream if it has a line.
func (m *logMerge) push(st *logStream) {
	if st.next() {
		heap.Push(m, st)
	}
}

// pop returns the earliest line and advances its stream.
func (m *logMerge) pop() logLine {
	st := (*m)[0]
	line := st.head
	if st.next() {
		heap.Fix(m, 0)
	} else {
		heap.Pop(m)
	}
	return line
}
