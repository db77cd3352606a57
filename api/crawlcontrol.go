package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/jsregex"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// controlFailed is the 400 of a CrawlJob change that failed; the cause is
// logged, users see upstream's {"error": ...} shape.
func (s *Server) controlFailed(c echo.Context, err error) error {
	s.log.Warn("changing crawljob failed", "path", c.Request().URL.Path, "err", err)
	return badRequest(map[string]string{"error": "crawljob_update_failed"})
}

// markCanceled ends a crawl whose CrawlJob is gone: nothing will finish
// it otherwise. A crawl that ended meanwhile keeps its state.
func (s *Server) markCanceled(ctx context.Context, crawl *store.Crawl) error {
	finished := s.now()
	changed, _, err := s.store.SetCrawlState(ctx, crawl.ID, store.StateCanceled, store.ActiveStates,
		store.CrawlStateExtra{Finished: &finished})
	if err != nil || !changed {
		return err
	}
	return s.finishCrawl(ctx, crawl.ID)
}

// finishCrawl runs the post-crawl tasks of a crawl the API ended and
// notifies the crawlFinished webhook (stored here, delivered in the
// background). A notification that cannot be stored is logged; the crawl
// has ended all the same, so the request does not fail for it.
func (s *Server) finishCrawl(ctx context.Context, id string) error {
	crawl, err := s.store.RunPostCrawlTasks(ctx, id)
	if err != nil || s.webhooks == nil {
		return err
	}
	if err := s.webhooks.CrawlFinished(ctx, crawl); err != nil {
		s.log.Error("storing crawlFinished notification", "crawl", id, "err", err)
	}
	return nil
}

// cancel deletes the crawl's CrawlJob (the operator then marks it
// canceled), or marks it canceled itself when the CrawlJob is gone.
func (s *Server) cancel(ctx context.Context, crawl *store.Crawl) error {
	err := s.launcher.CancelCrawl(ctx, crawl.ID)
	if errors.Is(err, k8s.ErrCrawlJobNotFound) {
		return s.markCanceled(ctx, crawl)
	}
	return err
}

// cancelCrawl is idempotent: an ended crawl answers success.
func (s *Server) cancelCrawl(c echo.Context) error {
	crawl, err := s.crawlParam(c, false, detailCrawlNotFound)
	if err != nil {
		return err
	}
	if store.IsActive(crawl.State) {
		if err := s.cancel(c.Request().Context(), crawl); err != nil {
			return s.controlFailed(c, err)
		}
	}
	return c.JSON(http.StatusOK, successOut{Success: true})
}

// stopCrawl asks for a graceful stop; idempotent like cancel.
func (s *Server) stopCrawl(c echo.Context) error {
	crawl, err := s.crawlParam(c, false, detailCrawlNotFound)
	if err != nil {
		return err
	}
	if !store.IsActive(crawl.State) {
		return c.JSON(http.StatusOK, successOut{Success: true})
	}
	ctx := c.Request().Context()
	err = s.launcher.StopCrawl(ctx, crawl.ID)
	switch {
	case errors.Is(err, k8s.ErrCrawlJobNotFound):
		err = s.markCanceled(ctx, crawl)
	case err != nil:
		return s.controlFailed(c, err)
	default:
		err = s.store.SetCrawlStopping(ctx, crawl.OID, crawl.ID, true)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, successOut{Success: true})
}

