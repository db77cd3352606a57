package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// storeCleanupTimeout bounds store writes that must happen after the
// request's context ended.
const storeCleanupTimeout = 10 * time.Second

// maxIDAttempts bounds the suffixes tried when a crawl id is taken (two
// starts of one workflow in the same second).
const maxIDAttempts = 5

// crawlID is upstream's id: prefix, UTC start second and the workflow id's
// first 12 hex digits, plus "-<n>" when that second is already taken.
func crawlID(prefix string, wf *store.CrawlConfig, started string, attempt int) string {
	id := fmt.Sprintf("%s-%s-%s", prefix, started, strings.ReplaceAll(wf.ID.String(), "-", "")[:12])
	if attempt > 0 {
		id += fmt.Sprintf("-%d", attempt+1)
	}
	return id
}

// startCrawl records a new crawl of wf and launches it. The crawl
// document (state starting) is written first: it is the source of truth,
// and a launch failure then marks it failed instead of leaving a CrawlJob
// nobody knows about; a crash between the two writes leaves a starting
// crawl that the leader launches later (relaunchOrphans). The org's
// concurrency limit is the operator's business (waiting_org_limit).
func (s *Server) startCrawl(ctx context.Context, org *store.Org, wf *store.CrawlConfig, userID uuid.UUID, manual bool) (string, error) {
	// The channel may have left the configuration since the workflow
	// chose it.
	channel, err := s.crawlerChannel(channelOf(wf.CrawlerChannel))
	if err != nil {
		return "", err
	}
	proxyID, err := s.crawlProxy(ctx, org, wf, manual)
	if err != nil {
		return "", err
	}
	cfg := withPageQuota(org, wf.Config)
	if err := checkSeedFileChannel(&cfg, channel); err != nil {
		return "", err
	}
	seedFile, err := s.seedFileLink(ctx, org, &cfg)
	if err != nil {
		return "", err
	}
	configJSON, err := seededConfigJSON(cfg, seedFile)
	if err != nil {
		return "", fmt.Errorf("encoding crawl config: %w", err)
	}
	crawl := newCrawl(wf, cfg, userID, manual, s.now())
	crawl.CrawlerChannel, crawl.Image, crawl.ProxyID = channel.ID, channel.Image, proxyID
	if err := s.insertCrawl(ctx, crawl, wf, manual); err != nil {
		return "", err
	}
	spec, err := s.crawlJobSpec(ctx, org, wf, crawl)
	spec.SeedFileURL = seedFile
	if err == nil {
		err = s.launcher.LaunchCrawl(ctx, k8s.CrawlRequest{Spec: spec, ConfigJSON: configJSON})
	}
	if err != nil {
		s.failUnlaunched(crawl)
		return "", fmt.Errorf("launching crawl %s: %w", crawl.ID, err)
	}
	return crawl.ID, nil
}

// withPageQuota returns cfg with the org's page limit, when it has one:
// upstream forces it on every crawl, even where the workflow asks for fewer.
func withPageQuota(org *store.Org, cfg store.RawCrawlConfig) store.RawCrawlConfig {
	if org.Quotas.MaxPagesPerCrawl > 0 {
		cfg.Limit = org.Quotas.MaxPagesPerCrawl
	}
	return cfg
}

// newCrawl is the crawl document of a start (spec §5.7), id still unset.
func newCrawl(wf *store.CrawlConfig, cfg store.RawCrawlConfig, userID uuid.UUID, manual bool, now time.Time) *store.Crawl {
	return &store.Crawl{
		Type: store.TypeCrawl, UserID: userID, OID: wf.OID, CID: wf.ID, CIDRev: wf.Rev, Name: wf.Name,
		Started: now, State: store.StateStarting, Tags: slices.Clone(wf.Tags), Schedule: wf.Schedule,
		JobType: wf.JobType, Config: cfg, CrawlTimeout: wf.CrawlTimeout, MaxCrawlSize: wf.MaxCrawlSize,
		Scale: max(wf.Scale, 1), ProfileID: wf.ProfileID, Manual: manual,
		FirstSeed: wf.FirstSeed, // kept by the store for a seed-file crawl only
	}
}

