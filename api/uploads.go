package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// Uploads (upstream-api-more.md §3): WACZ files users bring, stored as
// items of type "upload" next to the crawls.

// uploadParam loads the {crawl_id} upload of the current org; crawls and
// other orgs' ids are not found.
func (s *Server) uploadParam(c echo.Context, notFoundDetail string) (*store.Crawl, error) {
	u, err := s.crawlParam(c, true, notFoundDetail)
	if err != nil {
		return nil, err
	}
	if u.Type != store.TypeUpload {
		return nil, notFound(notFoundDetail)
	}
	return u, nil
}

// listUploads lists the org's uploads, newest finished first.
func (s *Server) listUploads(c echo.Context) error { return s.listItems(c, []string{store.TypeUpload}) }

// getUpload is one upload without its files (crawler role, as upstream).
func (s *Server) getUpload(c echo.Context) error {
	u, err := s.uploadParam(c, crawlNotFoundID(c.Param("crawl_id")))
	if err != nil {
		return err
	}
	return s.writeCrawl(c, u)
}

func (s *Server) uploadReplay(c echo.Context) error {
	u, err := s.uploadParam(c, crawlNotFoundID(c.Param("crawl_id")))
	if err != nil {
		return err
	}
	return s.writeReplay(c, currentOrg(c), u)
}

func (s *Server) updateUpload(c echo.Context) error {
	return s.updateItem(c, func(c echo.Context) (*store.Crawl, error) { return s.uploadParam(c, detailCrawlNotFound) })
}

// anyUploadReplay is the superuser's replay.json of any org's upload.
func (s *Server) anyUploadReplay(c echo.Context) error {
	u, err := s.anyCrawl(c)
	if err != nil {
		return err
	}
	if u.Type != store.TypeUpload {
		return notFound(crawlNotFoundID(u.ID))
	}
	return s.writeAnyReplay(c, u)
}

// uploadMeta is what the query of an upload says about it.
type uploadMeta struct {
	name, description string
	tags              []string
	collections       []uuid.UUID
}

// readUploadMeta reads name, description, tags and collections, which
// upstream URL-unquotes once more after the query's own decoding (so
// "one%2Ctwo" is two tags). Collections must be the org's (upstream
// stored any UUID, and a malformed one was a 500).
func (s *Server) readUploadMeta(c echo.Context) (uploadMeta, error) {
	var v validator
	unquote := func(name string) string { // the query itself was checked, this decoding not
		val := c.QueryParam(name)
		if u, err := url.PathUnescape(val); err == nil {
			val = u
		}
		if !utf8.ValidString(val) {
			v.add(msgNotUTF8, "value_error.unicode", "query", name)
		}
		return val
	}
	split := func(v string) []string {
		if v == "" {
			return []string{}
		}
		return strings.Split(v, ",")
	}
	m := uploadMeta{name: unquote("name"), description: unquote("description"), tags: split(unquote("tags"))}
	if m.name == "" {
		m.name = "New Upload @ " + s.now().Format(time.DateTime)
	}
	v.maxLen(m.name, maxNameLen, "query", "name")
	v.maxLen(m.description, maxDescriptionLen, "query", "description")
	v.tags(m.tags, "query", "tags")
	colls := split(unquote("collections"))
	v.maxItems(len(colls), maxIDList, "query", "collections")
	for i, raw := range colls {
		id, err := uuid.Parse(raw)
		if err != nil {
			v.add("value is not a valid uuid", "type_error.uuid", "query", "collections", i)
			continue
		}
		m.collections = append(m.collections, id)
	}
	if err := v.err(); err != nil {
		return m, err
	}
	return m, s.store.CheckCollections(c.Request().Context(), currentOrg(c).ID, m.collections)
}

// uploadStream is PUT /uploads/stream: the request body is the file,
// streamed to storage as it arrives. replaceId names an upload of the org
// to replace (anything else is ignored, as upstream).
func (s *Server) uploadStream(c echo.Context) error {
	filename := c.QueryParam("filename")
	if filename == "" {
		return validationError{missingField("query", "filename")}
	}
	meta, err := s.readUploadMeta(c)
	if err != nil {
		return err
	}
	ctx, org := c.Request().Context(), currentOrg(c)
	if err := refuseNewFiles(org); err != nil {
		return err
	}
	id, left := "upload-"+uuid.NewString(), quotaLeft(org)
	replace := false
	if rid := c.QueryParam("replaceId"); rid != "" {
		if old, err := s.store.GetCrawl(ctx, org.ID, rid); err == nil && old.Type == store.TypeUpload {
			id, replace = rid, true
			if left >= 0 {
				left += old.FileSize // the replaced files go
			}
		}
	}
	return s.storeUpload(c, id, meta, replace, func(t fileTarget) ([]store.CrawlFile, error) {
		f, err := s.putWACZ(ctx, t, uploadKey(t, id, filename), c.Request().Body, left, "body")
		return []store.CrawlFile{f}, err
	})
}

