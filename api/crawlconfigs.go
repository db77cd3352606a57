package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// workflowParam loads the {cid} workflow of the current org (inactive ones
// too). Unknown, malformed and other orgs' ids are all 404.
func (s *Server) workflowParam(c echo.Context) (*store.CrawlConfig, error) {
	raw := c.Param("cid")
	cid, err := uuid.Parse(raw)
	if err != nil {
		return nil, crawlConfigNotFound(raw)
	}
	wf, err := s.store.GetCrawlConfig(c.Request().Context(), currentOrg(c).ID, cid)
	if err != nil {
		return nil, notFoundAs(err, "Crawl Config '"+raw+"' not found")
	}
	return wf, nil
}

// workflowsOut converts workflows with their users' names and the
// last-crawl fields of their current crawls.
//
// The stored last-crawl fields are written when a crawl starts and when
// it has ended and its post-crawl tasks have run. In between, the crawl
// document is newer: while the crawl runs, and after it has ended until
// those tasks recompute the workflow (for a cancel, after the crawl's
// Redis has been drained). So a workflow whose crawl is not folded in yet
// shows that crawl's own fields, read after the workflow: live while it
// runs, final once it has ended. A crawl's state only moves forward (every
// transition is a compare-and-set), so neither does what a client polling
// the workflow sees.
func (s *Server) workflowsOut(c echo.Context, wfs []store.CrawlConfig) ([]crawlConfigOut, error) {
	ctx := c.Request().Context()
	users, err := s.store.ListUsersByIDs(ctx, workflowUserIDs(wfs...))
	if err != nil {
		return nil, err
	}
	var profileIDs []profileKey
	for i := range wfs {
		if id := wfs[i].ProfileID; id != nil {
			profileIDs = append(profileIDs, profileKey{wfs[i].OID, *id})
		}
	}
	profiles, err := s.profileNames(ctx, profileIDs)
	if err != nil {
		return nil, err
	}
	out := make([]crawlConfigOut, len(wfs))
	for i := range wfs {
		wf := &wfs[i]
		if wf.IsCrawlRunning && wf.LastCrawlID != nil {
			crawl, err := s.store.GetCrawl(ctx, wf.OID, *wf.LastCrawlID)
			switch {
			case err == nil:
				wf.LastCrawl = store.LastCrawlOf(crawl)
			case !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
		}
		out[i] = toCrawlConfigOut(wf, users)
		if at := wf.LastCrawlPausedAt; at != nil {
			expiry := at.Add(s.cfg.PausedCrawlLimit)
			out[i].LastCrawlPausedExpiry = fmtTimePtr(&expiry)
		}
		out[i].ProfileName = nameOf(profiles, wf.OID, wf.ProfileID)
	}
	return out, nil
}

func (s *Server) listCrawlConfigs(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	f := store.CrawlConfigFilter{
		CreatedBy: q.uuid("userid"), ModifiedBy: q.uuid("modifiedBy"),
		FirstSeed: q.optStr("firstSeed"), Name: q.optStr("name"), Description: q.optStr("description"),
		Tags: c.QueryParams()["tag"], Schedule: q.bool("schedule"),
		SortBy: q.str("sortBy"), SortDirection: q.sortDirection(-1),
		Paging: p.paging(),
	}
	if err := q.err(); err != nil {
		return err
	}
	wfs, total, err := s.store.ListCrawlConfigs(c.Request().Context(), currentOrg(c).ID, f)
	if err != nil {
		return err
	}
	items, err := s.workflowsOut(c, wfs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

func (s *Server) getCrawlConfig(c echo.Context) error {
	wf, err := s.workflowParam(c)
	if err != nil {
		return err
	}
	out, err := s.workflowsOut(c, []store.CrawlConfig{*wf})
	if err != nil {
		return err
	}
	// A workflow with a profile goes through the profile's proxy, which
	// upstream shows here.
	if wf.ProfileID != nil {
		p, err := s.store.GetProfile(c.Request().Context(), wf.OID, *wf.ProfileID)
		switch {
		case err == nil && p.ProxyID != "":
			out[0].ProxyID = &p.ProxyID
		case err == nil:
			out[0].ProxyID = nil
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	return c.JSON(http.StatusOK, out[0])
}

func (s *Server) createCrawlConfig(c echo.Context) error {
	var in crawlConfigIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(s.cfg.MaxCrawlScale, s.cfg.AllowedInternal); err != nil {
		return err
	}
	ctx := c.Request().Context()
	org, user := currentOrg(c), currentUser(c)
	wf := toStoreCrawlConfig(&in, org.ID, user.ID, s.now())
	channel, err := s.crawlerChannel(wf.CrawlerChannel)
	if err != nil {
		return err
	}
	file, err := s.workflowSeedFile(ctx, org.ID, &wf.Config)
	if err != nil {
		return err
	}
	if err := checkSeedFileChannel(&wf.Config, channel); err != nil {
		return err
	}
	if file != nil {
		wf.FirstSeed, wf.SeedCount = file.FirstSeed, file.SeedCount
	}
	if in.ProfileID != nil {
		if wf.ProfileID, err = s.resolveProfile(ctx, org, *in.ProfileID); err != nil {
			return err
		}
	}
	// A workflow with a profile goes through the profile's proxy, so its
	// own is stored as null (upstream).
	if id := in.ProxyID.Value; wf.ProfileID == nil && in.ProxyID.given() && id != "" {
		if err := s.usableProxy(org, id); err != nil {
			return err
		}
		wf.ProxyID = &id
	}
	// Upstream stores the org's page limit in the workflow too.
	wf.Config = withPageQuota(org, wf.Config)
	// A workflow whose crawls could not launch is refused before it
	// exists, so a refused runNow leaves nothing behind.
	if err := checkLaunchable(wf.Config); err != nil {
		return err
	}
	if err := s.store.CreateCrawlConfig(ctx, wf); err != nil {
		return err
	}
	s.notifyWorkflowsChanged()
	out := crawlConfigAddedOut{Added: true, ID: wf.ID, StorageQuotaReached: org.StorageQuotaReached(),
		ExecMinutesQuotaReached: org.ExecMinutesQuotaReached(s.now())}
	if in.RunNow != nil && *in.RunNow {
		id, err := s.startIdleCrawl(ctx, org, wf, user.ID, true)
		switch {
		case errors.Is(err, errStorageQuotaReached), errors.Is(err, errExecQuotaReached), errors.Is(err, errOrgReadOnly):
			// The workflow is created all the same; the quota flags and
			// errorDetail say why it did not run.
			out.ErrorDetail = errorDetailOf(err)
		case err != nil:
			return err
		default:
			out.RunNowJob = &id
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) updateCrawlConfig(c echo.Context) error {
	wf, err := s.workflowParam(c)
	if err != nil {
		return err
	}
	var in crawlConfigUpdateIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(s.cfg.MaxCrawlScale, s.cfg.AllowedInternal); err != nil {
		return err
	}
	// Upstream leaves a PATCH's channel unchecked, so a workflow could
	// name a channel no crawl can run on; it is refused like on create.
	if in.CrawlerChannel.given() {
		if _, err := s.crawlerChannel(in.CrawlerChannel.Value); err != nil {
			return err
		}
	}
	if in.ProfileID.given() {
		id, err := s.resolveProfile(c.Request().Context(), currentOrg(c), in.ProfileID.Value)
		if err != nil {
			return err
		}
		if err := s.profileProxyUsable(c.Request().Context(), currentOrg(c), id); err != nil {
			return err
		}
	}
	if id := in.ProxyID.Value; in.ProxyID.given() && id != "" && in.proxyApplies(wf) {
		if err := s.usableProxy(currentOrg(c), id); err != nil {
			return err
		}
	}
	ch := diffWorkflow(&in, wf)
	if err := s.checkWorkflowSeeds(c, wf, &in, &ch); err != nil {
		return err
	}
	if ch.update.Config.Set {
		if err := checkLaunchable(withPageQuota(currentOrg(c), ch.update.Config.Value)); err != nil {
			return err
		}
	}
	out := crawlConfigUpdatedOut{Updated: true, SettingsChanged: ch.settingsChanged, MetadataChanged: ch.metadataChanged}
	if !ch.settingsChanged && !ch.metadataChanged {
		return c.JSON(http.StatusOK, out)
	}
	if err := s.applyWorkflowChange(c, wf, ch); err != nil {
		return err
	}
	s.dropOldSeedFile(c, wf, ch)
	return c.JSON(http.StatusOK, out)
}

// resolveProfile reads a workflow's profileid: "" is none, anything else
// must be a profile of the org (upstream's 400 invalid_profile_id).
func (s *Server) resolveProfile(ctx context.Context, org *store.Org, raw string) (*uuid.UUID, error) {
	if raw == "" {
		return nil, nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return nil, badRequest("invalid_profile_id")
	}
	if _, err := s.store.GetProfile(ctx, org.ID, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, badRequest("invalid_profile_id")
		}
		return nil, err
	}
	return &id, nil
}

// profileProxyUsable checks that the org may use the proxy of profile id
// (nil: none), which a workflow that takes the profile goes through.
func (s *Server) profileProxyUsable(ctx context.Context, org *store.Org, id *uuid.UUID) error {
	if id == nil {
		return nil
	}
	p, err := s.store.GetProfile(ctx, org.ID, *id)
	if err != nil {
		return err
	}
	if p.ProxyID == "" {
		return nil
	}
	return s.usableProxy(org, p.ProxyID)
}

// checkLaunchable refuses (422 on body.config) a crawl config that no
// launch could hand the crawler.
func checkLaunchable(cfg store.RawCrawlConfig) error {
	configJSON, err := crawlerConfigJSON(cfg)
	if err != nil {
		return fmt.Errorf("encoding crawl config: %w", err)
	}
	var v validator
	v.configSize(configJSON, "body", "config")
	return v.err()
}

// applyWorkflowChange writes a change (with a revision of the previous
// settings when they changed) and tells the scheduler about new schedules.
func (s *Server) applyWorkflowChange(c echo.Context, wf *store.CrawlConfig, ch workflowChange) error {
	ch.update.Modified, ch.update.ModifiedBy = s.now(), currentUser(c).ID
	var rev *store.ConfigRevision
	if ch.settingsChanged {
		rev = toRevision(wf)
	}
	_, err := s.store.UpdateCrawlConfig(c.Request().Context(), wf.OID, wf.ID, ch.update, rev)
	if errors.Is(err, store.ErrNotFound) {
		return badRequest("config_not_found") // deactivated meanwhile
	}
	if err != nil {
		return err
	}
	if ch.scheduleChanged {
		s.notifyWorkflowsChanged()
	}
	return nil
}

// deleteCrawlConfig deletes a workflow that never ran and deactivates one
// that did, so its crawls keep their workflow.
func (s *Server) deleteCrawlConfig(c echo.Context) error {
	wf, err := s.workflowParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	active, err := s.store.ActiveCrawls(ctx, wf.OID, wf.ID)
	if err != nil {
		return err
	}
	if len(active) > 0 {
		return badRequest("crawl_running_cant_deactivate")
	}
	out := crawlConfigDeletedOut{Success: true, Status: "deleted"}
	if wf.CrawlAttemptCount == 0 {
		err = notFoundAs(s.store.DeleteCrawlConfig(ctx, wf.OID, wf.ID), "failed_to_delete")
	} else {
		out.Status = "deactivated"
		err = notFoundAs(s.store.DeactivateCrawlConfig(ctx, wf.OID, wf.ID), "failed_to_deactivate")
	}
	if err != nil {
		return err
	}
	s.notifyWorkflowsChanged()
	return c.JSON(http.StatusOK, out)
}

func (s *Server) listRevisions(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	if err := q.err(); err != nil {
		return err
	}
	wf, err := s.workflowParam(c)
	if err != nil {
		return err
	}
	revs, total, err := s.store.ListRevisions(c.Request().Context(), wf.ID, p.paging())
	if err != nil {
		return err
	}
	items := make([]revisionOut, len(revs))
	for i := range revs {
		items[i] = toRevisionOut(&revs[i])
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

func (s *Server) crawlConfigTags(c echo.Context) error {
	tags, err := s.store.CrawlConfigTags(c.Request().Context(), currentOrg(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, nonNil(tags))
}

func (s *Server) crawlConfigSearchValues(c echo.Context) error {
	sv, err := s.store.CrawlConfigSearchValues(c.Request().Context(), currentOrg(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toCrawlConfigSearchOut(sv))
}

// runCrawlConfig starts a crawl of an active workflow that has none
// running, unless the org's storage is full.
func (s *Server) runCrawlConfig(c echo.Context) error {
	wf, err := s.workflowParam(c)
	if err != nil {
		return err
	}
	if wf.Inactive {
		return crawlConfigNotFound(c.Param("cid"))
	}
	id, err := s.startIdleCrawl(c.Request().Context(), currentOrg(c), wf, currentUser(c).ID, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, startedOut{Started: id})
}
