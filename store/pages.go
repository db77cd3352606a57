package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// collPages holds one document per page of a crawl or upload (upstream's
// "pages" collection).
const collPages = "pages"

// Page is one page of an archived item (upstream-2026 §3.2). Optional
// fields are nil when unknown and then not stored.
type Page struct {
	ID         uuid.UUID `bson:"_id"`
	OID        uuid.UUID `bson:"oid"`
	CrawlID    string    `bson:"crawl_id"`
	URL        string    `bson:"url"`
	Title      *string   `bson:"title,omitempty"`
	TS         time.Time `bson:"ts"`
	LoadState  *int      `bson:"loadState,omitempty"`
	Status     *int      `bson:"status,omitempty"`
	Mime       *string   `bson:"mime,omitempty"`
	Filename   *string   `bson:"filename,omitempty"`
	Depth      *int      `bson:"depth,omitempty"`
	FavIconURL *string   `bson:"favIconUrl,omitempty"`
	IsSeed     bool      `bson:"isSeed"`
	IsFile     bool      `bson:"isFile"`
	IsError    bool      `bson:"isError"`
}

// PageSorts are the keys pages may be sorted by (upstream's list, without
// the QA-only ones).
var PageSorts = map[string]bool{"url": true, "title": true, "notes": true, "approved": true, "ts": true,
	"status": true, "mime": true, "filename": true, "depth": true, "isSeed": true}

// PageQuery selects pages for ListPages.
type PageQuery struct {
	// OID, when not nil, restricts the pages to that org.
	OID *uuid.UUID
	// CrawlIDs are the items whose pages are listed; empty lists none.
	CrawlIDs []string
	// Search is a URL lower bound when it starts with http: or https:,
	// else a case-insensitive match in the title.
	Search string
	// URL is an exact URL; URLPrefix (ignored with URL) a lower bound.
	URL       string
	URLPrefix string
	TS        *time.Time
	IsSeed    *bool
	Depth     *int
	// SortBy is one of PageSorts or ""; SortDirection is 1 or -1 (0: -1).
	SortBy        string
	SortDirection int
	// NoCount skips counting the matches (the items-only routes).
	NoCount bool
	Paging
}

var (
	errPageNotFound     = NotFound("page_not_found")
	errInvalidPageSort  = Invalid("invalid_sort_by")
	errInvalidPageOrder = Invalid("invalid_sort_direction")
)

// isURLSearch tells a search for a URL from one for words of a title.
func isURLSearch(s string) bool {
	return strings.HasPrefix(s, "http:") || strings.HasPrefix(s, "https:")
}

// pageFilterAndSort builds the filter and order of a page query, or the
// error of a sort key or direction outside the allowed set.
func pageFilterAndSort(q PageQuery) (bson.M, bson.D, error) {
	dir := -1
	switch q.SortDirection {
	case 0:
	case 1, -1:
		dir = q.SortDirection
	default:
		return nil, nil, errInvalidPageOrder
	}
	if q.SortBy != "" && !PageSorts[q.SortBy] {
		return nil, nil, errInvalidPageSort
	}
	filter := bson.M{"crawl_id": bson.M{"$in": q.CrawlIDs}}
	if len(q.CrawlIDs) == 1 {
		filter["crawl_id"] = q.CrawlIDs[0]
	}
	if q.OID != nil {
		filter["oid"] = *q.OID
	}
	byURL := false
	if q.Search != "" {
		if isURLSearch(q.Search) {
			filter["url"] = bson.M{"$gte": q.Search}
			byURL = true
		} else {
			// FerretDB has no text indexes: a case-insensitive substring
			// of the title stands in for upstream's $text search.
			filter["title"] = bson.M{"$regex": regexp.QuoteMeta(q.Search), "$options": "i"}
		}
	}
	switch {
	case q.URL != "":
		filter["url"] = q.URL
	case q.URLPrefix != "":
		filter["url"] = bson.M{"$gte": q.URLPrefix}
		byURL = true
	}
	if q.TS != nil {
		filter["ts"] = q.TS.UTC()
	}
	matchIfSet(filter, "isSeed", q.IsSeed)
	matchIfSet(filter, "depth", q.Depth)

	var sort bson.D
	switch {
	case q.SortBy != "":
		sort = bson.D{{Key: q.SortBy, Value: dir}}
	case byURL:
		sort = bson.D{{Key: "url", Value: 1}}
	default:
		sort = bson.D{{Key: "isSeed", Value: -1}, {Key: "ts", Value: 1}}
	}
	// _id last: pages that tie keep one order from page to page.
	sort = append(sort, bson.E{Key: "_id", Value: 1})
	return filter, sort, nil
}

