package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Uploads are WACZ files users bring; they share the crawls collection
// as items of type "upload" (upstream-api-more.md §3.1), always complete.

// uploadDoc is the document of an upload: the fields of a crawl document
// an upload has, and no workflow fields.
type uploadDoc struct {
	ID            string      `bson:"_id"`
	Type          string      `bson:"type"`
	UserID        uuid.UUID   `bson:"userid"`
	OID           uuid.UUID   `bson:"oid"`
	Started       time.Time   `bson:"started"`
	Finished      time.Time   `bson:"finished"`
	Name          *string     `bson:"name"`
	Description   *string     `bson:"description"`
	State         string      `bson:"state"`
	Stats         *CrawlStats `bson:"stats"`
	Files         []CrawlFile `bson:"files"`
	Errors        []string    `bson:"errors"`
	CollectionIDs []uuid.UUID `bson:"collectionIds"`
	FileSize      int64       `bson:"fileSize"`
	FileCount     int         `bson:"fileCount"`
	Tags          []string    `bson:"tags"`
}

// Upload describes an upload to record.
type Upload struct {
	ID            string
	UserID        uuid.UUID
	OID           uuid.UUID
	Name          string
	Description   string
	Tags          []string
	CollectionIDs []uuid.UUID
	Files         []CrawlFile
	// At is both its start and finish time.
	At time.Time
}

// SaveUpload records upload u as complete, or with replace, overwrites
// the upload of the same id and org, and returns the upload it replaced
// (whose files the caller deletes). Its collections (old and new) and the
// org's bytesStored are recounted.
//
// Errors: NotFound("crawl_not_found") when replace is set and id is not
// an upload of the org; ErrCrawlExists for a new upload whose id is
// taken.
func (m *Mongo) SaveUpload(ctx context.Context, u *Upload, replace bool) (*Crawl, error) {
	doc := uploadDoc{ID: u.ID, Type: TypeUpload, UserID: u.UserID, OID: u.OID, Started: u.At, Finished: u.At,
		Name: &u.Name, Description: &u.Description, State: StateComplete, Files: u.Files, Errors: []string{},
		CollectionIDs: nonNilIDs(u.CollectionIDs), FileCount: len(u.Files), Tags: u.Tags}
	if doc.Tags == nil {
		doc.Tags = []string{}
	}
	for _, f := range u.Files {
		doc.FileSize += f.Size
	}
	var old *Crawl
	colls := slices.Clone(doc.CollectionIDs)
	if replace {
		// One write checks that id is an upload of the org and returns the
		// document it replaced, so the files and collections the caller
		// and the recount see are those the replace really dropped.
		old = &Crawl{}
		filter := bson.M{"_id": u.ID, "oid": u.OID, "type": TypeUpload}
		if err := m.coll(collCrawls).FindOneAndReplace(ctx, filter, doc).Decode(old); err != nil {
			return nil, notFoundOr(err, errCrawlNotFound, "replacing upload")
		}
		colls = append(colls, old.CollectionIDs...)
	} else if _, err := m.coll(collCrawls).InsertOne(ctx, doc); err != nil {
		if isDuplicate(err) {
			return nil, ErrCrawlExists
		}
		return nil, fmt.Errorf("inserting upload: %w", err)
	}
	if err := m.recomputeCollections(ctx, colls); err != nil {
		return nil, err
	}
	if err := m.RecomputeOrgBytesStored(ctx, u.OID); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return old, nil
}

func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}
