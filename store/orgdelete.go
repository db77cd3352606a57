package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// collCrawlLogs is upstream's collection of crawl log lines. trawler keeps
// none there yet; the org deletion removes it by name all the same (a
// collection that does not exist matches nothing), so that an org moved
// from upstream leaves nothing behind.
const collCrawlLogs = "crawl_logs"

// OrgItemsBatch returns up to n of the org's archived items (crawls and
// uploads) with their files: the org deletion deletes them batch by
// batch, files first.
//
// Errors: none of the store kinds.
func (m *Mongo) OrgItemsBatch(ctx context.Context, oid uuid.UUID, n int) ([]Crawl, error) {
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(n)).
		SetProjection(bson.M{"_id": 1, "type": 1, "oid": 1, "files": 1, "state": 1})
	return findAll[Crawl](ctx, m.coll(collCrawls), bson.M{"oid": oid}, opts, "org items")
}

// OrgActiveCrawls returns the org's crawls that have not ended.
//
// Errors: none of the store kinds.
func (m *Mongo) OrgActiveCrawls(ctx context.Context, oid uuid.UUID) ([]Crawl, error) {
	filter := bson.M{"oid": oid, "state": bson.M{"$in": ActiveStates}}
	return findAll[Crawl](ctx, m.coll(collCrawls), filter, options.Find(), "active crawls")
}

// DeleteOrgItems deletes the org's items ids with what hangs on them: their
// error lines, pages and log lines, then the item documents. Unlike
// DeleteCrawls it recomputes no stats: their workflows, collections and
// org go too.
//
// Errors: none of the store kinds.
func (m *Mongo) DeleteOrgItems(ctx context.Context, oid uuid.UUID, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	in := bson.M{"$in": ids}
	for _, d := range []struct {
		coll   string
		filter bson.M
	}{
		{collCrawlErrors, bson.M{"crawlId": in}},
		{collPages, bson.M{"oid": oid, "crawl_id": in}},
		{collCrawlLogs, bson.M{"oid": oid, "crawl_id": in}},
		{collCrawls, bson.M{"oid": oid, "_id": in}},
	} {
		if _, err := m.coll(d.coll).DeleteMany(ctx, d.filter); err != nil {
			return fmt.Errorf("deleting %s of org items: %w", d.coll, err)
		}
	}
	return nil
}

// DeleteOrgDocuments deletes every document of org oid after its items,
// in upstream's order: workflow revisions, workflows, seed files,
// profiles, collections, the users who belong to no other org
// (superusers stay), invites; then what trawler adds (webhook
// notifications, usage records, pages and log lines left over), the
// org's other background jobs (not the deletion's own, which stays as
// the record of it), and the org document last. Each step deletes by
// org, so running it again after a crash anywhere finishes the job.
//
// Errors: none of the store kinds.
func (m *Mongo) DeleteOrgDocuments(ctx context.Context, oid uuid.UUID) error {
	type idRow struct {
		ID uuid.UUID `bson:"_id"`
	}
	workflows, err := findAll[idRow](ctx, m.coll(collConfigs), bson.M{"oid": oid},
		options.Find().SetProjection(bson.M{"_id": 1}), "org workflows")
	if err != nil {
		return err
	}
	cids := make([]uuid.UUID, len(workflows))
	for i, w := range workflows {
		cids[i] = w.ID
	}
	byOrg := bson.M{"oid": oid}
	steps := []struct {
		coll   string
		filter bson.M
	}{
		{collRevisions, bson.M{"cid": bson.M{"$in": cids}}},
		{collConfigs, byOrg},
		{collFileUploads, byOrg},
		{collProfiles, byOrg},
		{collCollections, byOrg},
	}
	for _, s := range steps {
		if _, err := m.coll(s.coll).DeleteMany(ctx, s.filter); err != nil {
			return fmt.Errorf("deleting org %s: %w", s.coll, err)
		}
	}
	if err := m.deleteOrgOnlyUsers(ctx, oid); err != nil {
		return err
	}
	steps = []struct {
		coll   string
		filter bson.M
	}{
		{collInvites, byOrg},
		{collWebhooks, byOrg},
		{collCrawlUsage, byOrg},
		{collPages, byOrg},
		{collCrawlLogs, byOrg},
		{collJobs, bson.M{"oid": oid, "type": bson.M{"$ne": JobTypeDeleteOrg}}},
		{collOrgs, bson.M{"_id": oid}},
	}
	for _, s := range steps {
		if _, err := m.coll(s.coll).DeleteMany(ctx, s.filter); err != nil {
			return fmt.Errorf("deleting org %s: %w", s.coll, err)
		}
	}
	return nil
}

// deleteOrgOnlyUsers deletes the members of org oid who are in no other
// org, except superusers.
func (m *Mongo) deleteOrgOnlyUsers(ctx context.Context, oid uuid.UUID) error {
	org, err := m.GetOrg(ctx, oid)
	if errors.Is(err, ErrNotFound) {
		// Gone already: a resumed job deleted the users before the org.
		return nil
	}
	if err != nil {
		return err
	}
	for member := range org.Users {
		uid, err := uuid.Parse(member)
		if err != nil {
			continue
		}
		others, err := m.coll(collOrgs).CountDocuments(ctx,
			bson.M{"_id": bson.M{"$ne": oid}, "users." + member: bson.M{"$exists": true}})
		if err != nil {
			return fmt.Errorf("counting user's orgs: %w", err)
		}
		if others > 0 {
			continue
		}
		if _, err := m.coll(collUsers).DeleteOne(ctx, bson.M{"id": uid, "is_superuser": bson.M{"$ne": true}}); err != nil {
			return fmt.Errorf("deleting user: %w", err)
		}
	}
	return nil
}
