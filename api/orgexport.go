package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/store"
)

// maxImportBytes bounds an org import's body, which is read whole: an
// export holds documents only, no files.
const maxImportBytes = 512 << 20

// importedOut answers POST /orgs/import/json.
type importedOut struct {
	Imported bool `json:"imported"`
}

// exportOrg streams the org's documents as upstream's export document,
// {"data": {"dbVersion", "org", "profiles", "workflows",
// "workflowRevisions", "items", "pages", "collections"}}, each document
// as MongoDB Extended JSON (canonical), so that an import restores every
// type exactly. No files are included.
func (s *Server) exportOrg(c echo.Context) error {
	w := &exportWriter{w: c.Response()}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	err := s.store.ExportOrg(c.Request().Context(), currentOrg(c).ID, w.emit)
	if err == nil {
		err = w.end()
	}
	if err != nil && !c.Response().Committed {
		return err
	}
	if err != nil {
		// The status is sent: cutting the body short is all there is left
		// to say, and the truncated JSON does not parse.
		s.log.Warn("org export cut short", "org", currentOrg(c).ID, "err", err)
	}
	return nil
}

// exportWriter writes the export document as the store emits it: the org,
// then each section's documents, opening and closing the sections in
// store.ExportSections order (empty ones as []).
type exportWriter struct {
	w       io.Writer
	next    int // index in store.ExportSections of the next section to open
	open    bool
	count   int // documents written in the open section
	started bool
}

func (e *exportWriter) write(s string) error {
	_, err := io.WriteString(e.w, s)
	return err
}

func (e *exportWriter) emit(section string, doc bson.Raw) error {
	js, err := bson.MarshalExtJSON(doc, true, false)
	if err != nil {
		return fmt.Errorf("encoding %s document: %w", section, err)
	}
	if section == "org" {
		e.started = true
		if err := e.write(`{"data":{"dbVersion":"` + store.ExportDBVersion + `","org":`); err != nil {
			return err
		}
		_, err := e.w.Write(js)
		return err
	}
	if err := e.openUntil(section); err != nil {
		return err
	}
	if e.count > 0 {
		if err := e.write(","); err != nil {
			return err
		}
	}
	e.count++
	_, err = e.w.Write(js)
	return err
}

// openUntil closes the open section and opens the next ones (empty)
// until section is open.
func (e *exportWriter) openUntil(section string) error {
	for !e.open || store.ExportSections[e.next-1] != section {
		if e.next == len(store.ExportSections) {
			return fmt.Errorf("export section %q out of order", section)
		}
		closing := ""
		if e.open {
			closing = "]"
		}
		if err := e.write(closing + `,"` + store.ExportSections[e.next] + `":[`); err != nil {
			return err
		}
		e.next++
		e.open, e.count = true, 0
	}
	return nil
}

// end opens and closes the sections not written yet and ends the
// document.
func (e *exportWriter) end() error {
	if !e.started {
		return errors.New("export without an org")
	}
	if e.next < len(store.ExportSections) {
		if err := e.openUntil(store.ExportSections[len(store.ExportSections)-1]); err != nil {
			return err
		}
	}
	if e.open {
		return e.write("]}}")
	}
	return e.write("}}")
}

// exportDoc is an export document as read back.
type exportDoc struct {
	Data *struct {
		DBVersion         string   `bson:"dbVersion"`
		Org               bson.D   `bson:"org"`
		Profiles          []bson.D `bson:"profiles"`
		Workflows         []bson.D `bson:"workflows"`
		WorkflowRevisions []bson.D `bson:"workflowRevisions"`
		Items             []bson.D `bson:"items"`
		Pages             []bson.D `bson:"pages"`
		Collections       []bson.D `bson:"collections"`
	} `bson:"data"`
}

