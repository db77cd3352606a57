package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/store"
)

// Details of the pause routes that upstream does not have: trawler
// refuses what upstream silently accepts (§1.2's Go impl notes).
const (
	// detailPauseNotSupported: the crawl's channel runs a crawler that
	// cannot pause (browsertrix-crawler 0.11 has no <id>:paused).
	detailPauseNotSupported = "pause_not_supported_by_crawler"
	// detailNotPaused: a resume of a crawl that is neither paused nor
	// pausing.
	detailNotPaused = "crawl_not_paused"
)

// pauseCrawl asks a running or waiting crawl to pause: its crawlers
// upload what they have and exit, keeping the crawl's queue and volumes.
// Pausing a paused crawl moves pausedAt, restarting its expiry.
func (s *Server) pauseCrawl(c echo.Context) error {
	crawl, err := s.pausable(c)
	if err != nil {
		return err
	}
	ch, err := s.crawlerChannel(channelOf(crawl.CrawlerChannel))
	if err != nil || ch.Protocol != k8s.ProtocolV1 {
		return badRequest(detailPauseNotSupported)
	}
	now := s.now()
	return s.setPause(c, crawl, &now)
}

// resumeCrawl resumes a paused crawl, or one still pausing, on its
// volumes and queue.
func (s *Server) resumeCrawl(c echo.Context) error {
	crawl, err := s.pausable(c)
	if err != nil {
		return err
	}
	if !crawl.ShouldPause && !store.IsPaused(crawl.State) {
		return badRequest(detailNotPaused)
	}
	return s.setPause(c, crawl, nil)
}

// pausable loads the route's crawl: 404 for none in the org, 400
// not_a_crawl for an upload, 404 crawl_not_found for an ended crawl
// (upstream's answer once its CrawlJob is gone).
func (s *Server) pausable(c echo.Context) (*store.Crawl, error) {
	crawl, err := s.crawlParam(c, true, crawlNotFoundID(c.Param("crawl_id")))
	switch {
	case err != nil:
		return nil, err
	case !isCrawlItem(crawl):
		return nil, badRequest("not_a_crawl")
	case !store.IsActive(crawl.State):
		return nil, notFound(detailCrawlNotFound)
	}
	return crawl, nil
}

// setPause records the request in the crawl document, then in the
// CrawlJob (spec.pausedAt), which the operator acts on. Requests that
// race (a resume during a pause) each write the document first and
// then make the CrawlJob say what the document says after their own
// patch, so whichever reached the store last wins in both.
func (s *Server) setPause(c echo.Context, crawl *store.Crawl, pausedAt *time.Time) error {
	ctx := c.Request().Context()
	doc, err := s.store.SetCrawlPause(ctx, crawl.OID, crawl.ID, pausedAt)
	if err != nil {
		return notFoundAs(err, detailCrawlNotFound)
	}
	if err := s.syncPause(ctx, doc); err != nil {
		if errors.Is(err, k8s.ErrCrawlJobNotFound) {
			return notFound(detailCrawlNotFound)
		}
		return s.controlFailed(c, err)
	}
	return c.JSON(http.StatusOK, successOut{Success: true})
}

// syncPause patches the CrawlJob to the document's pause until a read
// after the patch finds the document unchanged.
func (s *Server) syncPause(ctx context.Context, doc *store.Crawl) error {
	for {
		var at time.Time
		if doc.ShouldPause && doc.PausedAt != nil {
			at = *doc.PausedAt
		}
		if err := s.launcher.PauseCrawl(ctx, doc.ID, at); err != nil {
			return err
		}
		again, err := s.store.GetCrawl(ctx, doc.OID, doc.ID)
		if err != nil {
			return err
		}
		if again.ShouldPause == doc.ShouldPause && timesEqual(again.PausedAt, doc.PausedAt) {
			return nil
		}
		doc = again
	}
}

// timesEqual compares two optional times.
func timesEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