// insertCrawl stores crawl under a fresh id, trying suffixes when the id
// of this second is taken.
func (s *Server) insertCrawl(ctx context.Context, crawl *store.Crawl, wf *store.CrawlConfig, manual bool) error {
	prefix := "sched"
	if manual {
		prefix = "manual"
	}
	started := crawl.Started.Format("20060102150405")
	for attempt := 0; ; attempt++ {
		crawl.ID = crawlID(prefix, wf, started, attempt)
		err := s.store.AddCrawl(ctx, crawl)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrCrawlAlreadyRunning):
			return errCrawlAlreadyRunning
		case !errors.Is(err, store.ErrCrawlExists) || attempt+1 == maxIDAttempts:
			return fmt.Errorf("recording crawl: %w", err)
		}
	}
}

// orphanAge is how long a crawl may stay "starting" before the leader
// suspects that its launch never happened (a crash between recording and
// launching) and launches it again.
const orphanAge = 2 * time.Minute

// relaunchOrphans launches again the crawls recorded as starting for a
// while. Launching is idempotent: an existing CrawlJob is left as it is,
// so only crawls whose launch was lost get their CrawlJob now.
func (s *Server) relaunchOrphans(ctx context.Context) error {
	crawls, _, err := s.store.ListCrawls(ctx, uuid.Nil, store.CrawlFilter{AllOrgs: true, States: []string{store.StateStarting}})
	if err != nil {
		return fmt.Errorf("listing starting crawls: %w", err)
	}
	for i := range crawls {
		crawl := &crawls[i]
		if s.now().Sub(crawl.Started) < orphanAge {
			continue
		}
		org, err := s.store.GetOrg(ctx, crawl.OID)
		if err != nil {
			return err
		}
		wf, err := s.store.GetCrawlConfig(ctx, crawl.OID, crawl.CID)
		if err != nil {
			return err
		}
		seedFile, err := s.seedFileLink(ctx, org, &crawl.Config)
		if err != nil {
			return err
		}
		configJSON, err := seededConfigJSON(crawl.Config, seedFile)
		if err != nil {
			return err
		}
		spec, err := s.crawlJobSpec(ctx, org, wf, crawl)
		if err != nil {
			return err
		}
		spec.SeedFileURL = seedFile
		if err := s.launcher.LaunchCrawl(ctx, k8s.CrawlRequest{Spec: spec, ConfigJSON: configJSON}); err != nil {
			return fmt.Errorf("relaunching crawl %s: %w", crawl.ID, err)
		}
	}
	return nil
}

// crawlJobSpec is the CrawlJob of a recorded crawl. A crawl with a
// profile loads its file (PROFILE_FILENAME upstream).
func (s *Server) crawlJobSpec(ctx context.Context, org *store.Org, wf *store.CrawlConfig, crawl *store.Crawl) (trawlerv1.CrawlJobSpec, error) {
	storageName, storagePath := s.orgStorage(org)
	filename := wf.CrawlFilenameTemplate
	// A template saved before templates were checked may point outside
	// the org's folder; such a crawl gets the default name instead.
	if filename == "" || storageNameProblem(filename) != "" {
		filename = s.cfg.DefaultFilenameTemplate
	}
	spec := trawlerv1.CrawlJobSpec{
		ID: crawl.ID, CID: wf.ID.String(), OID: org.ID.String(), UserID: crawl.UserID.String(),
		Scale: int32(crawl.Scale), Manual: crawl.Manual, CrawlTimeout: crawl.CrawlTimeout,
		MaxCrawlSize: crawl.MaxCrawlSize, ConfigMap: k8s.CrawlConfigMapName(crawl.ID),
		StorageName: storageName, StoragePath: storagePath, StoreFilename: filename,
		CrawlerChannel: crawl.CrawlerChannel, ProxyID: crawl.ProxyID,
	}
	if crawl.ProfileID != nil {
		p, err := s.store.GetProfile(ctx, org.ID, *crawl.ProfileID)
		if err != nil {
			return spec, fmt.Errorf("profile of crawl %s: %w", crawl.ID, err)
		}
		spec.ProfileFilename = p.Resource.Filename
	}
	return spec, nil
}

// orgStorage is the storage (secret storage-<name>) and STORE_PATH of the
// org's files: the named storage in the org's folder ("<oid>/"), or the
// org's own storage (secret storage-<oid>) at its root.
func (s *Server) orgStorage(org *store.Org) (name, path string) {
	if isCustomStorage(org) {
		return org.ID.String(), ""
	}
	if org.Storage.Name == "" {
		return k8s.DefaultStorageName, org.Storage.Path
	}
	return org.Storage.Name, org.Storage.Path
}