// uploadFormData is PUT /uploads/formdata: each multipart part named
// "uploads" is one file of a new upload, streamed to storage in turn.
func (s *Server) uploadFormData(c echo.Context) error {
	meta, err := s.readUploadMeta(c)
	if err != nil {
		return err
	}
	mr, err := c.Request().MultipartReader()
	if err != nil {
		return validationError{missingField("body", "uploads")}
	}
	ctx, org := c.Request().Context(), currentOrg(c)
	if err := refuseNewFiles(org); err != nil {
		return err
	}
	id, left := uuid.NewString(), quotaLeft(org)
	return s.storeUpload(c, id, meta, false, func(t fileTarget) ([]store.CrawlFile, error) {
		var files []store.CrawlFile
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return files, err
			}
			if part.FormName() != "uploads" {
				continue
			}
			f, err := s.putWACZ(ctx, t, uploadKey(t, id, part.FileName()), part, left, "body", "uploads", len(files))
			if err != nil {
				return files, err
			}
			files = append(files, f)
			if left >= 0 {
				left -= f.Size
			}
		}
		if len(files) == 0 {
			return nil, validationError{missingField("body", "uploads")}
		}
		return files, nil
	})
}

// refuseNewFiles refuses a file uploaded to an org that is read-only,
// then one whose storage quota is reached, as upstream checks them.
func refuseNewFiles(org *store.Org) error {
	switch {
	case org.ReadOnly:
		return errOrgReadOnly
	case org.StorageQuotaReached():
		return errStorageQuotaReached
	}
	return nil
}

// uploadKey is where a file of upload id goes.
func uploadKey(t fileTarget, id, clientName string) string {
	return t.prefix + "uploads/" + id + "/" + uploadFilename(clientName)
}

// storeUpload stores the files put writes and records the upload (or,
// with replace, its replacement, whose old files then go: those of the
// document the replace dropped). Files stored for an upload that fails
// are removed again.
func (s *Server) storeUpload(c echo.Context, id string, meta uploadMeta, replace bool,
	put func(fileTarget) ([]store.CrawlFile, error)) error {
	ctx, org := c.Request().Context(), currentOrg(c)
	target, err := s.orgFiles(org)
	if err != nil {
		return storageError("upload_failed", err)
	}
	files, err := put(target)
	if err != nil {
		s.deleteObjects(ctx, org, files)
		var ve validationError
		switch {
		case errors.Is(err, errOverQuota):
			return errStorageQuotaReached
		case errors.As(err, &ve):
			return err
		}
		return &apiError{status: http.StatusBadRequest, detail: "upload_failed", cause: err}
	}
	u := &store.Upload{ID: id, UserID: currentUser(c).ID, OID: org.ID, Name: meta.name, Description: meta.description,
		Tags: meta.tags, CollectionIDs: meta.collections, Files: files, At: s.now()}
	replaced, err := s.store.SaveUpload(ctx, u, replace)
	if err != nil {
		s.deleteObjects(ctx, org, files)
		return err
	}
	if replaced != nil {
		s.deleteObjects(ctx, org, replaced.Files)
	}
	s.notifyUpload(ctx, org.ID, id)
	s.readUploadPages(org.ID, id)
	return c.JSON(http.StatusOK, uploadAddedOut{ID: id, Added: true, StorageQuotaReached: s.storageQuotaReached(ctx, org)})
}

// notifyUpload stores the uploadFinished notification; the upload is
// stored either way, so a failure is only logged.
func (s *Server) notifyUpload(ctx context.Context, oid uuid.UUID, id string) {
	if s.webhooks == nil {
		return
	}
	u, err := s.store.GetCrawl(ctx, oid, id)
	if err == nil {
		err = s.webhooks.UploadFinished(ctx, u)
	}
	if err != nil {
		s.log.Error("storing uploadFinished notification", "upload", id, "err", err)
	}
}

// deleteUploads deletes uploads and their files; crawls are not found.
func (s *Server) deleteUploads(c echo.Context) error {
	return s.deleteItems(c, func(u *store.Crawl) bool { return u.Type == store.TypeUpload }, "uploaded_crawl_not_found")
}

// uploadAddedOut answers an upload.
type uploadAddedOut struct {
	ID                  string `json:"id"`
	Added               bool   `json:"added"`
	StorageQuotaReached bool   `json:"storageQuotaReached"`
}
