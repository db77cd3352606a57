package store

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// indexes are upstream's startup indexes (§10) restricted to what FerretDB
// v1 supports (no hashed, partial, TTL or text indexes), plus the
// ones trawler's own lookups need.
var indexes = map[string][]mongo.IndexModel{
	collUsers: {
		{Keys: bson.D{{Key: "id", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "emailLower", Value: 1}}, Options: options.Index().SetUnique(true)},
	},
	collOrgs: {
		{Keys: bson.D{{Key: "name", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "default", Value: 1}}},
	},
	collConfigs: {
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "inactive", Value: 1}}},
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "tags", Value: 1}}},
		{Keys: bson.D{{Key: "lastRun", Value: -1}, {Key: "modified", Value: -1}}},
		{Keys: bson.D{{Key: "name", Value: 1}, {Key: "firstSeed", Value: 1}}},
		{Keys: bson.D{{Key: "schedule", Value: 1}}},
	},
	collRevisions: {
		{Keys: bson.D{{Key: "cid", Value: 1}, {Key: "rev", Value: 1}}},
	},
	collCrawls: {
		{Keys: bson.D{{Key: "type", Value: 1}, {Key: "finished", Value: -1}}},
		{Keys: bson.D{{Key: "type", Value: 1}, {Key: "oid", Value: 1}}},
		{Keys: bson.D{{Key: "type", Value: 1}, {Key: "cid", Value: 1}}},
		{Keys: bson.D{{Key: "type", Value: 1}, {Key: "state", Value: 1}}},
		{Keys: bson.D{{Key: "type", Value: 1}, {Key: "fileSize", Value: 1}}},
		{Keys: bson.D{{Key: "finished", Value: -1}}},
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "started", Value: -1}}},
		{Keys: bson.D{{Key: "cid", Value: 1}, {Key: "state", Value: 1}}},
		{Keys: bson.D{{Key: "state", Value: 1}}},
		{Keys: bson.D{{Key: "fileSize", Value: -1}}},
		{Keys: bson.D{{Key: "collectionIds", Value: 1}}},
	},
	collCrawlErrors: {
		{Keys: bson.D{{Key: "crawlId", Value: 1}, {Key: "idx", Value: 1}}},
	},
	collCrawlUsage: {
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "month", Value: 1}}},
	},
	collCollections: {
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "name", Value: 1}}, Options: options.Index().SetUnique(true)},
	},
}

// EnsureIndexes creates the store's indexes (and so its collections) if
// they are missing. It is idempotent and safe to run from every replica at
// startup; it waits for the server within ctx.
//
// Errors: none of the store kinds.
func (m *Mongo) EnsureIndexes(ctx context.Context) error {
	for name, models := range indexes {
		if _, err := m.coll(name).Indexes().CreateMany(ctx, models); err != nil {
			return fmt.Errorf("creating indexes on %s: %w", name, err)
		}
	}
	return nil
}
