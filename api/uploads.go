package api

import (
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// Uploads (upstream-api-more.md §3): WACZ files users bring, stored as
// items of type "upload" next to the crawls.

// uploadParam loads the {crawl_id} upload of the current org; crawls and
// other orgs' ids are not found.
func (s *Server) uploadParam(c echo.Context, notFoundDetail string) (*store.Crawl, error) {
	u, err := s.crawlParam(c, true, notFoundDetail)
	if err != nil {
		return nil, err
	}
	if u.Type != store.TypeUpload {
		return nil, notFound(notFoundDetail)
	}
	return u, nil
}

// listUploads lists the org's uploads, newest finished first.
func (s *Server) listUploads(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	f := crawlFilter(q, p)
	if err := q.err(); err != nil {
		return err
	}
	f.Types = []string{store.TypeUpload}
	if f.SortBy == "" {
		f.SortBy = "finished"
	}
	if !slices.Contains(allCrawlsSorts, f.SortBy) {
		return badRequest("invalid_sort_by")
	}
	return s.listCrawlsWith(c, currentOrg(c).ID, f, p)
}

// getUpload is one upload without its files (crawler role, as upstream).
func (s *Server) getUpload(c echo.Context) error {
	u, err := s.uploadParam(c, crawlNotFoundID(c.Param("crawl_id")))
	if err != nil {
		return err
	}
	return s.writeCrawl(c, u)
}

func (s *Server) uploadReplay(c echo.Context) error {
	u, err := s.uploadParam(c, crawlNotFoundID(c.Param("crawl_id")))
	if err != nil {
		return err
	}
	return s.writeReplay(c, currentOrg(c), u)
}

func (s *Server) updateUpload(c echo.Context) error {
	return s.updateItem(c, func(c echo.Context) (*store.Crawl, error) { return s.uploadParam(c, detailCrawlNotFound) })
}

// anyUploadReplay is the superuser's replay.json of any org's upload.
func (s *Server) anyUploadReplay(c echo.Context) error {
	u, err := s.anyCrawl(c)
	if err != nil {
		return err
	}
	if u.Type != store.TypeUpload {
		return notFound(crawlNotFoundID(u.ID))
	}
	return s.writeAnyReplay(c, u)
}
