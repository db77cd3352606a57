package store

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// genField is the generation counter of documents whose fields are
// recomputed from other documents (workflow stats, org bytesStored,
// collection counts).
const genField = "statsGen"

// recompute rewrites derived fields of document id in c from the current
// state of their sources, safely against concurrent recomputations (two
// crawls of a workflow ending at once, a delete during a finish) without
// transactions:
//
//  1. $inc the generation and read it;
//  2. compute the fields from the sources;
//  3. $set them only if the generation is unchanged.
//
// If step 3 finds a newer generation, a recomputation that started later
// (and so read sources at least as fresh) owns the write, and this one
// gives up. Every change to a source is followed by a recomputation, so the
// last one to start always writes a result that includes all changes.
//
// It returns ErrNotFound (the given notFound error) if the document is gone.
func recompute(ctx context.Context, c *mongo.Collection, id any, notFound error, compute func(ctx context.Context) (bson.M, error)) error {
	raw, err := c.FindOneAndUpdate(ctx, bson.M{"_id": id}, bson.M{"$inc": bson.M{genField: int64(1)}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Raw()
	if err != nil {
		return notFoundOr(err, notFound, "starting recomputation")
	}
	gen := raw.Lookup(genField)
	set, err := compute(ctx)
	if err != nil {
		return err
	}
	if _, err := c.UpdateOne(ctx, bson.M{"_id": id, genField: gen}, bson.M{"$set": set}); err != nil {
		return fmt.Errorf("writing recomputed fields: %w", err)
	}
	return nil
}

// sumRow is one group of a $group {_id, n: {$sum: 1}, size: {$sum: ...}}.
type sumRow struct {
	Key  any   `bson:"_id"`
	N    int64 `bson:"n"`
	Size int64 `bson:"size"`
}

// sumBy groups the documents matching match by key (nil: one group) and
// returns their count and the sum of sizeField per group.
func sumBy(ctx context.Context, c *mongo.Collection, match bson.M, key any, sizeField string) ([]sumRow, error) {
	pipeline := mongo.Pipeline{
		{{Key: "$match", Value: match}},
		{{Key: "$group", Value: bson.M{
			"_id":  key,
			"n":    bson.M{"$sum": 1},
			"size": bson.M{"$sum": "$" + sizeField},
		}}},
	}
	cur, err := c.Aggregate(ctx, pipeline)
	if err != nil {
		return nil, fmt.Errorf("aggregating %s: %w", sizeField, err)
	}
	var rows []sumRow
	if err := cur.All(ctx, &rows); err != nil {
		return nil, fmt.Errorf("reading %s sums: %w", sizeField, err)
	}
	return rows, nil
}
