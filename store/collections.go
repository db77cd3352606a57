package store

import (
	"context"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
)

var errCollectionNotFound = NotFound("collection_not_found")

// RecomputeCollection recounts collection id from its successful member
// crawls: crawlCount, pageCount (sum of stats.done), totalSize and the
// distinct tags.
//
// Errors: NotFound("collection_not_found").
func (m *Mongo) RecomputeCollection(ctx context.Context, id uuid.UUID) error {
	return recompute(ctx, m.coll(collCollections), id, errCollectionNotFound, func(ctx context.Context) (any, error) {
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
