package api

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// Bounds of reading pages from WACZ files.
const (
	// waczPageBatch is how many pages one insert carries (upstream's).
	waczPageBatch = 100
	// maxPageLine bounds one line of a pages/*.jsonl; a page's extracted
	// text may be long, but a longer line is skipped, not buffered.
	maxPageLine = 8 << 20
	// readdTimeout bounds the re-read of one item.
	readdTimeout = time.Hour
)

// readWACZPages adds the pages of every WACZ file of crawl, read from
// each file's pages/*.jsonl members (upstream-2026 §3.1): through ranged
// reads of the stored object, so only the zip's directory and those
// members are fetched, each streamed line by line. Uploads get ids of
// their own; crawls keep the crawler's. Reading again adds nothing new.
func (s *Server) readWACZPages(ctx context.Context, crawl *store.Crawl) error {
	org, err := s.store.GetOrg(ctx, crawl.OID)
	if err != nil {
		return err
	}
	var errs []error
	for i := range crawl.Files {
		if err := s.readFilePages(ctx, org, crawl, &crawl.Files[i]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", crawl.Files[i].Filename, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Server) readFilePages(ctx context.Context, org *store.Org, crawl *store.Crawl, f *store.CrawlFile) error {
	b, key, err := s.fileObject(org, f)
	if err != nil {
		return err
	}
	obj, err := b.Open(ctx, key)
	if err != nil {
		return err
	}
	defer obj.Close()
	zr, err := zip.NewReader(obj, obj.Info.Size)
	if err != nil {
		return fmt.Errorf("reading the WACZ's directory: %w", err)
	}
	base := path.Base(f.Filename)
	for _, m := range zr.File {
		if !strings.HasPrefix(m.Name, "pages/") || !strings.HasSuffix(m.Name, ".jsonl") || m.FileInfo().IsDir() {
			continue
		}
		src := store.PageSource{OID: crawl.OID, CrawlID: crawl.ID, Filename: base,
			Seed: m.Name == "pages/pages.jsonl", NewIDs: crawl.Type == store.TypeUpload}
		if err := s.readPagesMember(ctx, m, src); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

// readPagesMember streams one pages/*.jsonl into the store in batches.
func (s *Server) readPagesMember(ctx context.Context, m *zip.File, src store.PageSource) error {
	rc, err := m.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	r := bufio.NewReaderSize(rc, 64<<10)
	now := s.clock.Now()
	batch := make([]store.Page, 0, waczPageBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := s.store.AddPages(ctx, batch)
		batch = batch[:0]
		return err
	}
	for n := 0; ; n++ {
		line, err := readLine(r, maxPageLine)
		if len(line) > 0 {
			key := src
			key.Key = fmt.Sprintf("%s:%s:%d", src.Filename, m.Name, n)
			if p, ok := store.PageFromRecord(line, key, now); ok {
				if batch = append(batch, p); len(batch) == waczPageBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return err
		}
	}
}

// readLine returns the next line without its line end; a line longer
// than limit is skipped (returned empty) rather than buffered whole.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over && len(line)+len(chunk) <= limit {
			line = append(line, chunk...)
		} else {
			over, line = true, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// AddWACZPages reads the pages of a finished crawl from its WACZ files
// when it succeeded and none came through Redis (0.11 crawlers write no
// <id>:pages): the operator calls it before counting the crawl's pages.
func (s *Server) AddWACZPages(ctx context.Context, crawlID string) error {
	crawl, err := s.store.GetCrawlByID(ctx, crawlID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !store.IsSuccessful(crawl.State) {
		return nil
	}
	some, _, err := s.store.ListPages(ctx, store.PageQuery{CrawlIDs: []string{crawlID}, NoCount: true,
		Paging: store.Paging{PageSize: 1}})
	if err != nil || len(some) > 0 {
		return err
	}
	return s.readWACZPages(ctx, crawl)
}

// readdPages is the re-add of one item (upstream-2026 §3.5, without the
// QA fields): delete its pages, read them again from its WACZ files and
// count them.
func (s *Server) readdPages(ctx context.Context, crawl *store.Crawl) error {
	if err := s.store.ClearPages(ctx, crawl.ID); err != nil {
		return err
	}
	readErr := s.readWACZPages(ctx, crawl)
	_, err := s.store.RecountPages(ctx, crawl.ID)
	return errors.Join(readErr, err)
}

// startPagesJob runs a re-add of items of org oid in the background
// under a new job id ("org-pages-<oid>-<10 hex>", upstream's form); each
// item is read whole when its turn comes (lists leave out files). Errors
// are logged per item and do not stop the others.
func (s *Server) startPagesJob(oid uuid.UUID, ids []string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	id := fmt.Sprintf("org-pages-%s-%s", oid, hex.EncodeToString(b[:]))
	s.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), readdTimeout)
		defer cancel()
		for _, item := range ids {
			crawl, err := s.store.GetCrawl(ctx, oid, item)
			if err == nil {
				err = s.readdPages(ctx, crawl)
			}
			if err != nil {
				s.log.Warn("reading pages again failed", "job", id, "item", item, "err", err)
			}
		}
	})
	return id
}

// readUploadPages reads a new upload's pages in the background, as
// upstream's postprocess-upload job does.
func (s *Server) readUploadPages(oid uuid.UUID, id string) {
	s.background.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), readdTimeout)
		defer cancel()
		crawl, err := s.store.GetCrawl(ctx, oid, id)
		if err == nil {
			err = s.readdPages(ctx, crawl)
		}
		if err != nil {
			s.log.Warn("reading the upload's pages failed", "upload", id, "err", err)
		}
	})
}

func (s *Server) readdItemPages(c echo.Context) error {
	crawl, err := s.crawlParam(c, true, detailCrawlNotFound)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, readdOut{Started: s.startPagesJob(crawl.OID, []string{crawl.ID})})
}

// readdOrgPages re-reads every finished item of the org of the route's
// type: crawls, uploads or both (all-crawls).
func (s *Server) readdOrgPages(c echo.Context) error {
	org := currentOrg(c)
	types := []string{store.TypeCrawl, store.TypeUpload}
	switch {
	case strings.Contains(c.Path(), "/crawls/"):
		types = nil
	case strings.Contains(c.Path(), "/uploads/"):
		types = []string{store.TypeUpload}
	}
	items, _, err := s.store.ListCrawls(c.Request().Context(), org.ID, store.CrawlFilter{Types: types, States: store.FinishedStates})
	if err != nil {
		return err
	}
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].ID
	}
	return c.JSON(http.StatusOK, readdOut{Started: s.startPagesJob(org.ID, ids)})
}
