package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Seed files (upstream-2026.md §4) are text files of URLs, one a line,
// that a workflow crawls instead of its own seeds. Upstream keeps them in
// file_uploads, typed so that other kinds of files may join them.

// TypeSeedFile is the type of a seed file's document.
const TypeSeedFile = "seedFile"

// SeedFile is an uploaded seed file. Name is the storage key: relative to
// the storage DefStorageName names, or a full URL in the org's own.
type SeedFile struct {
	ID               uuid.UUID `bson:"_id"`
	Type             string    `bson:"type"`
	OID              uuid.UUID `bson:"oid"`
	Name             string    `bson:"filename"`
	Hash             string    `bson:"hash"`
	Size             int64     `bson:"size"`
	DefStorageName   *string   `bson:"def_storage_name"`
	OriginalFilename string    `bson:"originalFilename"`
	Mime             string    `bson:"mime"`
	UserID           uuid.UUID `bson:"userid"`
	UserName         string    `bson:"userName"`
	Created          time.Time `bson:"created"`
	FirstSeed        string    `bson:"firstSeed"`
	SeedCount        int64     `bson:"seedCount"`
}

// File is the seed file as a crawl file record, which is how the API
// finds, signs and deletes any stored object of an org.
func (f *SeedFile) File() CrawlFile {
	return CrawlFile{Filename: f.Name, Hash: f.Hash, Size: f.Size, DefStorageName: f.DefStorageName}
}

// SeedFileFilter selects and orders seed files for ListSeedFiles.
type SeedFileFilter struct {
	// SortBy is one of seedFileSorts ("" is created).
	SortBy string
	// SortDirection is 1 or -1 (0 means -1).
	SortDirection int
	Paging
}

// seedFileSorts are the sort keys of the seed file list (§4.2).
var seedFileSorts = map[string]bool{"created": true, "size": true, "mime": true, "userName": true,
	"type": true, "firstSeed": true, "seedCount": true}

// ErrSeedFileInUse: a workflow or a crawl still references the seed file.
var ErrSeedFileInUse = Invalid("seed_file_in_use")

var errSeedFileNotFound = NotFound("file_not_found")

// AddSeedFile records a stored seed file and recomputes the org's stored
// bytes.
//
// Errors: Conflict("file_exists") if the id is taken.
func (m *Mongo) AddSeedFile(ctx context.Context, f *SeedFile) error {
	f.Type = TypeSeedFile
	if _, err := m.coll(collFileUploads).InsertOne(ctx, f); err != nil {
		if isDuplicate(err) {
			return Conflict("file_exists")
		}
		return fmt.Errorf("inserting seed file: %w", err)
	}
	return m.RecomputeOrgBytesStored(ctx, f.OID)
}

// GetSeedFile returns seed file id of org oid.
//
// Errors: NotFound("file_not_found"), also for another org's id.
func (m *Mongo) GetSeedFile(ctx context.Context, oid, id uuid.UUID) (*SeedFile, error) {
	var f SeedFile
	err := m.coll(collFileUploads).FindOne(ctx, bson.M{"_id": id, "oid": oid, "type": TypeSeedFile}).Decode(&f)
	if err != nil {
		return nil, notFoundOr(err, errSeedFileNotFound, "finding seed file")
	}
	return &f, nil
}

// ListSeedFiles returns one page of the org's seed files and their total.
//
// Errors: Invalid("invalid_sort_by"), Invalid("invalid_sort_direction").
func (m *Mongo) ListSeedFiles(ctx context.Context, oid uuid.UUID, f SeedFileFilter) ([]SeedFile, int64, error) {
	by := f.SortBy
	if by == "" {
		by = "created"
	}
	if !seedFileSorts[by] {
		return nil, 0, Invalid("invalid_sort_by")
	}
	dir, err := sortDirection(f.SortDirection)
	if err != nil {
		return nil, 0, err
	}
	// _id last so that pages never overlap when sort keys tie.
	opts := options.Find().SetSort(bson.D{{Key: by, Value: dir}, {Key: "_id", Value: dir}})
	f.apply(opts)
	return findPage[SeedFile](ctx, m.coll(collFileUploads), bson.M{"oid": oid, "type": TypeSeedFile}, opts, "seed files")
}

// SeedFileInUse reports whether a workflow (inactive ones too) or a crawl
// of the org references seed file id in its config.
func (m *Mongo) SeedFileInUse(ctx context.Context, oid, id uuid.UUID) (bool, error) {
	filter := bson.M{"oid": oid, "config.seedFileId": id}
	for _, c := range []string{collConfigs, collCrawls} {
		n, err := m.coll(c).CountDocuments(ctx, filter, options.Count().SetLimit(1))
		if err != nil {
			return false, fmt.Errorf("counting references to seed file: %w", err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// DeleteSeedFile deletes the document of a seed file no workflow or crawl
// references, recomputes the org's stored bytes and returns the file,
// whose object is the caller's business.
//
// Errors: NotFound("file_not_found"); ErrSeedFileInUse.
func (m *Mongo) DeleteSeedFile(ctx context.Context, oid, id uuid.UUID) (*SeedFile, error) {
	used, err := m.SeedFileInUse(ctx, oid, id)
	if err != nil {
		return nil, err
	}
	if used {
		return nil, ErrSeedFileInUse
	}
	var f SeedFile
	err = m.coll(collFileUploads).FindOneAndDelete(ctx, bson.M{"_id": id, "oid": oid, "type": TypeSeedFile}).Decode(&f)
	if err != nil {
		return nil, notFoundOr(err, errSeedFileNotFound, "deleting seed file")
	}
	return &f, m.RecomputeOrgBytesStored(ctx, oid)
}
