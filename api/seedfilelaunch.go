package api

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// How workflows use seed files (upstream-2026.md §4.3, §4.4).

var (
	// errSeedFileNotSupported: the workflow's channel runs a crawler that
	// reads no seed files (0.11).
	errSeedFileNotSupported = badRequest("seed_file_not_supported_by_crawler")
	// errSeedsOrSeedFile: a config needs seeds or a seed file, not both.
	errSeedsOrSeedFile = badRequest("use_one_of_seeds_or_seedfile")
	// errNoSeedFile: a config names a seed file the org does not have.
	errNoSeedFile = notFound("file_not_found")
)

// seedFileLinkTTL is the lifetime of the link a crawler downloads its
// seed file by: the longest a signature allows, as the crawler fetches
// the file again at every start, restarts and resumes included.
const seedFileLinkTTL = 7 * 24 * time.Hour

// checkSeedFileChannel refuses a seed file on a channel whose crawler
// cannot read one: upstream compares image versions, trawler knows each
// channel's protocol, and only 1.x crawlers take a seed file by URL.
func checkSeedFileChannel(cfg *store.RawCrawlConfig, ch k8s.CrawlerChannel) error {
	if cfg.SeedFileID != nil && ch.Protocol != k8s.ProtocolV1 {
		return errSeedFileNotSupported
	}
	return nil
}

// workflowSeedFile is the org's seed file a config names (nil for a config
// with seeds), checking that it names seeds or a file: not both, not
// neither.
func (s *Server) workflowSeedFile(ctx context.Context, oid uuid.UUID, cfg *store.RawCrawlConfig) (*store.SeedFile, error) {
	if cfg.SeedFileID == nil {
		if len(cfg.Seeds) == 0 {
			return nil, errSeedsOrSeedFile
		}
		return nil, nil
	}
	if len(cfg.Seeds) > 0 {
		return nil, errSeedsOrSeedFile
	}
	f, err := s.store.GetSeedFile(ctx, oid, *cfg.SeedFileID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoSeedFile
	}
	return f, err
}

// seedFileLink is the link the crawler of a crawl with config cfg
// downloads its seed file by ("" for a config with seeds): freshly signed
// at each launch, for the storage endpoint the crawler pods use.
func (s *Server) seedFileLink(ctx context.Context, org *store.Org, cfg *store.RawCrawlConfig) (string, error) {
	if cfg.SeedFileID == nil {
		return "", nil
	}
	f, err := s.store.GetSeedFile(ctx, org.ID, *cfg.SeedFileID)
	if errors.Is(err, store.ErrNotFound) {
		return "", errNoSeedFile
	}
	if err != nil {
		return "", err
	}
	file := f.File()
	b, key, err := s.fileObject(org, &file)
	if err != nil {
		return "", err
	}
	return b.PresignGetInternal(ctx, key, seedFileLinkTTL)
}

// checkWorkflowSeeds checks the seeds a PATCH leaves a workflow with: a
// new config needs seeds or a seed file of the org, and a seed file a 1.x
// channel. A config's seeds and seed file replace each other whole, so
// switching never keeps the other (upstream kept both unless the client
// emptied the other explicitly).
func (s *Server) checkWorkflowSeeds(c echo.Context, wf *store.CrawlConfig, in *crawlConfigUpdateIn, ch *workflowChange) error {
	cfg := &wf.Config
	if ch.update.Config.Set {
		cfg = &ch.update.Config.Value
		file, err := s.workflowSeedFile(c.Request().Context(), wf.OID, cfg)
		if err != nil {
			return err
		}
		ch.update.SeedFile = file
	}
	if cfg.SeedFileID == nil {
		return nil
	}
	channelID := channelOf(wf.CrawlerChannel)
	if in.CrawlerChannel.given() {
		channelID = in.CrawlerChannel.Value
	}
	channel, err := s.crawlerChannel(channelID)
	if err != nil {
		return err
	}
	return checkSeedFileChannel(cfg, channel)
}

// dropOldSeedFile deletes the seed file a workflow stopped using, as
// upstream does, unless another workflow or a crawl still uses it; that
// (and any failure) leaves the file, which the user may delete later.
func (s *Server) dropOldSeedFile(c echo.Context, wf *store.CrawlConfig, ch workflowChange) {
	old := wf.Config.SeedFileID
	if old == nil || !ch.update.Config.Set {
		return
	}
	if now := ch.update.Config.Value.SeedFileID; now != nil && *now == *old {
		return
	}
	ctx, org := c.Request().Context(), currentOrg(c)
	f, err := s.store.DeleteSeedFile(ctx, org.ID, *old)
	switch {
	case err == nil:
		s.deleteObjects(ctx, org, []store.CrawlFile{f.File()})
	case !errors.Is(err, store.ErrSeedFileInUse) && !errors.Is(err, store.ErrNotFound):
		s.log.Warn("deleting a seed file no longer used", "file", *old, "err", err)
	}
}
