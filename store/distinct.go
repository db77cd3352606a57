package store

import (
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// distinctSet collects distinct non-empty strings (search values drop
// empty strings, as upstream does).
type distinctSet map[string]struct{}

func (d *distinctSet) add(s string) {
	if s == "" {
		return
	}
	if *d == nil {
		*d = distinctSet{}
	}
	(*d)[s] = struct{}{}
}

func (d *distinctSet) addPtr(s *string) {
	if s != nil {
		d.add(*s)
	}
}

// sorted returns the values in order, never nil (it is a JSON list).
func (d distinctSet) sorted() []string {
	out := make([]string, 0, len(d))
	for s := range d {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// distinctStrings returns the distinct non-empty string values of an array
// or scalar field. It uses aggregate rather than distinct: driver v2 adds
// maxTimeMS to distinct when ctx has a deadline, which FerretDB rejects.
func distinctStrings(ctx context.Context, c *mongo.Collection, match bson.M, field string) ([]string, error) {
	pipeline := mongo.Pipeline{
		{{Key: "$match", Value: match}},
		{{Key: "$unwind", Value: "$" + field}},
		{{Key: "$group", Value: bson.M{"_id": "$" + field}}},
	}
	cur, err := c.Aggregate(ctx, pipeline)
	if err != nil {
		return nil, fmt.Errorf("aggregating distinct %s: %w", field, err)
	}
	var rows []struct {
		V any `bson:"_id"`
	}
	if err := cur.All(ctx, &rows); err != nil {
		return nil, fmt.Errorf("reading distinct %s: %w", field, err)
	}
	var set distinctSet
	for _, r := range rows {
		if s, ok := r.V.(string); ok {
			set.add(s)
		}
	}
	return set.sorted(), nil
}
