package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/trawlerhq/trawler/jsregex"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// apiError is an error whose status and detail are what users see. The
// cause, if any, is logged for 5xx and never shown.
type apiError struct {
	status int
	detail any // a string, or an object for the few upstream object details
	cause  error
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%d %v: %v", e.status, e.detail, e.cause)
	}
	return fmt.Sprintf("%d %v", e.status, e.detail)
}

func (e *apiError) Unwrap() error { return e.cause }

func badRequest(detail any) error  { return &apiError{status: http.StatusBadRequest, detail: detail} }
func notFound(detail string) error { return &apiError{status: http.StatusNotFound, detail: detail} }

// errorDetailOf is the detail string an error answers with, nil for an
// error without one (a 500's cause stays hidden).
func errorDetailOf(err error) *string {
	var ae *apiError
	if !errors.As(err, &ae) {
		return nil
	}
	if d, ok := ae.detail.(string); ok {
		return &d
	}
	return nil
}

func forbidden(detail string) error { return &apiError{status: http.StatusForbidden, detail: detail} }
func unauthorized() error           { return &apiError{status: http.StatusUnauthorized, detail: "Unauthorized"} }
func internal(detail string, cause error) error {
	return &apiError{status: http.StatusInternalServerError, detail: detail, cause: cause}
}

// notFoundAs turns a store "not found" into the upstream detail of the
// route and passes every other error through unchanged.
func notFoundAs(err error, detail string) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, k8s.ErrCrawlJobNotFound) {
		return &apiError{status: http.StatusNotFound, detail: detail, cause: err}
	}
	return err
}

// conflictAsBadRequest turns a store conflict (a name taken) into the
// 400 upstream answers, keeping its detail.
func conflictAsBadRequest(err error) error {
	if errors.Is(err, store.ErrConflict) {
		return &apiError{status: http.StatusBadRequest, detail: detailOr(err, "conflict"), cause: err}
	}
	return err
}

// Upstream detail strings shared by several routes.
const (
	detailNotAllowed        = "Not Allowed"
	detailCrawlNotFound     = "crawl_not_found"
	detailNoCrawlPermission = "User does not have permission to modify crawls"
	detailNoOwnerPermission = "User does not have permission to perform this action"
	// detailOrgNotFound is upstream HEAD's 404 of an org (the 2023
	// routes keep orgNotFound's).
	detailOrgNotFound = "org_not_found"
	// detailServiceUnavailable: MongoDB (or, for /readyz, anything the
	// process needs) cannot be reached now; a retry may work.
	detailServiceUnavailable = "service_unavailable"
)

func orgNotFound(oid string) error { return notFound(fmt.Sprintf("Organization '%s' not found", oid)) }

func crawlConfigNotFound(cid string) error {
	return notFound(fmt.Sprintf("Crawl Config '%s' not found", cid))
}

// fieldError is one entry of a 422 body, shaped like pydantic's.
type fieldError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// validationError is a request that failed validation: 422 with every
// problem found and its field path.
type validationError []fieldError

func (v validationError) Error() string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = fmt.Sprintf("%v: %s", f.Loc, f.Msg)
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// statusOf is the one mapping from errors to an HTTP status and the detail
// shown to users. Anything unknown is a 500 whose cause is only logged.
func statusOf(err error) (int, any) {
	var (
		ae *apiError
		ve validationError
		he *echo.HTTPError
	)
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.detail
	case errors.As(err, &ve):
		return http.StatusUnprocessableEntity, []fieldError(ve)
	case errors.As(err, &he):
		if msg, ok := he.Message.(string); ok {
			return he.Code, msg
		}
		return he.Code, http.StatusText(he.Code)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, k8s.ErrCrawlJobNotFound):
		return http.StatusNotFound, detailOr(err, "not_found")
	case errors.Is(err, store.ErrConflict):
		return http.StatusConflict, detailOr(err, "conflict")
	case errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest, detailOr(err, "invalid")
	case store.IsUnavailable(err):
		// MongoDB is down or too slow: the store gave up within its
		// timeout, and a retry may work.
		return http.StatusServiceUnavailable, detailServiceUnavailable
	case storageDown(err), errors.Is(err, errNoStorage):
		return http.StatusServiceUnavailable, "storage_unavailable"
	case errors.Is(err, s3.ErrNotFound):
		return http.StatusNotFound, "file_not_found"
	case errors.Is(err, s3.ErrInvalidKey):
		return http.StatusBadRequest, "invalid_file_name"
	case errors.Is(err, jsregex.ErrMatchLimit):
		// Only a catastrophic pattern runs out of its match budget.
		return http.StatusBadRequest, "invalid_regex"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "timeout"
	default:
		return http.StatusInternalServerError, http.StatusText(http.StatusInternalServerError)
	}
}

// storageDown reports an object store that could not be reached, timed
// out or failed: a 503 wherever it happens, as a retry may work.
func storageDown(err error) bool { return errors.Is(err, s3.ErrUnavailable) }

// storageError is a failed upload or multi-file download: users see the
// operation's detail whichever object failed, with statusOf's 503 when
// the object store is down and a 500 otherwise.
func storageError(detail string, err error) error {
	status := http.StatusInternalServerError
	if storageDown(err) {
		status = http.StatusServiceUnavailable
	}
	return &apiError{status: status, detail: detail, cause: err}
}

func detailOr(err error, fallback string) string {
	if d := store.Detail(err); d != "" {
		return d
	}
	return fallback
}

// handleError is echo's central error handler: it writes {"detail": ...}
// with the mapped status and logs server-side failures in full.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, detail := statusOf(err)
	if status >= http.StatusInternalServerError {
		level := slog.LevelError
		if errors.Is(err, context.Canceled) {
			level = slog.LevelDebug // the client went away
		}
		s.log.Log(c.Request().Context(), level, "request failed",
			"method", c.Request().Method, "path", c.Request().URL.Path, "status", status, "err", err)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	_ = c.JSON(status, map[string]any{"detail": detail})
}
