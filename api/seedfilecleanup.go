package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/trawlerhq/trawler/store"
)

// cleanupSeedFiles is one run of the seed-file cleanup (upstream-2026
// §4.5), which the leader's scheduler runs on Config.SeedFileCleanupSchedule:
// every seed file older than Config.SeedFileCleanupAfter that no workflow
// and no crawl references is deleted, its document first (the store
// checks the references in the same step), then its object. The run is
// recorded in jobs; it fails if any deletion failed, and the next run
// tries again what is left.
func (s *Server) cleanupSeedFiles(ctx context.Context) (*store.BackgroundJob, error) {
	job, err := s.store.StartSeedFileCleanup(ctx, s.now())
	if err != nil {
		return nil, err
	}
	runErr := s.deleteUnusedSeedFiles(ctx)
	if err := s.store.FinishJob(ctx, job.ID, runErr == nil, s.now()); err != nil {
		return job, errors.Join(runErr, err)
	}
	return job, runErr
}

func (s *Server) deleteUnusedSeedFiles(ctx context.Context) error {
	files, err := s.store.SeedFilesCreatedBefore(ctx, s.now().Add(-s.cfg.SeedFileCleanupAfter))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		gone, err := s.store.DeleteSeedFile(ctx, f.OID, f.ID)
		switch {
		case errors.Is(err, store.ErrSeedFileInUse), errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		// A file whose org is gone is deleted from the storage it names.
		org, err := s.store.GetOrg(ctx, f.OID)
		if errors.Is(err, store.ErrNotFound) {
			org, err = &store.Org{ID: f.OID}, nil
		}
		if err == nil {
			err = s.deleteFiles(ctx, org, []*store.Crawl{{ID: "seed-file", Files: []store.CrawlFile{gone.File()}}})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("seed file %s: %w", f.ID, err))
		}
	}
	return errors.Join(errs...)
}
