package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// insertRevision stores a copy of a workflow's previous settings. A retry
// after a crash re-inserts the same id, which is not an error.
func (m *Mongo) insertRevision(ctx context.Context, rev *ConfigRevision) error {
	if _, err := m.coll(collRevisions).InsertOne(ctx, rev); err != nil && !isDuplicate(err) {
		return fmt.Errorf("inserting config revision: %w", err)
	}
	return nil
}

// ListRevisions returns one page of workflow cid's revisions, oldest first,
// and their total.
//
// Errors: none of the store kinds (an unknown cid has no revisions).
func (m *Mongo) ListRevisions(ctx context.Context, cid uuid.UUID, p Paging) ([]ConfigRevision, int64, error) {
	opts := options.Find().SetSort(bson.D{{Key: "rev", Value: 1}, {Key: "modified", Value: 1}})
	p.apply(opts)
	return findPage[ConfigRevision](ctx, m.coll(collRevisions), bson.M{"cid": cid}, opts, "config revisions")
}
