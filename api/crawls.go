package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// liveStatsTimeout is the budget of the Redis reads that freshen running
// crawls' stats in a response (Server.liveStatsBudget); past it the
// stored stats are shown.
const liveStatsTimeout = time.Second

// crawlParam loads the {crawl_id} crawl of the current org; other orgs'
// ids are not found. Only type "crawl" unless anyType (all-crawls).
func (s *Server) crawlParam(c echo.Context, anyType bool, notFoundDetail string) (*store.Crawl, error) {
	id := c.Param("crawl_id")
	crawl, err := s.store.GetCrawl(c.Request().Context(), currentOrg(c).ID, id)
	if err != nil {
		return nil, notFoundAs(err, notFoundDetail)
	}
	if !anyType && !isCrawlItem(crawl) {
		return nil, notFound(notFoundDetail)
	}
	return crawl, nil
}

func crawlNotFoundID(id string) string { return "Crawl not found: " + id }

// liveStats reads the Redis stats of the running crawls among crawls,
// concurrently, and returns what it has within its budget: a crawl
// whose Redis does not answer by then keeps its stored stats, and the
// request never waits longer for it.
func (s *Server) liveStats(ctx context.Context, crawls []store.Crawl) map[string]*store.CrawlStats {
	ctx, cancel := context.WithTimeout(ctx, s.liveStatsBudget)
	defer cancel()
	var (
		mu      sync.Mutex
		pending int
		out     = map[string]*store.CrawlStats{}
		done    = make(chan struct{}, len(crawls))
	)
	for _, c := range crawls {
		if !store.IsRunning(c.State) {
			continue
		}
		pending++
		go func() {
			defer func() { done <- struct{}{} }()
			st, err := s.redis.stats(ctx, c.ID)
			if err != nil {
				s.log.Debug("live crawl stats unavailable", "crawl", c.ID, "err", err)
				return
			}
			mu.Lock()
			out[c.ID] = st
			mu.Unlock()
		}()
	}
wait:
	for ; pending > 0; pending-- {
		select {
		case <-done:
		case <-ctx.Done():
			break wait // stragglers end on the same deadline; their results are dropped
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(out)
}

// crawlRefs is what crawls are shown with besides their documents.
type crawlRefs struct {
	users map[uuid.UUID]store.User
	// live holds the Redis stats of the running crawls that answered.
	live map[string]*store.CrawlStats
	// seeds holds the current seeds of the crawls' workflows: upstream
	// shows those, not the crawl's copy, in seedCount (and, in
	// replay.json, firstSeed), so both follow edits of the workflow.
	seeds map[uuid.UUID][]store.Seed
	// profiles names the crawls' browser profiles (profileName).
	profiles map[profileKey]string
}

// crawlRefsOf reads the refs of crawls.
func (s *Server) crawlRefsOf(ctx context.Context, crawls []store.Crawl) (crawlRefs, error) {
	users, err := s.store.ListUsersByIDs(ctx, crawlUserIDs(crawls...))
	if err != nil {
		return crawlRefs{}, err
	}
	seeds, err := s.store.CrawlConfigSeeds(ctx, crawlConfigIDs(crawls...))
	if err != nil {
		return crawlRefs{}, err
	}
	var profileIDs []profileKey
	for i := range crawls {
		if id := crawls[i].ProfileID; id != nil {
			profileIDs = append(profileIDs, profileKey{crawls[i].OID, *id})
		}
	}
	profiles, err := s.profileNames(ctx, profileIDs)
	if err != nil {
		return crawlRefs{}, err
	}
	return crawlRefs{users: users, live: s.liveStats(ctx, crawls), seeds: seeds, profiles: profiles}, nil
}

// crawlsOut converts crawls in their list-item form.
func (s *Server) crawlsOut(ctx context.Context, crawls []store.Crawl) ([]crawlOut, error) {
	refs, err := s.crawlRefsOf(ctx, crawls)
	if err != nil {
		return nil, err
	}
	out := make([]crawlOut, len(crawls))
	for i := range crawls {
		out[i] = toCrawlOut(&crawls[i], refs)
	}
	return out, nil
}

// crawlWithResources converts one crawl (or upload) of org for
// replay.json: its files with download links and its collections.
func (s *Server) crawlWithResources(ctx context.Context, org *store.Org, crawl *store.Crawl) (crawlOutWithResources, error) {
	refs, err := s.crawlRefsOf(ctx, []store.Crawl{*crawl})
	if err != nil {
		return crawlOutWithResources{}, err
	}
	colls, err := s.store.CollectionRefs(ctx, crawl.OID, crawl.CollectionIDs)
	if err != nil {
		return crawlOutWithResources{}, err
	}
	return toCrawlOutWithResources(crawl, refs, s.resources(ctx, org, crawl), colls), nil
}

// profileKey is profile id as a crawl or workflow of org oid names it.
type profileKey struct{ oid, id uuid.UUID }

// profileNames resolves the profiles of crawls or workflows, each among
// the profiles of its own org only: one read per org (there is more than
// one only in the superuser's list of every org's crawls).
func (s *Server) profileNames(ctx context.Context, keys []profileKey) (map[profileKey]string, error) {
	byOrg := map[uuid.UUID][]uuid.UUID{}
	for _, k := range keys {
		if !slices.Contains(byOrg[k.oid], k.id) {
			byOrg[k.oid] = append(byOrg[k.oid], k.id)
		}
	}
	out := map[profileKey]string{}
	for oid, ids := range byOrg {
		names, err := s.store.ProfileNames(ctx, oid, ids)
		if err != nil {
			return nil, err
		}
		for id, name := range names {
			out[profileKey{oid, id}] = name
		}
	}
	return out, nil
}

// nameOf is the name of profile id of org oid, or nil (null) when there
// is none or it is gone.
func nameOf(names map[profileKey]string, oid uuid.UUID, id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	if name, ok := names[profileKey{oid, *id}]; ok {
		return &name
	}
	return nil
}

// crawlFilter reads the list filters shared by the crawl lists.
func crawlFilter(q *query, p page) store.CrawlFilter {
	f := store.CrawlFilter{
		UserID: q.uuid("userid"), CID: q.uuid("cid"), FirstSeed: q.optStr("firstSeed"),
		Name: q.optStr("name"), Description: q.optStr("description"),
		CollectionID: q.uuid("collectionId"), SortBy: q.str("sortBy"),
		SortDirection: q.sortDirection(-1), Paging: p.paging(),
	}
	// Unknown states are dropped, as upstream does.
	for _, st := range strings.Split(q.str("state"), ",") {
		if slices.Contains(store.AllStates, st) {
			f.States = append(f.States, st)
		}
	}
	return f
}

// listCrawlsWith runs a crawl list and writes the page.
func (s *Server) listCrawlsWith(c echo.Context, oid uuid.UUID, f store.CrawlFilter, p page) error {
	ctx := c.Request().Context()
	crawls, total, err := s.store.ListCrawls(ctx, oid, f)
	if err != nil {
		return err
	}
	items, err := s.crawlsOut(ctx, crawls)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

func (s *Server) listCrawls(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	f := crawlFilter(q, p)
	if err := q.err(); err != nil {
		return err
	}
	return s.listCrawlsWith(c, currentOrg(c).ID, f, p)
}

// listAllOrgsCrawls is the superuser's view of every org's crawls,
// running ones only unless runningOnly is false.
func (s *Server) listAllOrgsCrawls(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	f := crawlFilter(q, p)
	runningOnly := q.bool("runningOnly")
	if err := q.err(); err != nil {
		return err
	}
	f.AllOrgs = true
	if (runningOnly == nil || *runningOnly) && len(f.States) == 0 {
		f.States = store.ActiveStates
	}
	return s.listCrawlsWith(c, uuid.Nil, f, p)
}

func (s *Server) getCrawl(c echo.Context) error {
	crawl, err := s.crawlParam(c, false, detailCrawlNotFound)
	if err != nil {
		return err
	}
	return s.writeCrawl(c, crawl)
}

// writeCrawl answers with one crawl in its list-item form.
func (s *Server) writeCrawl(c echo.Context, crawl *store.Crawl) error {
	out, err := s.crawlsOut(c.Request().Context(), []store.Crawl{*crawl})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out[0])
}

// anyCrawl loads a crawl of any org for the superuser routes.
func (s *Server) anyCrawl(c echo.Context) (*store.Crawl, error) {
	id := c.Param("crawl_id")
	crawl, err := s.store.GetCrawlByID(c.Request().Context(), id)
	if err != nil {
		return nil, notFoundAs(err, crawlNotFoundID(id))
	}
	return crawl, nil
}

func (s *Server) getAnyCrawl(c echo.Context) error {
	crawl, err := s.anyCrawl(c)
	if err != nil {
		return err
	}
	return s.writeCrawl(c, crawl)
}

func (s *Server) anyCrawlReplay(c echo.Context) error {
	crawl, err := s.anyCrawl(c)
	if err != nil {
		return err
	}
	return s.writeAnyReplay(c, crawl)
}

// writeAnyReplay is replay.json of an item of any org (superuser routes).
func (s *Server) writeAnyReplay(c echo.Context, crawl *store.Crawl) error {
	org, err := s.store.GetOrg(c.Request().Context(), crawl.OID)
	if err != nil {
		return notFoundAs(err, crawlNotFoundID(crawl.ID))
	}
	return s.writeReplay(c, org, crawl)
}

func (s *Server) writeReplay(c echo.Context, org *store.Org, crawl *store.Crawl) error {
	out, err := s.crawlWithResources(c.Request().Context(), org, crawl)
	if err != nil {
		return err
	}
	pages, query, err := s.replayPages(c, crawl)
	if err != nil {
		return err
	}
	nameResources(pages, crawl.Files)
	return c.JSON(http.StatusOK, replayOut{crawlOutWithResources: out, InitialPages: pages, PagesQueryURL: query})
}

// nameResources makes each page's filename the name of its WACZ among
// files, the name replay.json's resources carry: ReplayWeb.page loads a
// page's WACZ by that name, while crawlers name the file alone and
// resources carry its stored path.
func nameResources(pages []pageDocOut, files []store.CrawlFile) {
	byBase := make(map[string]string, len(files))
	for _, f := range files {
		byBase[path.Base(f.Filename)] = f.Filename
	}
	for i, p := range pages {
		if p.Filename == nil {
			continue
		}
		if name, ok := byBase[path.Base(*p.Filename)]; ok {
			pages[i].Filename = &name
		}
	}
}

func (s *Server) crawlReplay(c echo.Context) error {
	crawl, err := s.crawlParam(c, false, crawlNotFoundID(c.Param("crawl_id")))
	if err != nil {
		return err
	}
	return s.writeReplay(c, currentOrg(c), crawl)
}

// updateCrawl edits a crawl's metadata; updateAnyCrawl is the all-crawls
// form, which reaches uploads too.
func (s *Server) updateCrawl(c echo.Context) error {
	return s.updateItem(c, func(c echo.Context) (*store.Crawl, error) { return s.crawlParam(c, false, detailCrawlNotFound) })
}

func (s *Server) updateAnyCrawl(c echo.Context) error {
	return s.updateItem(c, func(c echo.Context) (*store.Crawl, error) { return s.crawlParam(c, true, detailCrawlNotFound) })
}

// updateItem edits the metadata and collections of the item load finds.
func (s *Server) updateItem(c echo.Context, load func(echo.Context) (*store.Crawl, error)) error {
	crawl, err := load(c)
	if err != nil {
		return err
	}
	var in crawlUpdateIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if in.CollectionIDs.given() {
		if err := s.setItemCollections(ctx, crawl, parseUUIDs(in.CollectionIDs.Value)); err != nil {
			return err
		}
	}
	upd, ok := toStoreCrawlUpdate(&in)
	if !ok && in.CollectionIDs.Set {
		return c.JSON(http.StatusOK, updatedOut{Updated: true})
	}
	if err := s.store.UpdateCrawl(ctx, crawl.OID, crawl.ID, upd); err != nil {
		return notFoundAs(err, detailCrawlNotFound)
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

func (s *Server) deleteCrawls(c echo.Context) error {
	return s.deleteItems(c, isCrawlItem, detailCrawlNotFound)
}

func (s *Server) deleteAllCrawls(c echo.Context) error {
	return s.deleteItems(c, func(*store.Crawl) bool { return true }, detailCrawlNotFound)
}

// isCrawlItem tells crawls (also those stored before items had a type)
// from uploads.
func isCrawlItem(c *store.Crawl) bool { return c.Type == store.TypeCrawl || c.Type == "" }

// deleteItems deletes the items (of the kind keep accepts) the caller
// started (owners: any), canceling crawls still running first, their
// files, then their documents, and reports how many went; noneDeleted is
// the detail when none was left to delete.
func (s *Server) deleteItems(c echo.Context, keep func(*store.Crawl) bool, noneDeleted string) error {
	var in deleteCrawlsIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	var v validator
	if in.CrawlIDs == nil {
		v.missing("body", "crawl_ids")
	}
	v.maxItems(len(in.CrawlIDs), maxIDList, "body", "crawl_ids")
	if err := v.err(); err != nil {
		return err
	}
	ctx, org, user := c.Request().Context(), currentOrg(c), currentUser(c)
	ids := slices.Compact(slices.Sorted(slices.Values(in.CrawlIDs)))
	crawls := make([]*store.Crawl, 0, len(ids))
	for _, id := range ids {
		crawl, err := s.store.GetCrawl(ctx, org.ID, id)
		if err != nil {
			return notFoundAs(err, crawlNotFoundID(id))
		}
		if !keep(crawl) {
			return notFound(crawlNotFoundID(id))
		}
		if crawl.UserID != user.ID && currentRole(c) < store.RoleOwner {
			return forbidden(detailNotAllowed)
		}
		if store.IsActive(crawl.State) {
			if err := s.cancel(ctx, crawl); err != nil {
				return &apiError{status: http.StatusBadRequest, detail: "Error Stopping Crawl", cause: err}
			}
		}
		crawls = append(crawls, crawl)
	}
	// Files first: if storage fails, the documents stay and a retry
	// finishes; no crawl disappears while its files remain.
	if err := s.deleteFiles(ctx, org, crawls); err != nil {
		return err
	}
	res, err := s.store.DeleteCrawls(ctx, org.ID, ids)
	if err != nil {
		return notFoundAs(err, noneDeleted)
	}
	return c.JSON(http.StatusOK, deletedOut{Deleted: res.Deleted, StorageQuotaReached: s.storageQuotaReached(ctx, org)})
}

// crawlErrors pages through the crawl's error lines, which the operator
// copies from the crawl's Redis into MongoDB while it runs.
func (s *Server) crawlErrors(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	if err := q.err(); err != nil {
		return err
	}
	crawl, err := s.crawlParam(c, false, detailCrawlNotFound)
	if err != nil {
		return err
	}
	lines, total, err := s.store.ListCrawlErrors(c.Request().Context(), crawl.ID, p.paging())
	if err != nil {
		return err
	}
	items := make([]map[string]any, 0, len(lines))
	for _, line := range lines {
		var obj map[string]any
		if json.Unmarshal([]byte(line), &obj) != nil {
			obj = map[string]any{"message": line}
		}
		items = append(items, obj)
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

// crawlAccess lets nginx auth_request check that the caller may watch
// the crawl.
func (s *Server) crawlAccess(c echo.Context) error {
	if _, err := s.crawlParam(c, false, detailCrawlNotFound); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, empty{})
}