// scaleCrawl changes a running crawl's scale and, as upstream, its
// workflow's (with a revision), so the next crawl starts at that scale.
func (s *Server) scaleCrawl(c echo.Context) error {
	var in scaleIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Scale == nil {
		var v validator
		v.missing("body", "scale")
		return v.err()
	}
	// Out of range is a 400, not a validation 422: the bound is the
	// deployment's max_crawl_scale, not part of the request's shape.
	if *in.Scale < 1 || *in.Scale > s.cfg.MaxCrawlScale {
		return badRequest(fmt.Sprintf("invalid_scale: scale must be between 1 and %d", s.cfg.MaxCrawlScale))
	}
	crawl, err := s.crawlParam(c, false, crawlNotFoundID(c.Param("crawl_id")))
	if err != nil {
		return err
	}
	ctx, scale := c.Request().Context(), *in.Scale
	if err := s.launcher.ScaleCrawl(ctx, crawl.ID, int32(scale)); err != nil {
		return s.controlFailed(c, err)
	}
	if err := s.store.SetCrawlScale(ctx, crawl.OID, crawl.ID, scale); err != nil {
		return err
	}
	wf, err := s.store.GetCrawlConfig(ctx, crawl.OID, crawl.CID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if wf != nil && !wf.Inactive && wf.Scale != scale {
		ch := workflowChange{settingsChanged: true}
		ch.update.Scale = store.Some(scale)
		if err := s.applyWorkflowChange(c, wf, ch); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, scaledOut{Scaled: scale})
}

// regexParam compiles the regex query parameter (nil when absent and not
// required) with the crawler's JavaScript rules, so the queue shows what
// an exclusion of the same pattern would drop. An invalid one is
// upstream's 400 invalid_regex.
func regexParam(c echo.Context, required bool) (*jsregex.Regexp, error) {
	raw := c.QueryParam("regex")
	if raw == "" {
		if required {
			return nil, validationError{missingField("query", "regex")}
		}
		return nil, nil
	}
	re, err := jsregex.Compile(raw)
	if err != nil || len(raw) > maxPatternLen {
		return nil, badRequest("invalid_regex")
	}
	return re, nil
}

// exclusionParam is the regex of an exclusion change. The crawler
// compiles exclusions too, so one it would reject is a 422.
func exclusionParam(c echo.Context) (*jsregex.Regexp, error) {
	var v validator
	raw := c.QueryParam("regex")
	if raw == "" {
		v.missing("query", "regex")
	} else {
		v.regex(raw, "query", "regex")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	return jsregex.Compile(raw)
}

// crawlQueue shows a page of a running crawl's queue; a crawl without a
// reachable Redis (not started yet, or ended) has an empty queue.
func (s *Server) crawlQueue(c echo.Context) error {
	q := newQuery(c)
	offset, count := q.int("offset", -1), q.int("count", -1)
	switch {
	case offset < 0:
		q.v.missing("query", "offset")
	case offset > maxSkip:
		q.v.between(int64(offset), 0, maxSkip, "query", "offset")
	}
	switch {
	case count < 0:
		q.v.missing("query", "count")
	case count > maxPageSize:
		q.v.between(int64(count), 0, maxPageSize, "query", "count")
	}
	if err := q.err(); err != nil {
		return err
	}
	re, err := regexParam(c, false)
	if err != nil {
		return err
	}
	crawl, err := s.crawlParam(c, false, detailCrawlNotFound)
	if err != nil {
		return err
	}
	out, err := s.redis.queue(c.Request().Context(), crawl.ID, int64(offset), int64(count), re)
	if errors.Is(err, jsregex.ErrMatchLimit) {
		return err
	}
	if err != nil {
		s.log.Debug("crawl queue unavailable", "crawl", crawl.ID, "err", err)
		out = queueOut{Results: []string{}, Matched: []string{}}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) crawlQueueMatchAll(c echo.Context) error {
	re, err := regexParam(c, true)
	if err != nil {
		return err
	}
	crawl, err := s.crawlParam(c, false, detailCrawlNotFound)
	if err != nil {
		return err
	}
	out, err := s.redis.matchAll(c.Request().Context(), crawl.ID, re)
	if errors.Is(err, jsregex.ErrMatchLimit) {
		return err
	}
	if err != nil {
		s.log.Debug("crawl queue unavailable", "crawl", crawl.ID, "err", err)
		out = queueMatchOut{Matched: []string{}}
	}
	return c.JSON(http.StatusOK, out)
}

// withExclusion returns cfg's exclude list with regex added (add) or
// removed, and whether that changed it.
func withExclusion(cfg store.RawCrawlConfig, regex string, add bool) (store.RawCrawlConfig, bool) {
	has := slices.Contains(cfg.Exclude.Values, regex)
	if has == add {
		return cfg, false
	}
	values := slices.Clone(cfg.Exclude.Values)
	if add {
		values = append(values, regex)
	} else {
		values = slices.DeleteFunc(values, func(v string) bool { return v == regex })
	}
	// A single string is promoted to a list, as upstream does.
	cfg.Exclude = store.Patterns{Values: values, Set: true}
	return cfg, true
}

func (s *Server) addExclusion(c echo.Context) error    { return s.changeExclusion(c, true) }
func (s *Server) removeExclusion(c echo.Context) error { return s.changeExclusion(c, false) }

// changeExclusion adds or removes an exclusion on a crawl and its
// workflow, restarts the crawlers with the new config and, on add, drops
// queued URLs the exclusion matches.
func (s *Server) changeExclusion(c echo.Context, add bool) error {
	re, err := exclusionParam(c)
	if err != nil {
		return err
	}
	crawl, err := s.crawlParam(c, false, detailCrawlNotFound)
	if err != nil {
		return err
	}
	regex := c.QueryParam("regex")
	cfg, changed := withExclusion(crawl.Config, regex, add)
	switch {
	case !changed && add:
		return badRequest("exclusion_already_exists")
	case !changed:
		return badRequest("exclusion_not_found")
	}
	// A seed-file crawl's crawler gets a fresh link with its new config.
	seedFile, err := s.seedFileLink(c.Request().Context(), currentOrg(c), &cfg)
	if err != nil {
		return err
	}
	configJSON, err := seededConfigJSON(cfg, seedFile)
	if err != nil {
		return err
	}
	// Refuse an exclusion the config cannot take before changing anything.
	var v validator
	if len(cfg.Exclude.Values) > maxPatterns {
		v.add(fmt.Sprintf("a crawl config takes at most %d exclusions", maxPatterns), "value_error.list.max_items", "query", "regex")
	}
	v.configSize(configJSON, "query", "regex")
	if err := v.err(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.updateWorkflowExclusion(c, crawl, regex, add); err != nil {
		return err
	}
	if err := s.store.SetCrawlConfig(ctx, crawl.OID, crawl.ID, cfg); err != nil {
		return err
	}
	if err := s.launcher.RestartCrawl(ctx, crawl.ID, configJSON); err != nil && !errors.Is(err, k8s.ErrCrawlJobNotFound) {
		return s.controlFailed(c, err)
	}
	if !add {
		return c.JSON(http.StatusOK, successOut{Success: true})
	}
	removed, err := s.redis.removeMatching(ctx, crawl.ID, re)
	switch {
	case errors.Is(err, jsregex.ErrMatchLimit):
		// The exclusion is in place; only the queue's clean-up gave up.
		s.log.Warn("exclusion too costly to match the queue; nothing removed", "crawl", crawl.ID, "regex", c.QueryParam("regex"))
	case err != nil:
		s.log.Debug("removing excluded urls from queue", "crawl", crawl.ID, "err", err)
	}
	return c.JSON(http.StatusOK, exclusionAddedOut{Success: true, NumRemoved: removed})
}

// updateWorkflowExclusion mirrors an exclusion change on the crawl's
// workflow (a new revision), so later crawls keep it.
func (s *Server) updateWorkflowExclusion(c echo.Context, crawl *store.Crawl, regex string, add bool) error {
	wf, err := s.store.GetCrawlConfig(c.Request().Context(), crawl.OID, crawl.CID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, changed := withExclusion(wf.Config, regex, add)
	if !changed || wf.Inactive {
		return nil
	}
	ch := workflowChange{settingsChanged: true}
	ch.update.Config = store.Some(cfg)
	return s.applyWorkflowChange(c, wf, ch)
}
