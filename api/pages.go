package api

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// pageRoutes are the pages API (upstream-2026 §3.3). {type} routes serve
// crawls, uploads and all-crawls alike, without checking the item's type,
// as upstream.
func (s *Server) pageRoutes() []route {
	const (
		get, post = http.MethodGet, http.MethodPost
		options   = http.MethodOptions
		org       = "/api/orgs/:oid"
		coll      = org + "/collections/:coll_id"
	)
	filterQ := []string{"search", "url", "ts", "isSeed", "depth", "page", "pageSize"}
	listQ := append([]string{"urlPrefix", "sortBy", "sortDirection"}, filterQ...)
	var rs []route
	for _, typ := range []string{"crawls", "uploads", "all-crawls"} {
		item := org + "/" + typ + "/:crawl_id"
		rs = append(rs,
			route{get, item + "/pages", accessOrgCrawler, s.listItemPages, "An item's pages", "pages", nil, pageOut[pageDocOut]{}, listQ},
			route{get, item + "/pages/:page_id", accessOrgCrawler, s.getItemPage, "One page of an item", "pages", nil, pageDocOut{}, nil},
			route{post, item + "/pages/reAdd", accessOrgCrawler, s.readdItemPages, "Read an item's pages again from its WACZ files", "pages", nil, readdOut{}, nil},
			route{post, org + "/" + typ + "/all/pages/reAdd", accessOrgSuperuser, s.readdOrgPages, "Read the pages of every finished item of the org again", "pages", nil, readdOut{}, nil},
		)
	}
	return append(rs,
		route{get, org + "/crawls/:crawl_id/pagesSearch", accessOrgCrawler, s.searchCrawlPages, "Search a crawl's pages (no total)", "pages", nil, pageItemsOut{}, filterQ},
		route{get, coll + "/pages", accessOrgViewer, s.collectionPages, "The pages of a collection's items", "pages", nil, pageItemsOut{}, listQ},
		route{options, coll + "/pages", accessPublic, s.pagesPreflight, "CORS preflight of the collection's pages", "pages", nil, empty{}, nil},
		route{get, coll + "/public/pages", accessPublic, s.publicCollectionPages, "The pages of a public or unlisted collection (no token)", "pages", nil, pageItemsOut{}, listQ},
		route{options, coll + "/public/pages", accessPublic, s.pagesPreflight, "CORS preflight of the public collection's pages", "pages", nil, empty{}, nil},
	)
}

// pageQuery reads the filters, sorting and paging of a page list. Sort
// keys and directions outside the allowed set are upstream's 400s, which
// the store reports.
func pageQuery(q *query, sortable bool) (store.PageQuery, page) {
	p := q.page()
	pq := store.PageQuery{Search: unescaped(q.str("search")), URL: unescaped(q.str("url")),
		URLPrefix: unescaped(q.str("urlPrefix")), IsSeed: q.bool("isSeed"), Paging: p.paging()}
	if q.str("depth") != "" {
		d := q.int("depth", 0)
		pq.Depth = &d
	}
	if raw := q.str("ts"); raw != "" {
		ts, err := parseISOTime(raw)
		if err != nil {
			q.v.add("invalid datetime format", "value_error.datetime", "query", "ts")
		} else {
			pq.TS = &ts
		}
	}
	if sortable {
		pq.SortBy = q.str("sortBy")
		pq.SortDirection = q.sortDirection(-1)
	}
	return pq, p
}

// unescaped decodes a value once more, as upstream does (clients send
// URLs encoded inside the query); a value that does not decode is kept.
func unescaped(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// parseISOTime reads an ISO-8601 time; one without zone is UTC.
func parseISOTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Parse(time.RFC3339, s)
}

func (s *Server) listItemPages(c echo.Context) error {
	q := newQuery(c)
	pq, p := pageQuery(q, true)
	if err := q.err(); err != nil {
		return err
	}
	oid := currentOrg(c).ID
	pq.OID, pq.CrawlIDs = &oid, []string{c.Param("crawl_id")}
	pages, total, err := s.store.ListPages(c.Request().Context(), pq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPageOut(toPagesOut(pages), int(total), p))
}

