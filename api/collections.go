package api

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// Collections (upstream-api-more.md §2), scoped to the route's org
// everywhere (upstream read them by id alone). Membership lives on the
// items; the store recounts a collection after every change.

// collectionParam loads the {coll_id} collection of the current org. A
// malformed id is a 422, as upstream types it a UUID.
func (s *Server) collectionParam(c echo.Context) (*store.Collection, error) {
	id, err := collectionID(c)
	if err != nil {
		return nil, err
	}
	return s.store.GetCollection(c.Request().Context(), currentOrg(c).ID, id)
}

func collectionID(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("coll_id"))
	if err != nil {
		return uuid.Nil, validationError{{Loc: []any{"path", "coll_id"}, Msg: "value is not a valid uuid", Type: "type_error.uuid"}}
	}
	return id, nil
}

func (s *Server) createCollection(c echo.Context) error {
	var in collectionIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	coll := toStoreCollection(&in, currentOrg(c).ID, s.now())
	if err := s.store.CreateCollection(ctx, coll, in.CrawlIDs...); err != nil {
		return conflictAsBadRequest(err)
	}
	if len(in.CrawlIDs) > 0 {
		s.notifyCollection(ctx, coll.OID, store.EventAddedToCollection, coll.ID, in.CrawlIDs)
	}
	return c.JSON(http.StatusOK, collectionAddedOut{Added: true, ID: coll.ID, Name: coll.Name})
}

