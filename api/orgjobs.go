package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// jobOut is a background job record as upstream's GET
// /orgs/all/jobs/{id} shows it (timestamps with Z: a route of
// upstream's HEAD).
type jobOut struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	OID              uuid.UUID       `json:"oid"`
	Success          *bool           `json:"success"`
	Started          string          `json:"started"`
	Finished         *string         `json:"finished"`
	PreviousAttempts []jobAttemptOut `json:"previousAttempts"`
}

type jobAttemptOut struct {
	Started  string  `json:"started"`
	Finished *string `json:"finished"`
}

// orgDeletedOut answers DELETE /orgs/{oid}.
type orgDeletedOut struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

// fmtJobTime formats a time as upstream's HEAD does: whole seconds, UTC,
// with a Z.
func fmtJobTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func fmtJobTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := fmtJobTime(*t)
	return &s
}

func toJobOut(j *store.BackgroundJob) jobOut {
	out := jobOut{ID: j.ID, Type: j.Type, OID: j.OID, Success: j.Success, Started: fmtJobTime(j.Started),
		Finished: fmtJobTimePtr(j.Finished)}
	if j.PreviousAttempts != nil {
		out.PreviousAttempts = make([]jobAttemptOut, len(j.PreviousAttempts))
		for i, a := range j.PreviousAttempts {
			out.PreviousAttempts[i] = jobAttemptOut{Started: fmtJobTime(a.Started), Finished: fmtJobTimePtr(a.Finished)}
		}
	}
	return out
}

// deleteOrg records the org's deletion job and answers at once; the
// leader's OrgDeleter does the work. The org stays visible until then.
// A second deletion while the first has not removed the org is refused
// (400 org_deletion_in_progress), where upstream would start another job.
func (s *Server) deleteOrg(c echo.Context) error {
	job, err := s.store.StartOrgDeletion(c.Request().Context(), currentOrg(c).ID, s.now())
	if err != nil {
		return notFoundAs(err, detailOrgNotFound)
	}
	s.orgDeleter.Kick()
	return c.JSON(http.StatusOK, orgDeletedOut{Deleted: true, ID: job.ID})
}

func (s *Server) getJob(c echo.Context) error {
	job, err := s.store.GetJob(c.Request().Context(), c.Param("job_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toJobOut(job))
}

// retryJob runs a failed job again.
func (s *Server) retryJob(c echo.Context) error {
	if err := s.store.RetryJob(c.Request().Context(), c.Param("job_id"), s.now()); err != nil {
		return err
	}
	s.orgDeleter.Kick()
	return c.JSON(http.StatusOK, successOut{Success: true})
}