// ListPages returns one page of the pages q selects and, unless q.NoCount,
// how many match in all.
//
// Errors: Invalid("invalid_sort_by"), Invalid("invalid_sort_direction").
func (m *Mongo) ListPages(ctx context.Context, q PageQuery) ([]Page, int64, error) {
	filter, sort, err := pageFilterAndSort(q)
	if err != nil {
		return nil, 0, err
	}
	if len(q.CrawlIDs) == 0 {
		return []Page{}, 0, nil
	}
	opts := options.Find().SetSort(sort)
	q.Paging.apply(opts)
	if q.NoCount {
		items, err := findAll[Page](ctx, m.coll(collPages), filter, opts, "pages")
		return items, 0, err
	}
	return findPage[Page](ctx, m.coll(collPages), filter, opts, "pages")
}

// GetPage returns page id of item crawlID of org oid.
//
// Errors: NotFound("page_not_found") when the page is not in that org and
// item.
func (m *Mongo) GetPage(ctx context.Context, oid uuid.UUID, crawlID string, id uuid.UUID) (*Page, error) {
	var p Page
	err := m.coll(collPages).FindOne(ctx, bson.M{"_id": id, "oid": oid, "crawl_id": crawlID}).Decode(&p)
	if err != nil {
		return nil, notFoundOr(err, errPageNotFound, "finding page")
	}
	return &p, nil
}

// AddPages inserts pages in one unordered write; pages whose id is
// already stored are skipped, so adding a batch again is harmless. It
// returns how many it inserted.
//
// Errors: none of the store kinds.
func (m *Mongo) AddPages(ctx context.Context, pages []Page) (int, error) {
	if len(pages) == 0 {
		return 0, nil
	}
	docs := make([]any, len(pages))
	for i := range pages {
		docs[i] = &pages[i]
	}
	res, err := m.coll(collPages).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	n := 0
	if res != nil {
		n = len(res.InsertedIDs)
	}
	if err != nil && !onlyDuplicates(err) {
		return n, fmt.Errorf("adding %d pages: %w", len(pages), err)
	}
	if err != nil {
		var bwe mongo.BulkWriteException
		errors.As(err, &bwe)
		n = len(pages) - len(bwe.WriteErrors)
	}
	return n, nil
}

// onlyDuplicates reports whether every error of a bulk insert is a
// duplicate key.
func onlyDuplicates(err error) bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return false
	}
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 {
			return false
		}
	}
	return true
}

// DeletePages deletes the pages of the items crawlIDs.
//
// Errors: none of the store kinds.
func (m *Mongo) DeletePages(ctx context.Context, crawlIDs []string) error {
	if len(crawlIDs) == 0 {
		return nil
	}
	if _, err := m.coll(collPages).DeleteMany(ctx, bson.M{"crawl_id": bson.M{"$in": crawlIDs}}); err != nil {
		return fmt.Errorf("deleting pages: %w", err)
	}
	return nil
}

// PageCounts are an item's page counters (crawl document and CrawlOut).
type PageCounts struct {
	PageCount       int `bson:"pageCount"`
	UniquePageCount int `bson:"uniquePageCount"`
	FilePageCount   int `bson:"filePageCount"`
	ErrorPageCount  int `bson:"errorPageCount"`
}

// RecountPages counts an item's stored pages and records the counters on
// its document.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) RecountPages(ctx context.Context, crawlID string) (PageCounts, error) {
	var pc PageCounts
	type row struct {
		URL     string `bson:"url"`
		IsFile  bool   `bson:"isFile"`
		IsError bool   `bson:"isError"`
	}
	opts := options.Find().SetProjection(bson.M{"url": 1, "isFile": 1, "isError": 1, "_id": 0})
	cur, err := m.coll(collPages).Find(ctx, bson.M{"crawl_id": crawlID}, opts)
	if err != nil {
		return pc, fmt.Errorf("counting pages: %w", err)
	}
	defer cur.Close(ctx)
	urls := map[string]struct{}{}
	for cur.Next(ctx) {
		var r row
		if err := cur.Decode(&r); err != nil {
			return pc, fmt.Errorf("counting pages: %w", err)
		}
		pc.PageCount++
		urls[r.URL] = struct{}{}
		if r.IsFile {
			pc.FilePageCount++
		}
		if r.IsError {
			pc.ErrorPageCount++
		}
	}
	if err := cur.Err(); err != nil {
		return pc, fmt.Errorf("counting pages: %w", err)
	}
	pc.UniquePageCount = len(urls)
	return pc, m.setPageCounts(ctx, crawlID, pc)
}

// ClearPages deletes an item's pages and sets its counters to 0: what a
// failed or canceled crawl keeps.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) ClearPages(ctx context.Context, crawlID string) error {
	if err := m.DeletePages(ctx, []string{crawlID}); err != nil {
		return err
	}
	return m.setPageCounts(ctx, crawlID, PageCounts{})
}

func (m *Mongo) setPageCounts(ctx context.Context, crawlID string, pc PageCounts) error {
	res, err := m.coll(collCrawls).UpdateOne(ctx, bson.M{"_id": crawlID}, bson.M{"$set": pc})
	if err != nil {
		return fmt.Errorf("recording page counts: %w", err)
	}
	if res.MatchedCount == 0 {
		return errCrawlNotFound
	}
	return nil
}