func (s *Server) getItemPage(c echo.Context) error {
	id, err := uuid.Parse(c.Param("page_id"))
	if err != nil {
		return validationError{{Loc: []any{"path", "page_id"}, Msg: "value is not a valid uuid", Type: "type_error.uuid"}}
	}
	pg, err := s.store.GetPage(c.Request().Context(), currentOrg(c).ID, c.Param("crawl_id"), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toPageOut(pg))
}

func (s *Server) searchCrawlPages(c echo.Context) error {
	q := newQuery(c)
	pq, _ := pageQuery(q, false)
	if err := q.err(); err != nil {
		return err
	}
	ctx, oid, id := c.Request().Context(), currentOrg(c).ID, c.Param("crawl_id")
	pq.OID, pq.CrawlIDs, pq.NoCount = &oid, []string{id}, true
	pages, _, err := s.store.ListPages(ctx, pq)
	if err != nil {
		return err
	}
	items := toPagesOut(pages)
	// ReplayWeb.page loads a found page's WACZ by its name in replay.json's
	// resources, as for initialPages.
	if crawl, err := s.store.GetCrawl(ctx, oid, id); err == nil {
		nameResources(items, crawl.Files)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return c.JSON(http.StatusOK, pageItemsOut{Items: items})
}

// writePageItems answers the items-only page routes.
func (s *Server) writePageItems(c echo.Context, pq store.PageQuery) error {
	pq.NoCount = true
	pages, _, err := s.store.ListPages(c.Request().Context(), pq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageItemsOut{Items: toPagesOut(pages)})
}

func (s *Server) collectionPages(c echo.Context) error {
	setPublicCORS(c)
	id, err := collectionID(c)
	if err != nil {
		return err
	}
	coll, err := s.store.GetCollection(c.Request().Context(), currentOrg(c).ID, id)
	if err != nil {
		return err
	}
	return s.writeCollectionPages(c, coll)
}

// publicCollectionPages is collectionPages without a token, for
// collections that are public (trawler's collections are private or
// public; upstream's unlisted ones are public here).
func (s *Server) publicCollectionPages(c echo.Context) error {
	setPublicCORS(c)
	ctx := c.Request().Context()
	oid, err := uuid.Parse(c.Param("oid"))
	if err != nil {
		return notFound("org_not_found")
	}
	if _, err := s.store.GetOrg(ctx, oid); err != nil {
		return notFoundAs(err, "org_not_found")
	}
	id, err := collectionID(c)
	if err != nil {
		return err
	}
	coll, err := s.store.GetCollection(ctx, oid, id)
	if err != nil {
		return err
	}
	if !coll.IsPublic {
		return notFound("collection_not_found")
	}
	return s.writeCollectionPages(c, coll)
}

// writeCollectionPages lists the pages of the items that count in coll.
func (s *Server) writeCollectionPages(c echo.Context, coll *store.Collection) error {
	q := newQuery(c)
	pq, _ := pageQuery(q, true)
	if err := q.err(); err != nil {
		return err
	}
	items, err := s.store.CollectionItems(c.Request().Context(), coll.OID, coll.ID)
	if err != nil {
		return err
	}
	pq.OID = &coll.OID
	for _, it := range items {
		pq.CrawlIDs = append(pq.CrawlIDs, it.ID)
	}
	return s.writePageItems(c, pq)
}

// pagesPreflight answers the CORS preflight of the collection page
// routes.
func (s *Server) pagesPreflight(c echo.Context) error {
	return s.publicCollectionReplayPreflight(c)
}

// replayPages is what replay.json adds for an item's pages: the first
// ones in the default order, and the route to search them all.
func (s *Server) replayPages(c echo.Context, crawl *store.Crawl) ([]pageDocOut, string, error) {
	pages, _, err := s.store.ListPages(c.Request().Context(), store.PageQuery{OID: &crawl.OID,
		CrawlIDs: []string{crawl.ID}, NoCount: true, Paging: store.Paging{Page: 1, PageSize: initialPages}})
	if err != nil {
		return nil, "", err
	}
	query := s.origin(c) + "/api/orgs/" + crawl.OID.String() + "/crawls/" + crawl.ID + "/pagesSearch"
	return toPagesOut(pages), query, nil
}

// initialPages is how many pages replay.json carries.
const initialPages = 25