// isCustomStorage reports an org that brought its own S3 storage.
func isCustomStorage(org *store.Org) bool {
	return org.Storage.Type != "" && org.Storage.Type != "default"
}

// failUnlaunched marks a crawl whose CrawlJob could not be created as
// failed, so its workflow does not look busy forever. It runs even when
// the request's context is gone.
func (s *Server) failUnlaunched(crawl *store.Crawl) {
	ctx, cancel := context.WithTimeout(context.Background(), storeCleanupTimeout)
	defer cancel()
	finished := s.now()
	_, _, err := s.store.SetCrawlState(ctx, crawl.ID, store.StateFailed, store.ActiveStates,
		store.CrawlStateExtra{Finished: &finished})
	if err == nil {
		err = s.finishCrawl(ctx, crawl.ID)
	}
	if err != nil {
		s.log.Error("marking unlaunched crawl failed", "crawl", crawl.ID, "err", err)
	}
}

// Why startIdleCrawl started nothing.
var (
	errCrawlAlreadyRunning = badRequest("crawl_already_running")
	errStorageQuotaReached = forbidden("storage_quota_reached")
	errExecQuotaReached    = forbidden("exec_minutes_quota_reached")
	errOrgReadOnly         = forbidden("org_set_to_read_only")
)

// startIdleCrawl starts a crawl of wf, for a user's "run" and for the
// scheduler alike, unless the workflow has a crawl that has not ended
// (errCrawlAlreadyRunning), the org's storage is full
// (errStorageQuotaReached), its execution time is used up
// (errExecQuotaReached), its channel is gone (errCrawlerNotFound) or its
// proxy may not be used (errProxyNotFound); a failed start is a 500 "Error starting
// crawl". The check below answers most cases; the store's guard (one
// unfinished crawl per workflow, see store.AddCrawl) settles two starts of
// the same workflow at the same moment, even on two replicas.
func (s *Server) startIdleCrawl(ctx context.Context, org *store.Org, wf *store.CrawlConfig, userID uuid.UUID, manual bool) (string, error) {
	active, err := s.store.ActiveCrawls(ctx, wf.OID, wf.ID)
	if err != nil {
		return "", err
	}
	if len(active) > 0 {
		return "", errCrawlAlreadyRunning
	}
	if err := s.quotaAllowsStart(org); err != nil {
		return "", err
	}
	id, err := s.startCrawl(ctx, org, wf, userID, manual)
	var refused *apiError
	switch {
	case errors.As(err, &refused) && refused.status < http.StatusInternalServerError:
		// Already running, a channel gone, a seed file gone or one the
		// channel cannot read: the user's to fix, not a failed start.
		return "", err
	case err != nil:
		return "", internal("Error starting crawl", err)
	}
	return id, nil
}

// quotaAllowsStart checks the org before a start: read-only, then its
// quotas, storage first, then execution time (upstream-2026 §6.6).
func (s *Server) quotaAllowsStart(org *store.Org) error {
	switch {
	case org.ReadOnly:
		return errOrgReadOnly
	case org.StorageQuotaReached():
		return errStorageQuotaReached
	case org.ExecMinutesQuotaReached(s.now()):
		return errExecQuotaReached
	}
	return nil
}

// recordSkippedCrawl records a scheduled crawl that the org's quotas
// keep from starting: a finished crawl in a skipped state (upstream's
// operator decides the same at the crawl's first sync), counted on its
// workflow like any failed crawl. No CrawlJob is created.
func (s *Server) recordSkippedCrawl(ctx context.Context, org *store.Org, wf *store.CrawlConfig, state string) (string, error) {
	now := s.now()
	crawl := newCrawl(wf, withPageQuota(org, wf.Config), wf.ModifiedBy, false, now)
	crawl.State, crawl.Finished = state, &now
	crawl.CrawlerChannel = channelOf(wf.CrawlerChannel)
	if err := s.insertCrawl(ctx, crawl, wf, false); err != nil {
		return "", err
	}
	return crawl.ID, s.finishCrawl(ctx, crawl.ID)
}
