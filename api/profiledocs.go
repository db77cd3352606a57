package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// profilesFolder is where an org's profiles live, under its storage
// path; crawls load them as "@profiles/<file>" relative to that path.
const profilesFolder = "profiles/"

// profileFilename is the file a profile is saved as.
func profileFilename(id uuid.UUID) string { return "profile-" + id.String() + ".tar.gz" }

// profileParam loads the {profileid} profile of the current org. The id
// is typed UUID4 upstream: anything else is a 422.
func (s *Server) profileParam(c echo.Context) (*store.Profile, error) {
	id, err := profileID(c)
	if err != nil {
		return nil, err
	}
	return s.store.GetProfile(c.Request().Context(), currentOrg(c).ID, id)
}

func profileID(c echo.Context) (uuid.UUID, error) {
	var v validator
	validateUUID4(&v, c.Param("profileid"), "path", "profileid")
	if err := v.err(); err != nil {
		return uuid.Nil, err
	}
	return uuid.MustParse(c.Param("profileid")), nil
}

func (s *Server) listProfiles(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	userID := q.uuid("userid")
	if err := q.err(); err != nil {
		return err
	}
	profiles, total, err := s.store.ListProfiles(c.Request().Context(), currentOrg(c).ID, userID, p.paging())
	if err != nil {
		return err
	}
	items := make([]profileOut, len(profiles))
	for i := range profiles {
		items[i] = toProfileOut(&profiles[i])
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

func (s *Server) getProfile(c echo.Context) error {
	p, err := s.profileParam(c)
	if err != nil {
		return err
	}
	refs, err := s.store.ProfileWorkflows(c.Request().Context(), p.OID, p.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, profileWithWorkflowsOut{profileOut: toProfileOut(p), CrawlConfigs: toWorkflowRefsOut(refs)})
}

// commitProfile is POST /profiles: save the browser as a new profile.
func (s *Server) commitProfile(c echo.Context) error {
	var in profileIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	id := uuid.New()
	quota, err := s.saveBrowser(c, &in, id, false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, profileAddedOut{Added: true, ID: id, StorageQuotaReached: quota})
}

// updateProfile is PATCH /profiles/{id}: with a browserid, save that
// browser into this profile; without, change its name and description.
func (s *Server) updateProfile(c echo.Context) error {
	id, err := profileID(c)
	if err != nil {
		return err
	}
	var in profileIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	if in.BrowserID != nil {
		_, err = s.saveBrowser(c, &in, id, true)
	} else {
		err = s.store.UpdateProfileMetadata(c.Request().Context(), currentOrg(c).ID, id, *in.Name, in.Description)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

// saveBrowser commits browser in.BrowserID of the org as profile id: the
// pod uploads the profile itself, then the browser is removed and the
// profile recorded. The storage quota is checked before the pod is asked
// (upstream checked after the upload, leaving the file unrecorded). It
// reports whether the org's storage is now full.
func (s *Server) saveBrowser(c echo.Context, in *profileIn, id uuid.UUID, replace bool) (bool, error) {
	ctx, org := c.Request().Context(), currentOrg(c)
	pj, err := s.orgBrowser(c, deref1(in.BrowserID))
	if err != nil {
		return false, err
	}
	if org.StorageQuotaReached() {
		return false, errStorageQuotaReached
	}
	if replace {
		if _, err := s.store.GetProfile(ctx, org.ID, id); err != nil {
			return false, err
		}
	}
	filename := profileFilename(id)
	saved, err := s.browserPods.saveProfile(ctx, pj.Spec.ID, filename)
	if err != nil {
		return false, err
	}
	if saved.Resource == nil {
		return false, badRequest("browser_not_valid")
	}
	s.removeBrowser(ctx, pj.Spec.ID)
	p := &store.Profile{ID: id, Name: *in.Name, Description: deref1(in.Description), UserID: browserUser(pj, currentUser(c)),
		OID: org.ID, Origins: saved.Origins, Created: s.now(), Resource: store.ProfileFile{
			Filename: filename, Hash: saved.Resource.Hash, Size: saved.Resource.Bytes,
			DefStorageName: namedStorage(org, pj.Spec.StorageName)}, ProxyID: pj.Labels[k8s.LabelProxyID]}
	if err := s.store.SaveProfile(ctx, p, replace); err != nil {
		return false, err
	}
	return s.storageQuotaReached(ctx, org), nil
}

// removeBrowser deletes a browser whose profile was saved; its pod exits
// by itself anyway, so a failure is only logged.
func (s *Server) removeBrowser(ctx context.Context, id string) {
	if err := s.browsers.DeleteProfileBrowser(ctx, id); err != nil {
		s.log.Warn("removing saved profile browser", "browser", id, "err", err)
	}
}

// browserUser is who launched the browser (upstream records them, not the
// committer), or u when the label is unreadable.
func browserUser(pj *trawlerv1.ProfileJob, u *store.User) uuid.UUID {
	if id, err := uuid.Parse(pj.Labels[k8s.LabelUser]); err == nil {
		return id
	}
	return u.ID
}

// namedStorage is the storage name a file of the org records: the named
// storage it went to, or nil for the org's own storage.
func namedStorage(org *store.Org, name string) *string {
	if isCustomStorage(org) {
		return nil
	}
	return &name
}

// deleteProfile deletes a profile no active workflow uses (else upstream's
// 200 "in_use" with those workflows), its file first.
func (s *Server) deleteProfile(c echo.Context) error {
	p, err := s.profileParam(c)
	if err != nil {
		return err
	}
	ctx, org := c.Request().Context(), currentOrg(c)
	refs, err := s.store.ProfileWorkflows(ctx, org.ID, p.ID)
	if err != nil {
		return err
	}
	if len(refs) > 0 {
		return c.JSON(http.StatusOK, profileInUseOut{Error: "in_use", CrawlConfigs: toWorkflowRefsOut(refs)})
	}
	// The file first: if storage fails, the profile stays and a retry
	// finishes the job.
	if err := s.deleteProfileFile(ctx, org, p); err != nil {
		return err
	}
	if err := s.store.DeleteProfile(ctx, org.ID, p.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, profileDeletedOut{Success: true, StorageQuotaReached: s.storageQuotaReached(ctx, org)})
}

// deleteProfileFile removes the profile's file from where its browser
// saved it: "<org folder>profiles/<file>" of the storage it recorded.
func (s *Server) deleteProfileFile(ctx context.Context, org *store.Org, p *store.Profile) error {
	if s.objects == nil {
		return nil // no storage: documents only, as deleteFiles
	}
	rel := profilesFolder + p.Resource.Filename
	f := store.CrawlFile{Filename: s3.OrgPrefix(org.ID.String()) + rel, DefStorageName: p.Resource.DefStorageName}
	if f.DefStorageName == nil {
		t, err := s.orgFiles(org)
		if err != nil {
			return fileDeletionError(err)
		}
		f.Filename = t.filename(t.prefix + rel)
	}
	return s.deleteFiles(ctx, org, []*store.Crawl{{ID: "profile " + p.ID.String(), Files: []store.CrawlFile{f}}})
}

// storageQuotaReached reads the org's storage state after a change (the
// loaded org may be stale); if that read fails, the loaded one answers.
func (s *Server) storageQuotaReached(ctx context.Context, org *store.Org) bool {
	if fresh, err := s.store.GetOrg(ctx, org.ID); err == nil {
		return fresh.StorageQuotaReached()
	}
	return org.StorageQuotaReached()
}