// importOrg adds an org from an export document (the body): its members
// (found by e-mail, or created with a random password they must reset),
// then its documents and the org. An org of the same id must not exist.
// Files are not copied: they must be in place in the storage already.
func (s *Server) importOrg(c echo.Context) error {
	q := newQuery(c)
	ignoreVersion := q.bool("ignoreVersion")
	storageName := q.str("storageName")
	if err := q.err(); err != nil {
		return err
	}
	if storageName != "" && s.objects != nil {
		if _, err := s.objects.Named(storageName); err != nil {
			return badRequest("invalid_storage_ref")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxImportBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{status: http.StatusRequestEntityTooLarge, detail: "Request Entity Too Large"}
		}
		return badRequest("invalid_db")
	}
	var doc exportDoc
	if err := bson.UnmarshalExtJSON(body, false, &doc); err != nil || doc.Data == nil || len(doc.Data.Org) == 0 {
		return badRequest("invalid_db")
	}
	d := doc.Data
	if d.DBVersion != store.ExportDBVersion && (ignoreVersion == nil || !*ignoreVersion) {
		return badRequest("db_version_mismatch")
	}
	ctx := c.Request().Context()
	oid, ok := orgIDOf(d.Org)
	if !ok {
		return badRequest("invalid_db")
	}
	// Refused before any user is created: nothing changes.
	if _, err := s.store.GetOrg(ctx, oid); err == nil {
		return badRequest("org_already_exists")
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	members, remap, err := s.importMembers(ctx, d.Org)
	if err != nil {
		return err
	}
	in := &store.OrgImport{Org: d.Org, Sections: map[string][]bson.D{
		"profiles": d.Profiles, "workflows": d.Workflows, "workflowRevisions": d.WorkflowRevisions,
		"items": d.Items, "pages": d.Pages, "collections": d.Collections,
	}}
	if err := s.store.ImportOrg(ctx, in, members, remap, storageName); err != nil {
		return conflictAsBadRequest(err)
	}
	s.scheduler.Reload()
	return c.JSON(http.StatusOK, importedOut{Imported: true})
}

func orgIDOf(org bson.D) (uuid.UUID, bool) {
	for _, e := range org {
		if e.Key != "_id" {
			continue
		}
		if b, ok := e.Value.(bson.Binary); ok {
			id, err := uuid.FromBytes(b.Data)
			return id, err == nil
		}
		if str, ok := e.Value.(string); ok {
			id, err := uuid.Parse(str)
			return id, err == nil
		}
	}
	return uuid.Nil, false
}

// importMembers finds or creates the users of the export's userDetails
// and returns their roles by id on this deployment, and the ids that
// changed (old -> new): a user known by e-mail keeps the id they have
// here.
func (s *Server) importMembers(ctx context.Context, org bson.D) (map[uuid.UUID]store.Role, map[uuid.UUID]uuid.UUID, error) {
	var details []store.UserDetail
	for _, e := range org {
		if e.Key != "userDetails" {
			continue
		}
		raw, err := bson.Marshal(bson.D{{Key: "u", Value: e.Value}})
		if err != nil {
			return nil, nil, badRequest("invalid_db")
		}
		var wrap struct {
			U []store.UserDetail `bson:"u"`
		}
		dec := bson.NewDecoder(bson.NewDocumentReader(bytes.NewReader(raw)))
		dec.SetRegistry(store.Registry())
		if err := dec.Decode(&wrap); err != nil {
			return nil, nil, badRequest("invalid_db")
		}
		details = wrap.U
	}
	members := map[uuid.UUID]store.Role{}
	remap := map[uuid.UUID]uuid.UUID{}
	for _, ud := range details {
		if ud.Email == "" || ud.ID == uuid.Nil {
			return nil, nil, badRequest("invalid_db")
		}
		u, err := s.store.GetUserByEmail(ctx, ud.Email)
		if errors.Is(err, store.ErrNotFound) {
			u, err = s.importUser(ctx, ud)
		}
		if err != nil {
			return nil, nil, err
		}
		members[u.ID] = ud.Role
		if u.ID != ud.ID {
			remap[ud.ID] = u.ID
		}
	}
	return members, remap, nil
}

// importUser creates a member of an imported org who has no account
// here, under their exported id when it is free, with a random password
// (they set theirs through a password reset).
func (s *Server) importUser(ctx context.Context, ud store.UserDetail) (*store.User, error) {
	var secret [24]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, err
	}
	hash, err := s.passwords.hash(ctx, base64.RawURLEncoding.EncodeToString(secret[:]))
	if err != nil {
		return nil, err
	}
	id := ud.ID
	if _, err := s.store.GetUser(ctx, id); err == nil {
		id = uuid.New()
	}
	u := &store.User{ID: id, Email: ud.Email, Name: ud.Name, HashedPassword: hash, IsActive: true}
	if err := s.store.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}
