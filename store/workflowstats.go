package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Derived statistics are recomputed from the crawls rather than adjusted
// with $inc (upstream bugs #3011 and #3372: failed crawls counted as
// successful, counts going negative after cancel + delete). Recomputing is
// also what makes the post-crawl tasks safe to repeat.

// statsProjection leaves out the big fields of a crawl.
var statsProjection = bson.M{"files": 0, "errors": 0, "config": 0, "podStatus": 0}

// RecomputeWorkflowStats recomputes workflow cid's statistics from its
// crawls: crawlCount (ended crawls), crawlSuccessfulCount and totalSize
// (successful crawls only), and the last-crawl fields — from the newest
// crawl that has not ended if there is one (isCrawlRunning true), else from
// the crawl that ended last, else null.
//
// Errors: NotFound("crawl_config_not_found").
func (m *Mongo) RecomputeWorkflowStats(ctx context.Context, cid uuid.UUID) error {
	return recompute(ctx, m.coll(collConfigs), cid, errConfigNotFound, func(ctx context.Context) (any, error) {
		return m.workflowStats(ctx, cid)
	})
}

// derivedWorkflowStats are the workflow fields RecomputeWorkflowStats
// writes: all but crawlAttemptCount, which counts starts, including those
// of crawls deleted since.
type derivedWorkflowStats struct {
	CrawlCount           int64 `bson:"crawlCount"`
	CrawlSuccessfulCount int64 `bson:"crawlSuccessfulCount"`
	TotalSize            int64 `bson:"totalSize"`
	LastCrawl            `bson:",inline"`
}

func (m *Mongo) workflowStats(ctx context.Context, cid uuid.UUID) (*derivedWorkflowStats, error) {
	var s derivedWorkflowStats
	var err error
	crawls := m.coll(collCrawls)
	if s.CrawlCount, err = countDocs(ctx, crawls, bson.M{"cid": cid, "state": bson.M{"$in": FinishedStates}}); err != nil {
		return nil, err
	}
	successful := bson.M{"cid": cid, "state": bson.M{"$in": SuccessfulStates}}
	if s.CrawlSuccessfulCount, err = countDocs(ctx, crawls, successful); err != nil {
		return nil, err
	}
	if s.TotalSize, err = sumField(ctx, crawls, successful, "fileSize"); err != nil {
		return nil, err
	}
	last, err := m.latestCrawl(ctx, cid, ActiveStates, "started")
	if err != nil {
		return nil, err
	}
	if last == nil {
		if last, err = m.latestCrawl(ctx, cid, FinishedStates, "finished"); err != nil {
			return nil, err
		}
	}
	if last != nil {
		s.LastCrawl = LastCrawlOf(last)
	}
	return &s, nil
}

// latestCrawl returns the crawl of cid in one of states with the greatest
// sortField, or nil if there is none.
func (m *Mongo) latestCrawl(ctx context.Context, cid uuid.UUID, states []string, sortField string) (*Crawl, error) {
	opts := options.FindOne().SetProjection(statsProjection).
		SetSort(bson.D{{Key: sortField, Value: -1}, {Key: "_id", Value: -1}})
	var c Crawl
	err := m.coll(collCrawls).FindOne(ctx, bson.M{"cid": cid, "state": bson.M{"$in": states}}, opts).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding latest crawl: %w", err)
	}
	return &c, nil
}

// usageRecord is one successful crawl's contribution to its org's monthly
// usage. Keeping it (keyed by crawl id) makes the usage increment
// idempotent, and it outlives the crawl: deleting a crawl does not give
// back the time it used.
type usageRecord struct {
	CrawlID string    `bson:"_id"`
	OID     uuid.UUID `bson:"oid"`
	Month   string    `bson:"month"` // YYYY-MM of the finish time
	Seconds int64     `bson:"seconds"`
}

// recordUsage adds the crawl's wall-clock duration to its org's usage for
// the month it finished in, at most once.
func (m *Mongo) recordUsage(ctx context.Context, c *Crawl) error {
	rec := usageRecord{
		CrawlID: c.ID,
		OID:     c.OID,
		Month:   c.Finished.UTC().Format("2006-01"),
		Seconds: int64(c.Finished.Sub(c.Started).Seconds()),
	}
	if _, err := m.coll(collCrawlUsage).InsertOne(ctx, rec); err != nil && !isDuplicate(err) {
		return fmt.Errorf("recording crawl usage: %w", err)
	}
	total, err := sumField(ctx, m.coll(collCrawlUsage), bson.M{"oid": c.OID, "month": rec.Month}, "seconds")
	if err != nil {
		return err
	}
	// $max: the monthly sum only grows, so a recomputation that read fewer
	// records and writes late cannot lower it.
	if _, err := m.coll(collOrgs).UpdateOne(ctx, bson.M{"_id": c.OID},
		bson.M{"$max": bson.M{"usage." + rec.Month: total}}); err != nil {
		return fmt.Errorf("updating org usage: %w", err)
	}
	return nil
}
