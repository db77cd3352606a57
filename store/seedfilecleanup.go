package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// JobTypeCleanupSeedFiles is the type of a seed-file cleanup run
// (upstream's "cleanup-seed-files").
const JobTypeCleanupSeedFiles = "cleanup-seed-files"

// StartSeedFileCleanup records a new, unfinished seed-file cleanup run,
// with upstream's id seed-files-<10 hex digits>.
func (m *Mongo) StartSeedFileCleanup(ctx context.Context, now time.Time) (*BackgroundJob, error) {
	var b [5]byte
	_, _ = rand.Read(b[:])
	job := &BackgroundJob{ID: "seed-files-" + hex.EncodeToString(b[:]), Type: JobTypeCleanupSeedFiles,
		Started: now.UTC().Truncate(time.Millisecond), PreviousAttempts: []JobAttempt{}}
	if _, err := m.coll(collJobs).InsertOne(ctx, job); err != nil {
		return nil, fmt.Errorf("recording seed-file cleanup: %w", err)
	}
	return job, nil
}

// SeedFilesCreatedBefore lists the seed files of every org created
// before t, oldest first: the candidates of a cleanup run, which deletes
// those no workflow or crawl references (DeleteSeedFile checks).
func (m *Mongo) SeedFilesCreatedBefore(ctx context.Context, t time.Time) ([]SeedFile, error) {
	cur, err := m.coll(collFileUploads).Find(ctx, bson.M{"type": TypeSeedFile, "created": bson.M{"$lt": t}},
		options.Find().SetSort(bson.D{{Key: "created", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("listing old seed files: %w", err)
	}
	var out []SeedFile
	if err := cur.All(ctx, &out); err != nil {
		return nil, fmt.Errorf("reading old seed files: %w", err)
	}
	return out, nil
}
