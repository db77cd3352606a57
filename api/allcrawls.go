package api

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// allCrawlsSorts are the sort keys of the all-crawls list.
var allCrawlsSorts = []string{"started", "finished", "fileSize"}

// crawlTypes reads crawlType: crawl, upload or absent (both).
func crawlTypes(c echo.Context) ([]string, error) {
	switch t := c.QueryParam("crawlType"); t {
	case "":
		return []string{store.TypeCrawl, store.TypeUpload}, nil
	case store.TypeCrawl, store.TypeUpload:
		return []string{t}, nil
	default:
		return nil, badRequest("invalid_crawl_type")
	}
}

// listAllCrawls lists crawls and uploads, newest finished first.
func (s *Server) listAllCrawls(c echo.Context) error {
	types, err := crawlTypes(c)
	if err != nil {
		return err
	}
	return s.listItems(c, types)
}

// listItems lists the org's items of the given types (all-crawls and
// uploads), newest finished first unless the query sorts otherwise.
func (s *Server) listItems(c echo.Context, types []string) error {
	q := newQuery(c)
	p := q.page()
	f := crawlFilter(q, p)
	if err := q.err(); err != nil {
		return err
	}
	f.Types = types
	if f.SortBy == "" {
		f.SortBy = "finished"
	}
	if !slices.Contains(allCrawlsSorts, f.SortBy) {
		return badRequest("invalid_sort_by")
	}
	return s.listCrawlsWith(c, currentOrg(c).ID, f, p)
}

func (s *Server) allCrawlsSearchValues(c echo.Context) error {
	types, err := crawlTypes(c)
	if err != nil {
		return err
	}
	sv, err := s.store.CrawlSearchValues(c.Request().Context(), currentOrg(c).ID, types)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, crawlSearchOut{Names: nonNil(sv.Names), Descriptions: nonNil(sv.Descriptions),
		FirstSeeds: nonNil(sv.FirstSeeds)})
}

// getAllCrawl is one crawl or upload with its files (crawler role, as
// upstream).
func (s *Server) getAllCrawl(c echo.Context) error { return s.crawlReplayAny(c) }

func (s *Server) crawlReplayAny(c echo.Context) error {
	crawl, err := s.crawlParam(c, true, crawlNotFoundID(c.Param("crawl_id")))
	if err != nil {
		return err
	}
	return s.writeReplay(c, currentOrg(c), crawl)
}
