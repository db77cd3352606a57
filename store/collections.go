package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Collections keep their membership on the items (crawls and uploads
// carry collectionIds); the collection document only caches counts, which
// RecomputeCollection derives from the members after every change.

var errCollectionNotFound = NotFound("collection_not_found")

// CollectionFilter selects collections for ListCollections.
type CollectionFilter struct {
	// Name matches exactly; NamePrefix, used when Name is nil, matches the
	// start of the name regardless of case.
	Name       *string
	NamePrefix *string
	// SortBy is one of modified, name, description, totalSize; "" keeps
	// natural order. Names and descriptions sort in English collation
	// order (upstream sorts with MongoDB's "en" collation).
	SortBy string
	// SortDirection is 1 or -1 (0 means 1).
	SortDirection int
	Paging
}

// CollectionUpdate lists the fields of a collection to change.
type CollectionUpdate struct {
	Name        Maybe[string]
	Description Maybe[*string]
	IsPublic    Maybe[bool]
	Modified    time.Time
}

// collectionDoc is a collection as stored: the sort keys of its name and
// description ride along, because FerretDB v1 has no collations.
type collectionDoc struct {
	Collection     `bson:",inline"`
	NameKey        string  `bson:"nameKey"`
	DescriptionKey *string `bson:"descriptionKey"`
}

// collectionSorts maps the wire sort keys to stored fields.
var collectionSorts = map[string]string{
	"modified":    "modified",
	"name":        "nameKey",
	"description": "descriptionKey",
	"totalSize":   "totalSize",
}

// CreateCollection inserts c (counts as given, normally zero) and adds
// the items (crawls or uploads of the org) to it, checking them all first.
//
// Errors: NotFound("Crawl not found: <id>") for the first id that is not
// an item of the org (nothing is created); Conflict("collection_name_taken").
func (m *Mongo) CreateCollection(ctx context.Context, c *Collection, itemIDs ...string) error {
	items, err := m.orgItems(ctx, c.OID, itemIDs, false)
	if err != nil {
		return err
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	doc := collectionDoc{Collection: *c, NameKey: sortKey(c.Name), DescriptionKey: sortKeyPtr(c.Description)}
	if _, err := m.coll(collCollections).InsertOne(ctx, doc); err != nil {
		if isDuplicate(err) {
			return Conflict("collection_name_taken")
		}
		return fmt.Errorf("inserting collection: %w", err)
	}
	if len(items) == 0 {
		return nil
	}
	return m.setMembership(ctx, c.ID, items, "$addToSet")
}

// GetCollection returns collection id of org oid.
//
// Errors: NotFound("collection_not_found"), also for another org's id.
func (m *Mongo) GetCollection(ctx context.Context, oid, id uuid.UUID) (*Collection, error) {
	var c Collection
	if err := m.coll(collCollections).FindOne(ctx, bson.M{"_id": id, "oid": oid}).Decode(&c); err != nil {
		return nil, notFoundOr(err, errCollectionNotFound, "finding collection")
	}
	return &c, nil
}

// ListCollections returns one page of the org's collections matching f
// and their total.
//
// Errors: Invalid("invalid_sort_by"), Invalid("invalid_sort_direction").
func (m *Mongo) ListCollections(ctx context.Context, oid uuid.UUID, f CollectionFilter) ([]Collection, int64, error) {
	filter := bson.M{"oid": oid}
	switch {
	case f.Name != nil:
		filter["name"] = *f.Name
	case f.NamePrefix != nil:
		// MongoDB refuses a pattern holding a NUL byte; \x00 matches one.
		prefix := strings.ReplaceAll(regexp.QuoteMeta(*f.NamePrefix), "\x00", `\x00`)
		filter["name"] = bson.M{"$regex": "^" + prefix, "$options": "i"}
	}
	opts := options.Find()
	if f.SortBy != "" {
		field, ok := collectionSorts[f.SortBy]
		if !ok {
			return nil, 0, Invalid("invalid_sort_by")
		}
		dir := f.SortDirection
		if dir == 0 {
			dir = 1
		}
		if dir != 1 && dir != -1 {
			return nil, 0, Invalid("invalid_sort_direction")
		}
		opts.SetSort(bson.D{{Key: field, Value: dir}, {Key: "_id", Value: dir}})
	}
	f.apply(opts)
	return findPage[Collection](ctx, m.coll(collCollections), filter, opts, "collections")
}

// CollectionNames returns the distinct non-empty names of the org's
// collections, sorted.
//
// Errors: none of the store kinds.
func (m *Mongo) CollectionNames(ctx context.Context, oid uuid.UUID) ([]string, error) {
	type row struct {
		Name string `bson:"name"`
	}
	opts := options.Find().SetProjection(bson.M{"name": 1})
	rows, err := findAll[row](ctx, m.coll(collCollections), bson.M{"oid": oid}, opts, "collection names")
	if err != nil {
		return nil, err
	}
	var names distinctSet
	for _, r := range rows {
		names.add(r.Name)
	}
	return names.sorted(), nil
}

// CollectionRefs returns those of ids that are collections of org oid,
// in natural order (for the collections: [{id, name}] of crawl outputs).
//
// Errors: none of the store kinds.
func (m *Mongo) CollectionRefs(ctx context.Context, oid uuid.UUID, ids []uuid.UUID) ([]Collection, error) {
	if len(ids) == 0 {
		return []Collection{}, nil
	}
	filter := bson.M{"_id": bson.M{"$in": ids}, "oid": oid}
	opts := options.Find().SetProjection(bson.M{"name": 1, "oid": 1})
	return findAll[Collection](ctx, m.coll(collCollections), filter, opts, "collections")
}

// CheckCollections checks, with one read, that each of ids is a
// collection of org oid.
//
// Errors: NotFound("collection_not_found").
func (m *Mongo) CheckCollections(ctx context.Context, oid uuid.UUID, ids []uuid.UUID) error {
	found, err := m.CollectionRefs(ctx, oid, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !slices.ContainsFunc(found, func(c Collection) bool { return c.ID == id }) {
			return errCollectionNotFound
		}
	}
	return nil
}

// ListAllCollections returns every collection of the org, by name.
//
// Errors: none of the store kinds.
func (m *Mongo) ListAllCollections(ctx context.Context, oid uuid.UUID) ([]Collection, error) {
	opts := options.Find().SetSort(bson.D{{Key: "nameKey", Value: 1}, {Key: "_id", Value: 1}})
	return findAll[Collection](ctx, m.coll(collCollections), bson.M{"oid": oid}, opts, "collections")
}

// UpdateCollection changes the fields set in upd and its modified time.
//
// Errors: NotFound("collection_not_found");
// Conflict("collection_name_taken").
func (m *Mongo) UpdateCollection(ctx context.Context, oid, id uuid.UUID, upd CollectionUpdate) error {
	set := bson.M{"modified": upd.Modified}
	if upd.Name.Set {
		set["name"] = upd.Name.Value
		set["nameKey"] = sortKey(upd.Name.Value)
	}
	if upd.Description.Set {
		set["description"] = upd.Description.Value
		set["descriptionKey"] = sortKeyPtr(upd.Description.Value)
	}
	setIf(set, "isPublic", upd.IsPublic)
	res, err := m.coll(collCollections).UpdateOne(ctx, bson.M{"_id": id, "oid": oid}, bson.M{"$set": set})
	if err != nil {
		if isDuplicate(err) {
			return Conflict("collection_name_taken")
		}
		return fmt.Errorf("updating collection: %w", err)
	}
	if res.MatchedCount == 0 {
		return errCollectionNotFound
	}
	return nil
}

// DeleteCollection removes collection id from its items and from the
// org's workflows that add crawls to it, then deletes it. A crash in
// between leaves a collection with fewer members, which a retry deletes.
//
// Errors: NotFound("collection_not_found").
func (m *Mongo) DeleteCollection(ctx context.Context, oid, id uuid.UUID) error {
	if _, err := m.GetCollection(ctx, oid, id); err != nil {
		return err
	}
	if _, err := m.coll(collCrawls).UpdateMany(ctx, bson.M{"collectionIds": id},
		bson.M{"$pull": bson.M{"collectionIds": id}}); err != nil {
		return fmt.Errorf("removing collection from its items: %w", err)
	}
	if _, err := m.coll(collConfigs).UpdateMany(ctx, bson.M{"oid": oid, "autoAddCollections": id},
		bson.M{"$pull": bson.M{"autoAddCollections": id}}); err != nil {
		return fmt.Errorf("removing collection from workflows: %w", err)
	}
	res, err := m.coll(collCollections).DeleteOne(ctx, bson.M{"_id": id, "oid": oid})
	if err != nil {
		return fmt.Errorf("deleting collection: %w", err)
	}
	if res.DeletedCount == 0 {
		return errCollectionNotFound
	}
	return nil
}

// AddToCollection adds the items (crawls or uploads of org oid, in any
// state) to collection id, sets its modified time and recounts it, and
// returns it as it is then. Every id is checked before anything changes;
// adding a member again is a no-op.
//
// Errors: NotFound("collection_not_found"); NotFound("Crawl not found:
// <id>") for the first id that is not an item of the org.
func (m *Mongo) AddToCollection(ctx context.Context, oid, id uuid.UUID, itemIDs []string, now time.Time) (*Collection, error) {
	return m.changeMembers(ctx, oid, id, itemIDs, now, "$addToSet")
}

// RemoveFromCollection removes the items from collection id (ids that are
// not members, or not items of the org, are skipped), sets its modified
// time and recounts it, and returns it as it is then.
//
// Errors: NotFound("collection_not_found").
func (m *Mongo) RemoveFromCollection(ctx context.Context, oid, id uuid.UUID, itemIDs []string, now time.Time) (*Collection, error) {
	return m.changeMembers(ctx, oid, id, itemIDs, now, "$pull")
}

func (m *Mongo) changeMembers(ctx context.Context, oid, id uuid.UUID, itemIDs []string, now time.Time, op string) (*Collection, error) {
	if err := m.CheckCollections(ctx, oid, []uuid.UUID{id}); err != nil {
		return nil, err
	}
	items, err := m.orgItems(ctx, oid, itemIDs, op == "$pull")
	if err != nil {
		return nil, err
	}
	return m.applyMembers(ctx, oid, id, items, now, op)
}

// ChangeItemCollections makes item (a crawl or upload of org oid) a
// member of the collections added and no longer of those removed, as one
// /add or /remove of it per collection would, except that every changed
// collection is checked first, with one read: a missing one (or another
// org's) changes nothing.
//
// Errors: NotFound("collection_not_found"); NotFound("Crawl not found:
// <item>") if there is something to add and item is not the org's.
func (m *Mongo) ChangeItemCollections(ctx context.Context, oid uuid.UUID, item string, added, removed []uuid.UUID, now time.Time) error {
	if err := m.CheckCollections(ctx, oid, slices.Concat(added, removed)); err != nil {
		return err
	}
	items, err := m.orgItems(ctx, oid, []string{item}, len(added) == 0)
	if err != nil {
		return err
	}
	for _, ch := range []struct {
		ids []uuid.UUID
		op  string
	}{{added, "$addToSet"}, {removed, "$pull"}} {
		for _, id := range ch.ids {
			if _, err := m.applyMembers(ctx, oid, id, items, now, ch.op); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyMembers applies op to the checked items' membership of checked
// collection id. The modified time is set last, by the write that also
// returns the recounted collection, so the caller needs no second read.
func (m *Mongo) applyMembers(ctx context.Context, oid, id uuid.UUID, items []string, now time.Time, op string) (*Collection, error) {
	if err := m.setMembership(ctx, id, items, op); err != nil {
		return nil, err
	}
	var c Collection
	err := m.coll(collCollections).FindOneAndUpdate(ctx, bson.M{"_id": id, "oid": oid}, bson.M{"$set": bson.M{"modified": now}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&c)
	if err != nil {
		return nil, notFoundOr(err, errCollectionNotFound, "updating collection")
	}
	return &c, nil
}

// orgItems returns those of ids that are crawls or uploads of org oid.
// Unless skipMissing, the first other id is an error,
// NotFound("Crawl not found: <id>").
func (m *Mongo) orgItems(ctx context.Context, oid uuid.UUID, ids []string, skipMissing bool) ([]string, error) {
	var mine []string
	for _, id := range ids {
		switch err := m.checkItemOrg(ctx, oid, id); {
		case err == nil:
			mine = append(mine, id)
		case errors.Is(err, ErrNotFound) && skipMissing:
		case errors.Is(err, ErrNotFound):
			return nil, NotFound("Crawl not found: " + id)
		default:
			return nil, err
		}
	}
	return mine, nil
}

// setMembership applies op ($addToSet or $pull) of collection id to each
// item's collectionIds and recounts the collection. Items are written by
// _id alone, which FerretDB answers from its index (see condFilter).
func (m *Mongo) setMembership(ctx context.Context, id uuid.UUID, items []string, op string) error {
	for _, item := range items {
		if _, err := m.coll(collCrawls).UpdateOne(ctx, bson.M{"_id": item},
			bson.M{op: bson.M{"collectionIds": id}}); err != nil {
			return fmt.Errorf("changing collections of %s: %w", item, err)
		}
	}
	return m.RecomputeCollection(ctx, id)
}

// checkItemOrg checks that crawl or upload id belongs to org oid.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) checkItemOrg(ctx context.Context, oid uuid.UUID, id string) error {
	var cur struct {
		OID uuid.UUID `bson:"oid"`
	}
	read := options.FindOne().SetProjection(bson.M{"oid": 1})
	if err := m.coll(collCrawls).FindOne(ctx, bson.M{"_id": id}, read).Decode(&cur); err != nil {
		return notFoundOr(err, errCrawlNotFound, "finding crawl")
	}
	if cur.OID != oid {
		return errCrawlNotFound
	}
	return nil
}

// CollectionItems returns the members of collection id that count in it
// (successful crawls and uploads of org oid), with their files, oldest
// first: what replay.json and the download are made of.
//
// Errors: none of the store kinds.
func (m *Mongo) CollectionItems(ctx context.Context, oid, id uuid.UUID) ([]Crawl, error) {
	filter := bson.M{"collectionIds": id, "oid": oid, "state": bson.M{"$in": SuccessfulStates}}
	opts := options.Find().SetProjection(bson.M{"errors": 0, "config": 0, "podStatus": 0}).
		SetSort(bson.D{{Key: "started", Value: 1}, {Key: "_id", Value: 1}})
	return findAll[Crawl](ctx, m.coll(collCrawls), filter, opts, "collection items")
}

// RecomputeCollection recounts collection id from its successful members
// (crawls and uploads): crawlCount, pageCount (sum of stats.done),
// totalSize and the tags, most frequent first (ties in the order the
// members first use them, members oldest first).
//
// Errors: NotFound("collection_not_found").
func (m *Mongo) RecomputeCollection(ctx context.Context, id uuid.UUID) error {
	return recompute(ctx, m.coll(collCollections), id, errCollectionNotFound, func(ctx context.Context) (any, error) {
		type row struct {
			FileSize int64       `bson:"fileSize"`
			Stats    *CrawlStats `bson:"stats"`
			Tags     []string    `bson:"tags"`
		}
		match := bson.M{"collectionIds": id, "state": bson.M{"$in": SuccessfulStates}}
		opts := options.Find().SetProjection(bson.M{"fileSize": 1, "stats": 1, "tags": 1}).
			SetSort(bson.D{{Key: "started", Value: 1}, {Key: "_id", Value: 1}})
		rows, err := findAll[row](ctx, m.coll(collCrawls), match, opts, "collection members")
		if err != nil {
			return nil, err
		}
		var size, pages int64
		tags := make([][]string, 0, len(rows))
		for _, r := range rows {
			size += r.FileSize
			if r.Stats != nil {
				pages += r.Stats.Done
			}
			tags = append(tags, r.Tags)
		}
		return bson.M{"crawlCount": len(rows), "pageCount": pages, "totalSize": size, "tags": tagsByFrequency(tags)}, nil
	})
}

// tagsByFrequency returns the distinct tags of the members, most used
// first; ties keep the order in which the tags first appear.
func tagsByFrequency(members [][]string) []string {
	count := map[string]int{}
	order := []string{}
	for _, tags := range members {
		for _, t := range tags {
			if count[t] == 0 {
				order = append(order, t)
			}
			count[t]++
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return count[b] - count[a] })
	return order
}

// recomputeCollections recounts each of ids; collections deleted
// meanwhile are skipped.
func (m *Mongo) recomputeCollections(ctx context.Context, ids []uuid.UUID) error {
	for _, id := range ids {
		if err := m.RecomputeCollection(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}
