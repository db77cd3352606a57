package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// crawlError is one error line of a crawl (a JSON line from the crawler's
// <id>:e list). Errors live in their own collection rather than in the crawl
// document so they can be added incrementally and paged without loading
// the crawl, and so that the _id makes re-adding a line a no-op.
type crawlError struct {
	ID      string `bson:"_id"` // hash of crawl id and line
	CrawlID string `bson:"crawlId"`
	Seq     int64  `bson:"seq"` // insertion order
	Line    string `bson:"line"`
}

func crawlErrorID(crawlID, line string) string {
	h := sha256.New()
	h.Write([]byte(crawlID))
	h.Write([]byte{0})
	h.Write([]byte(line))
	return hex.EncodeToString(h.Sum(nil))
}

// nextSeqs reserves n increasing sequence numbers based on the clock, so
// errors list in the order they were added even across batches.
func (m *Mongo) nextSeqs(n int) int64 {
	m.seqMu.Lock()
	defer m.seqMu.Unlock()
	first := max(time.Now().UnixNano(), m.lastSeq+1)
	m.lastSeq = first + int64(n) - 1
	return first
}

// AddCrawlErrors records error lines of a crawl, each at most once: a line
// already recorded for this crawl (from an earlier, retried or concurrent
// call) is skipped, so the operator can write before trimming Redis and
// repeat after a crash. Two byte-identical lines count as one (crawler
// lines carry a millisecond timestamp, so this is rare). It returns how
// many lines were new.
//
// Errors: none of the store kinds; the crawl's existence is not checked.
func (m *Mongo) AddCrawlErrors(ctx context.Context, crawlID string, lines []string) (int, error) {
	if len(lines) == 0 {
		return 0, nil
	}
	seq := m.nextSeqs(len(lines))
	docs := make([]crawlError, len(lines))
	for i, l := range lines {
		docs[i] = crawlError{ID: crawlErrorID(crawlID, l), CrawlID: crawlID, Seq: seq + int64(i), Line: l}
	}
	_, err := m.coll(collCrawlErrors).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return len(lines), nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return 0, fmt.Errorf("inserting crawl errors: %w", err)
	}
	dups := 0
	for _, we := range bwe.WriteErrors {
		if !isDuplicate(we) && we.Code != 11000 {
			return 0, fmt.Errorf("inserting crawl errors: %w", err)
		}
		dups++
	}
	return len(lines) - dups, nil
}

// ListCrawlErrors returns one page of the crawl's error lines in the order
// they were added, and their total.
//
// Errors: none of the store kinds (an unknown crawl has no errors).
func (m *Mongo) ListCrawlErrors(ctx context.Context, crawlID string, p Paging) ([]string, int64, error) {
	opts := options.Find().SetSort(bson.D{{Key: "seq", Value: 1}, {Key: "_id", Value: 1}})
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
