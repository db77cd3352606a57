package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// Seed files (upstream-2026.md §4.2): routes under /orgs/{oid}/files.
// These are new routes, so they follow upstream's current wire format
// (timestamps with Z), unlike the 2023 routes.

// seedFileOut is upstream's SeedFileOut.
type seedFileOut struct {
	ID               uuid.UUID `json:"id"`
	OID              uuid.UUID `json:"oid"`
	Type             string    `json:"type"`
	Name             string    `json:"name"`
	Path             string    `json:"path"`
	Hash             string    `json:"hash"`
	Size             int64     `json:"size"`
	OriginalFilename string    `json:"originalFilename"`
	Mime             string    `json:"mime"`
	UserID           uuid.UUID `json:"userid"`
	UserName         string    `json:"userName"`
	Created          string    `json:"created"`
	FirstSeed        string    `json:"firstSeed"`
	SeedCount        int64     `json:"seedCount"`
}

// seedFileAddedOut answers an upload.
type seedFileAddedOut struct {
	Added bool      `json:"added"`
	ID    uuid.UUID `json:"id"`
}

// fmtTimeZ is a timestamp of upstream's current format: UTC, whole
// seconds, with Z.
func fmtTimeZ(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// seedFileKey is where a new seed file goes: upstream's name, with a
// random suffix so that a retried id never meets an old object.
func seedFileKey(t fileTarget, id uuid.UUID) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	suffix := strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
	return t.prefix + "seedFiles/seedFile-" + id.String() + "-" + suffix + ".txt"
}

// putSeedFile is PUT /files/seedFile: the body is the file, checked while
// it streams to storage (seedFileReader). A refused file leaves no
// object, no document and the org's counters as they were.
func (s *Server) putSeedFile(c echo.Context) error {
	filename := c.QueryParam("filename")
	if filename == "" {
		return validationError{missingField("query", "filename")}
	}
	ctx, org, user := c.Request().Context(), currentOrg(c), currentUser(c)
	if err := refuseNewFiles(org); err != nil {
		return err
	}
	if !strings.HasSuffix(filename, ".txt") {
		return badRequest("invalid_extension")
	}
	t, err := s.orgFiles(org)
	if err != nil {
		return storageError("upload_failed", err)
	}
	id := uuid.New()
	key := seedFileKey(t, id)
	sr := &seedFileReader{r: c.Request().Body}
	hr := &countingHasher{r: sr, h: sha256.New(), limit: -1}
	_, err = t.bucket.Put(ctx, key, hr, -1, "text/plain")
	if sr.err != nil || err != nil {
		// The upload was abandoned, so there is normally nothing to
		// delete; a store that completed it anyway must not keep it.
		if derr := t.bucket.Delete(ctx, key); derr != nil {
			s.log.Warn("deleting a refused seed file", "key", key, "err", derr)
		}
		if sr.err != nil {
			return sr.err
		}
		return &apiError{status: http.StatusBadRequest, detail: "upload_failed", cause: err}
	}
	f := &store.SeedFile{ID: id, OID: org.ID, Name: t.filename(key), Hash: hex.EncodeToString(hr.h.Sum(nil)),
		Size: hr.n, DefStorageName: t.named, OriginalFilename: filename, Mime: "text/plain",
		UserID: user.ID, UserName: user.Name, Created: s.now(), FirstSeed: sr.scan.firstSeed, SeedCount: sr.scan.count}
	if err := s.store.AddSeedFile(ctx, f); err != nil {
		s.deleteObjects(ctx, org, []store.CrawlFile{f.File()})
		return err
	}
	return c.JSON(http.StatusOK, seedFileAddedOut{Added: true, ID: id})
}

// listSeedFiles is GET /files.
func (s *Server) listSeedFiles(c echo.Context) error {
	q := newQuery(c)
	p := q.page()
	f := store.SeedFileFilter{SortBy: q.str("sortBy"), SortDirection: q.sortDirection(-1), Paging: p.paging()}
	if err := q.err(); err != nil {
		return err
	}
	files, total, err := s.store.ListSeedFiles(c.Request().Context(), currentOrg(c).ID, f)
	if err != nil {
		return err
	}
	items := make([]seedFileOut, len(files))
	for i := range files {
		items[i] = s.seedFileOut(c, &files[i])
	}
	return c.JSON(http.StatusOK, newPageOut(items, int(total), p))
}

// seedFileParam loads the {file_id} seed file of the current org; a
// malformed id is a 422, as upstream's UUID path parameter.
func (s *Server) seedFileParam(c echo.Context) (*store.SeedFile, error) {
	id, err := uuid.Parse(c.Param("file_id"))
	if err != nil {
		return nil, validationError{{Loc: []any{"path", "file_id"}, Msg: "value is not a valid uuid", Type: "type_error.uuid"}}
	}
	return s.store.GetSeedFile(c.Request().Context(), currentOrg(c).ID, id)
}

// getSeedFile is GET /files/{file_id}.
func (s *Server) getSeedFile(c echo.Context) error {
	f, err := s.seedFileParam(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.seedFileOut(c, f))
}

// deleteSeedFile is DELETE /files/{file_id}: refused while a workflow or
// a crawl references the file.
func (s *Server) deleteSeedFile(c echo.Context) error {
	if _, err := s.seedFileParam(c); err != nil {
		return err
	}
	ctx, org := c.Request().Context(), currentOrg(c)
	f, err := s.store.DeleteSeedFile(ctx, org.ID, uuid.MustParse(c.Param("file_id")))
	if err != nil {
		return err
	}
	s.deleteObjects(ctx, org, []store.CrawlFile{f.File()})
	return c.JSON(http.StatusOK, successOut{Success: true})
}

// seedFileOut converts a seed file with a fresh download link, made
// absolute from the request's origin when the storage hands out paths.
func (s *Server) seedFileOut(c echo.Context, f *store.SeedFile) seedFileOut {
	out := seedFileOut{ID: f.ID, OID: f.OID, Type: store.TypeSeedFile, Name: f.Name, Hash: f.Hash, Size: f.Size,
		OriginalFilename: f.OriginalFilename, Mime: f.Mime, UserID: f.UserID, UserName: f.UserName,
		Created: fmtTimeZ(f.Created), FirstSeed: f.FirstSeed, SeedCount: f.SeedCount}
	file := f.File()
	link, err := s.presign(c.Request().Context(), currentOrg(c), &file)
	if err != nil {
		s.log.Warn("cannot sign a seed file link", "file", f.ID, "err", err)
		return out
	}
	if strings.HasPrefix(link, "/") {
		link = s.origin(c) + link
	}
	out.Path = link
	return out
}
