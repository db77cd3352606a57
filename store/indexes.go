package store

import (
	"context"
	"fmt"
	"slices"

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
		// One unfinished crawl per workflow (AddCrawl); unique is atomic on
		// FerretDB too, where a compare-and-set update is not.
		{Keys: bson.D{{Key: "activeCid", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true)},
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
	collInvites: {
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "emailLower", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "created", Value: 1}}},
	},
	collWebhooks: {
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "created", Value: 1}}},
		{Keys: bson.D{{Key: "nextAttempt", Value: 1}}, Options: options.Index().SetSparse(true)},
	},
	collProfiles: {
		{Keys: bson.D{{Key: "oid", Value: 1}}},
	},
	collFileUploads: {
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "created", Value: -1}}},
	},
	// Pages are listed per item: seeds first then by time (the default
	// order), or by url (URL searches and prefixes).
	collPages: {
		{Keys: bson.D{{Key: "crawl_id", Value: 1}, {Key: "isSeed", Value: -1}, {Key: "ts", Value: 1}}},
		{Keys: bson.D{{Key: "crawl_id", Value: 1}, {Key: "url", Value: 1}}},
		{Keys: bson.D{{Key: "oid", Value: 1}, {Key: "crawl_id", Value: 1}}},
	},
}

// EnsureIndexes creates the store's indexes if they are missing. It is
// idempotent and safe to run from every replica at startup (and at every
// restart); it waits for the server within ctx.
//
// On FerretDB only the unique indexes and those led by an id that lists
// filter on by equality (oid, cid, crawlId, crawl_id) are created: FerretDB answers
// every other filter by scanning (the sandbox's patched build pushes
// top-level equality filters into SQLite, where these indexes serve them),
// while each index makes every write slower.
//
// Errors: none of the store kinds.
func (m *Mongo) EnsureIndexes(ctx context.Context) error {
	if err := m.Ping(ctx); err != nil {
		return err
	}
	ferret := m.ferret(ctx)
	for name, models := range indexes {
		if ferret {
			models = slices.DeleteFunc(slices.Clone(models), func(im mongo.IndexModel) bool {
				return !isUnique(im) && !ledByEqualityID(im)
			})
		}
		// One at a time: FerretDB v1 drops the connection when one
		// createIndexes names two or more indexes that already exist
		// (it removes them from its list by their original positions), so
		// a batch would fail every start after the first.
		for _, model := range models {
			if _, err := m.coll(name).Indexes().CreateOne(ctx, model); err != nil {
				return fmt.Errorf("creating indexes on %s: %w", name, err)
			}
		}
	}
	return nil
}

func isUnique(im mongo.IndexModel) bool {
	if im.Options == nil {
		return false
	}
	var o options.IndexOptions
	for _, set := range im.Options.List() {
		if err := set(&o); err != nil {
			return false
		}
	}
	return o.Unique != nil && *o.Unique
}

// ledByEqualityID reports whether an index starts with a field that list
// queries match by equality.
func ledByEqualityID(im mongo.IndexModel) bool {
	keys, ok := im.Keys.(bson.D)
	return ok && len(keys) > 0 && slices.Contains([]string{"oid", "cid", "crawlId", "crawl_id"}, keys[0].Key)
}
