package store

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Maybe is one field of a partial update: the field is written only when
// Set is true. Value may itself be a nil pointer, which writes null (the
// API distinguishes an absent field from an explicit null).
type Maybe[T any] struct {
	Value T
	Set   bool
}

// Some returns a Maybe that writes v.
func Some[T any](v T) Maybe[T] { return Maybe[T]{Value: v, Set: true} }

// setIf adds name: m.Value to set when m is Set.
func setIf[T any](set bson.M, name string, m Maybe[T]) {
	if m.Set {
		set[name] = m.Value
	}
}

// Paging selects one page of a list, as on the wire: Page is 1-based
// (values < 1 count as 1); PageSize 0 means no limit.
type Paging struct {
	Page     int
	PageSize int
}

func (p Paging) apply(opts *options.FindOptionsBuilder) {
	if p.PageSize <= 0 {
		return
	}
	page := max(p.Page, 1)
	opts.SetSkip(int64(page-1) * int64(p.PageSize)).SetLimit(int64(p.PageSize))
}

// sortDirection validates a wire sortDirection (0 means the default, -1).
func sortDirection(d int) (int, error) {
	switch d {
	case 0:
		return -1, nil
	case 1, -1:
		return d, nil
	}
	return 0, Invalid("invalid_sort_direction")
}

// findPage runs countDocuments and find with the same filter (FerretDB has
// no $facet) and decodes the page into a slice of T.
func findPage[T any](ctx context.Context, c *mongo.Collection, filter bson.M, opts *options.FindOptionsBuilder, what string) ([]T, int64, error) {
	total, err := c.CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, fmt.Errorf("counting %s: %w", what, err)
	}
	items, err := findAll[T](ctx, c, filter, opts, what)
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}

// findAll decodes every document matching filter (never nil on success).
func findAll[T any](ctx context.Context, c *mongo.Collection, filter bson.M, opts *options.FindOptionsBuilder, what string) ([]T, error) {
	cur, err := c.Find(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("finding %s: %w", what, err)
	}
	items := []T{}
	if err := cur.All(ctx, &items); err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return items, nil
}

// matchIfSet adds an equality match on key to filter when the optional
// value v is given.
func matchIfSet[T any](filter bson.M, key string, v *T) {
	if v != nil {
		filter[key] = *v
	}
}
