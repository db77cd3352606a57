package store

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// crawlError is error line number Index of a crawl (a JSON line from the
// crawler's <id>:e list). Errors live in their own collection rather than
// in the crawl document so they can be added incrementally and paged
// without loading the crawl, and because the _id (crawl id + index) makes
// writing a line again a no-op.
type crawlError struct {
	ID      string `bson:"_id"`
	CrawlID string `bson:"crawlId"`
	Index   int64  `bson:"idx"`
	Line    string `bson:"line"`
}

func crawlErrorID(crawlID string, index int64) string {
	return fmt.Sprintf("%s:%012d", crawlID, index)
}

// AddCrawlErrors records lines as the crawl's error lines number seq,
// seq+1, ... (0-based, in the order the crawler wrote them). Each number is
// written at most once, so a replay after a crash (or a concurrent call
// with the same batch) adds nothing, and a batch overlapping the recorded
// lines adds only the missing tail. The operator keeps seq as the number of
// lines it has trimmed from Redis.
//
// Errors: Conflict("crawl_errors_gap") if line seq-1 is not recorded yet
// (a batch would leave a hole); the crawl's existence is not checked.
func (m *Mongo) AddCrawlErrors(ctx context.Context, crawlID string, seq int64, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	if seq < 0 {
		return Invalid("invalid_error_seq")
	}
	if seq > 0 {
		n, err := m.coll(collCrawlErrors).CountDocuments(ctx, bson.M{"_id": crawlErrorID(crawlID, seq-1)})
		if err != nil {
			return fmt.Errorf("checking crawl errors: %w", err)
		}
		if n == 0 {
			return Conflict("crawl_errors_gap")
		}
	}
	docs := make([]crawlError, len(lines))
	for i, l := range lines {
		idx := seq + int64(i)
		docs[i] = crawlError{ID: crawlErrorID(crawlID, idx), CrawlID: crawlID, Index: idx, Line: l}
	}
	return m.insertCrawlErrors(ctx, docs)
}

// operatorErrorBase numbers the error lines the operator writes itself,
// after any line the crawler can have written.
const operatorErrorBase = int64(1) << 40

// AddOperatorCrawlErrors records the lines the operator writes about a
// crawl it ended (why, and its pods' last log lines). They come after the
// crawler's own lines, even those recorded later, and are written at most
// once, so a replay after a crash adds nothing.
//
// Errors: none of the store kinds.
func (m *Mongo) AddOperatorCrawlErrors(ctx context.Context, crawlID string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	docs := make([]crawlError, len(lines))
	for i, l := range lines {
		docs[i] = crawlError{ID: fmt.Sprintf("%s:op:%06d", crawlID, i), CrawlID: crawlID, Index: operatorErrorBase + int64(i), Line: l}
	}
	return m.insertCrawlErrors(ctx, docs)
}

// insertCrawlErrors inserts docs, skipping those already recorded.
func (m *Mongo) insertCrawlErrors(ctx context.Context, docs []crawlError) error {
	_, err := m.coll(collCrawlErrors).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return fmt.Errorf("inserting crawl errors: %w", err)
	}
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 && !isDuplicate(we) {
			return fmt.Errorf("inserting crawl errors: %w", err)
		}
	}
	return nil
}

// ListCrawlErrors returns one page of the crawl's error lines in crawler
// order, and their total.
//
// Errors: none of the store kinds (an unknown crawl has no errors).
func (m *Mongo) ListCrawlErrors(ctx context.Context, crawlID string, p Paging) ([]string, int64, error) {
	opts := options.Find().SetSort(bson.D{{Key: "crawlId", Value: 1}, {Key: "idx", Value: 1}})
	p.apply(opts)
	rows, total, err := findPage[crawlError](ctx, m.coll(collCrawlErrors), bson.M{"crawlId": crawlID}, opts, "crawl errors")
	if err != nil {
		return nil, 0, err
	}
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = r.Line
	}
	return lines, total, nil
}