// listCollections sorts only when asked; the direction (default 1) is
// checked only then, as upstream does.
func (s *Server) listCollections(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	f := store.CollectionFilter{Name: q.optStr("name"), NamePrefix: q.optStr("namePrefix"),
		SortBy: q.str("sortBy"), Paging: p.paging()}
	if f.SortBy != "" {
		f.SortDirection = q.sortDirection(1)
	}
	if err := q.err(); err != nil {
		return err
	}
	colls, total, err := s.store.ListCollections(c.Request().Context(), currentOrg(c).ID, f)
	if err != nil {
		return err
	}
	items := make([]collectionOut, len(colls))
	for i := range colls {
		items[i] = toCollectionOut(&colls[i], nil)
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

func (s *Server) collectionSearchValues(c echo.Context) error {
	names, err := s.store.CollectionNames(c.Request().Context(), currentOrg(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, collectionSearchOut{Names: nonNil(names)})
}

// allCollections is $all: each collection's name mapped to its files,
// the shape upstream intended (its handler always failed at ad9bca2).
func (s *Server) allCollections(c echo.Context) error {
	ctx, org := c.Request().Context(), currentOrg(c)
	colls, err := s.store.ListAllCollections(ctx, org.ID)
	if err != nil {
		return err
	}
	out := make(map[string][]resourceOut, len(colls))
	for i := range colls {
		if out[colls[i].Name], err = s.collectionResources(ctx, org, &colls[i]); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getCollection(c echo.Context) error {
	coll, err := s.collectionParam(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toCollectionOut(coll, nil))
}

func (s *Server) updateCollection(c echo.Context) error {
	id, err := collectionID(c)
	if err != nil {
		return err
	}
	var in collectionUpdateIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	upd, ok := toStoreCollectionUpdate(&in, s.now())
	if !ok {
		return badRequest("no_update_data")
	}
	if err := s.store.UpdateCollection(c.Request().Context(), currentOrg(c).ID, id, upd); err != nil {
		return conflictAsBadRequest(err)
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

func (s *Server) deleteCollection(c echo.Context) error {
	id, err := collectionID(c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteCollection(c.Request().Context(), currentOrg(c).ID, id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, successOut{Success: true})
}

func (s *Server) addToCollection(c echo.Context) error {
	return s.changeCollection(c, s.store.AddToCollection, store.EventAddedToCollection)
}

func (s *Server) removeFromCollection(c echo.Context) error {
	return s.changeCollection(c, s.store.RemoveFromCollection, store.EventRemovedFromCollection)
}

// notifyCollection stores the webhook notification of a membership
// change. The change is made either way, so a failure is only logged.
func (s *Server) notifyCollection(ctx context.Context, oid uuid.UUID, event string, coll uuid.UUID, items []string) {
	if s.webhooks == nil {
		return
	}
	if err := s.webhooks.CollectionChanged(ctx, oid, event, coll, items); err != nil {
		s.log.Error("storing "+event+" notification", "collection", coll, "err", err)
	}
}

// membersChange is the store's /add or /remove.
type membersChange func(ctx context.Context, oid, id uuid.UUID, itemIDs []string, now time.Time) (*store.Collection, error)

// changeCollection runs /add or /remove, stores its event's notification
// and answers with the recounted collection the change returns.
func (s *Server) changeCollection(c echo.Context, change membersChange, event string) error {
	id, err := collectionID(c)
	if err != nil {
		return err
	}
	var in collectionCrawlsIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	ctx, oid := c.Request().Context(), currentOrg(c).ID
	coll, err := change(ctx, oid, id, in.CrawlIDs, s.now())
	if err != nil {
		return err
	}
	s.notifyCollection(ctx, oid, event, id, in.CrawlIDs)
	return c.JSON(http.StatusOK, toCollectionOut(coll, nil))
}

// setItemCollections makes item a member of exactly the collections want
// (PATCH of a crawl or upload with collectionIds), as upstream does: one
// add or remove per changed collection, each with its notification.
// Every changed collection must exist, or nothing changes.
func (s *Server) setItemCollections(ctx context.Context, item *store.Crawl, want []uuid.UUID) error {
	var added, removed []uuid.UUID
	for _, id := range want {
		if !slices.Contains(item.CollectionIDs, id) && !slices.Contains(added, id) {
			added = append(added, id)
		}
	}
	for _, id := range item.CollectionIDs {
		if !slices.Contains(want, id) {
			removed = append(removed, id)
		}
	}
	if err := s.store.ChangeItemCollections(ctx, item.OID, item.ID, added, removed, s.now()); err != nil {
		return err
	}
	for _, id := range added {
		s.notifyCollection(ctx, item.OID, store.EventAddedToCollection, id, []string{item.ID})
	}
	for _, id := range removed {
		s.notifyCollection(ctx, item.OID, store.EventRemovedFromCollection, id, []string{item.ID})
	}
	return nil
}

// collectionResources are the files of the collection's successful
// members, with download links, in one list.
func (s *Server) collectionResources(ctx context.Context, org *store.Org, coll *store.Collection) ([]resourceOut, error) {
	items, err := s.store.CollectionItems(ctx, org.ID, coll.ID)
	if err != nil {
		return nil, err
	}
	out := []resourceOut{}
	for i := range items {
		out = append(out, s.resources(ctx, org, &items[i])...)
	}
	return out, nil
}

func (s *Server) collectionReplay(c echo.Context) error {
	coll, err := s.collectionParam(c)
	if err != nil {
		return err
	}
	return s.writeCollectionReplay(c, currentOrg(c), coll)
}

func (s *Server) writeCollectionReplay(c echo.Context, org *store.Org, coll *store.Collection) error {
	resources, err := s.collectionResources(c.Request().Context(), org, coll)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toCollectionOut(coll, resources))
}

// publicCollectionReplay is replay.json of a public collection, for
// anyone (an embedded replay page), with open CORS headers.
func (s *Server) publicCollectionReplay(c echo.Context) error {
	setPublicCORS(c)
	ctx := c.Request().Context()
	oid, err := uuid.Parse(c.Param("oid"))
	if err != nil {
		return notFound("org_not_found")
	}
	org, err := s.store.GetOrg(ctx, oid)
	if err != nil {
		return err
	}
	id, err := collectionID(c)
	if err != nil {
		return err
	}
	coll, err := s.store.GetCollection(ctx, org.ID, id)
	if err != nil {
		return err
	}
	if !coll.IsPublic {
		return notFound("collection_not_found")
	}
	return s.writeCollectionReplay(c, org, coll)
}

// publicCollectionReplayPreflight answers the CORS preflight of the
// public replay.json.
func (s *Server) publicCollectionReplayPreflight(c echo.Context) error {
	setPublicCORS(c)
	c.Response().Header().Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	return c.JSON(http.StatusOK, empty{})
}

func setPublicCORS(c echo.Context) {
	h := c.Response().Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Headers", "*")
}
