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
//  2. compute the fields from the sources (a document: bson.M or a struct);
//  3. $set them only if the generation is unchanged.
//
// If step 3 finds a newer generation, a recomputation that started later
// (and so read sources at least as fresh) owns the write, and this one
// gives up. Every change to a source is followed by a recomputation, so the
// last one to start always writes a result that includes all changes.
//
// It returns ErrNotFound (the given notFound error) if the document is gone.
func recompute(ctx context.Context, c *mongo.Collection, id any, notFound error, compute func(ctx context.Context) (any, error)) error {
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

// sumField returns the sum of field over the documents matching match.
//
// One accumulator per $group on purpose: FerretDB v1 computes only the
// first accumulator of a $group and silently returns 0 for the others
// (see TestConformance/QuirkSecondAccumulator). Counts use CountDocuments.
func sumField(ctx context.Context, c *mongo.Collection, match bson.M, field string) (int64, error) {
	pipeline := mongo.Pipeline{
		{{Key: "$match", Value: match}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "sum", Value: bson.M{"$sum": "$" + field}}}}},
	}
	cur, err := c.Aggregate(ctx, pipeline)
	if err != nil {
		return 0, fmt.Errorf("summing %s: %w", field, err)
	}
	var rows []struct {
		Sum int64 `bson:"sum"`
	}
	if err := cur.All(ctx, &rows); err != nil {
		return 0, fmt.Errorf("reading sum of %s: %w", field, err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].Sum, nil
}

// countDocs counts the documents matching filter.
func countDocs(ctx context.Context, c *mongo.Collection, filter bson.M) (int64, error) {
	n, err := c.CountDocuments(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("counting %s: %w", c.Name(), err)
	}
	return n, nil
}
