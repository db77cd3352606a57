package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
)

var errCollectionNotFound = NotFound("collection_not_found")

// CreateCollection inserts coll with zero counts.
//
// Errors: Conflict("collection_name_taken") if the org already has a
// collection of that name (or the id is taken).
func (m *Mongo) CreateCollection(ctx context.Context, coll *Collection) error {
	if coll.Tags == nil {
		coll.Tags = []string{}
	}
	if _, err := m.coll(collCollections).InsertOne(ctx, coll); err != nil {
		if isDuplicate(err) {
			return Conflict("collection_name_taken")
		}
		return fmt.Errorf("inserting collection: %w", err)
	}
	return nil
}

// GetCollection returns collection id of org oid.
//
// Errors: NotFound("collection_not_found").
func (m *Mongo) GetCollection(ctx context.Context, oid, id uuid.UUID) (*Collection, error) {
	var c Collection
	if err := m.coll(collCollections).FindOne(ctx, bson.M{"_id": id, "oid": oid}).Decode(&c); err != nil {
		return nil, notFoundOr(err, errCollectionNotFound, "finding collection")
	}
	return &c, nil
}

// RecomputeCollection recounts collection id from its successful member
// crawls: crawlCount, pageCount (sum of stats.done), totalSize and the
// distinct tags.
//
// Errors: NotFound("collection_not_found").
func (m *Mongo) RecomputeCollection(ctx context.Context, id uuid.UUID) error {
	return recompute(ctx, m.coll(collCollections), id, errCollectionNotFound, func(ctx context.Context) (bson.M, error) {
		match := bson.M{"collectionIds": id, "state": bson.M{"$in": SuccessfulStates}}
		crawls := m.coll(collCrawls)
		n, err := countDocs(ctx, crawls, match)
		if err != nil {
			return nil, err
		}
		size, err := sumField(ctx, crawls, match, "fileSize")
		if err != nil {
			return nil, err
		}
		pages, err := sumField(ctx, crawls, match, "stats.done")
		if err != nil {
			return nil, err
		}
		tags, err := distinctStrings(ctx, crawls, match, "tags")
		if err != nil {
			return nil, err
		}
		set := bson.M{"crawlCount": n, "pageCount": pages, "totalSize": size, "tags": tags}
		return set, nil
	})
}
