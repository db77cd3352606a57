package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// RunPostCrawlTasks does the store's part of finishing crawl crawlID, which
// must already be in a terminal state:
//
//  1. if successful: add its duration to the org's monthly usage, add it
//     to its workflow's autoAddCollections, and recount every collection
//     it is in (now that it counts there);
//  2. count its pages into its page counters if successful, else delete
//     them and zero the counters (a failed or canceled crawl keeps none);
//  3. recompute its workflow's stats;
//  4. recompute its org's bytesStored, unless tried lately, and
//     whatever the outcome (healOrgBytesStored);
//  5. mark the crawl PostCrawlDone.
//
// Every step is idempotent, so a restart after a crash anywhere reruns the
// whole list without double counting; once PostCrawlDone is set it returns
// at once. It returns the crawl as it is at the end (for the crawlFinished
// webhook).
//
// Errors: NotFound("crawl_not_found"); Invalid("crawl_not_finished").
func (m *Mongo) RunPostCrawlTasks(ctx context.Context, crawlID string) (*Crawl, error) {
	c, err := m.GetCrawlByID(ctx, crawlID)
	if err != nil {
		return nil, err
	}
	if c.PostCrawlDone {
		return c, nil
	}
	if !IsFinished(c.State) || c.Finished == nil {
		return nil, Invalid("crawl_not_finished")
	}
	if IsSuccessful(c.State) {
		if err := m.recordUsage(ctx, c); err != nil {
			return nil, err
		}
		if err := m.autoAddToCollections(ctx, c); err != nil {
			return nil, err
		}
		if err := m.recomputeCollections(ctx, c.CollectionIDs); err != nil {
			return nil, err
		}
	}
	if err := m.settlePages(ctx, c); err != nil {
		return nil, err
	}
	if err := m.RecomputeWorkflowStats(ctx, c.CID); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if _, err := m.coll(collCrawls).UpdateOne(ctx, bson.M{"_id": crawlID},
		bson.M{"$set": bson.M{"postCrawlDone": true}}); err != nil {
		return nil, fmt.Errorf("marking post-crawl tasks done: %w", err)
	}
	c.PostCrawlDone = true
	// Last, and best effort (see healOrgBytesStored): before the mark, a
	// slow scan used up the time the mark had, and the retry redid every
	// step (at 10,000 crawls, "calculated server-side timeout (0 ms)").
	m.healOrgBytesStored(ctx, c.OID)
	return c, nil
}

// autoAddToCollections adds the crawl to those of its workflow's
// autoAddCollections that still exist, and to c.CollectionIDs. Unlike
// upstream, which overwrote collectionIds, it adds to the set, so
// collections the user chose meanwhile stay.
func (m *Mongo) autoAddToCollections(ctx context.Context, c *Crawl) error {
	wf, err := m.GetCrawlConfig(ctx, c.OID, c.CID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(wf.AutoAddCollections) == 0 {
		return nil
	}
	existing, err := m.CollectionRefs(ctx, c.OID, wf.AutoAddCollections)
	if err != nil || len(existing) == 0 {
		return err
	}
	ids := make([]uuid.UUID, len(existing))
	for i, coll := range existing {
		ids[i] = coll.ID
	}
	if _, err := m.coll(collCrawls).UpdateOne(ctx, bson.M{"_id": c.ID},
		bson.M{"$addToSet": bson.M{"collectionIds": bson.M{"$each": ids}}}); err != nil {
		return fmt.Errorf("adding crawl to collections: %w", err)
	}
	for _, id := range ids {
		if !slices.Contains(c.CollectionIDs, id) {
			c.CollectionIDs = append(c.CollectionIDs, id)
		}
	}
	return nil
}

// settlePages records a finished crawl's page counters, or deletes the
// pages of one that did not succeed.
func (m *Mongo) settlePages(ctx context.Context, c *Crawl) error {
	if !IsSuccessful(c.State) {
		c.PageCounts = PageCounts{}
		return m.ClearPages(ctx, c.ID)
	}
	pc, err := m.RecountPages(ctx, c.ID)
	if err != nil {
		return err
	}
	c.PageCounts = pc
	return nil
}
