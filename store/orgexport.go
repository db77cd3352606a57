package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ExportDBVersion is the dbVersion of trawler's org exports. trawler's
// store has no numbered migrations; the number changes if a document
// shape ever changes incompatibly.
const ExportDBVersion = "0001"

// Sections of an org export after "org", in the order they are written
// (upstream's names).
var ExportSections = []string{"profiles", "workflows", "workflowRevisions", "items", "pages", "collections"}

// exportSources maps each section to its collection.
var exportSources = map[string]string{
	"profiles":          collProfiles,
	"workflows":         collConfigs,
	"workflowRevisions": collRevisions,
	"items":             collCrawls,
	"pages":             collPages,
	"collections":       collCollections,
}

// UserDetail is a member as an export lists them under the org's
// userDetails, so an import can find or create them.
type UserDetail struct {
	ID    uuid.UUID `bson:"id"`
	Role  Role      `bson:"role"`
	Name  string    `bson:"name"`
	Email string    `bson:"email"`
}

// ExportOrg calls emit with the org document (with userDetails added),
// then, section by section (ExportSections), with every document of the
// org, as stored. The documents stream from cursors, so an org of any
// size is exported in bounded memory.
//
// Errors: NotFound("org_not_found"); any error of emit.
func (m *Mongo) ExportOrg(ctx context.Context, oid uuid.UUID, emit func(section string, doc bson.Raw) error) error {
	var org bson.D
	if err := m.coll(collOrgs).FindOne(ctx, bson.M{"_id": oid}).Decode(&org); err != nil {
		return notFoundOr(err, errOrgNotFound, "finding org")
	}
	o, err := m.GetOrg(ctx, oid)
	if err != nil {
		return err
	}
	ids := make([]uuid.UUID, 0, len(o.Users))
	for member := range o.Users {
		if id, err := uuid.Parse(member); err == nil {
			ids = append(ids, id)
		}
	}
	users, err := m.ListUsersByIDs(ctx, ids)
	if err != nil {
		return err
	}
	details := make([]UserDetail, 0, len(users))
	for _, id := range ids {
		if u, ok := users[id]; ok {
			details = append(details, UserDetail{ID: id, Role: o.Users[id.String()], Name: u.Name, Email: u.Email})
		}
	}
	org = append(org, bson.E{Key: "userDetails", Value: details})
	raw, err := marshalRaw(org)
	if err != nil {
		return err
	}
	if err := emit("org", raw); err != nil {
		return err
	}
	cids, err := m.orgWorkflowIDs(ctx, oid)
	if err != nil {
		return err
	}
	for _, section := range ExportSections {
		filter := bson.M{"oid": oid}
		if section == "workflowRevisions" {
			filter = bson.M{"cid": bson.M{"$in": cids}}
		}
		if err := m.emitAll(ctx, exportSources[section], filter, func(doc bson.Raw) error { return emit(section, doc) }); err != nil {
			return err
		}
	}
	return nil
}

// marshalRaw encodes doc with the store's registry (uuids as binary).
func marshalRaw(doc bson.D) (bson.Raw, error) {
	var buf bytes.Buffer
	enc := bson.NewEncoder(bson.NewDocumentWriter(&buf))
	enc.SetRegistry(Registry())
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding document: %w", err)
	}
	return buf.Bytes(), nil
}

func (m *Mongo) emitAll(ctx context.Context, coll string, filter bson.M, emit func(bson.Raw) error) error {
	cur, err := m.coll(coll).Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return fmt.Errorf("exporting %s: %w", coll, err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		if err := emit(cur.Current); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("exporting %s: %w", coll, err)
	}
	return nil
}

func (m *Mongo) orgWorkflowIDs(ctx context.Context, oid uuid.UUID) ([]uuid.UUID, error) {
	type row struct {
		ID uuid.UUID `bson:"_id"`
	}
	rows, err := findAll[row](ctx, m.coll(collConfigs), bson.M{"oid": oid},
		options.Find().SetProjection(bson.M{"_id": 1}), "org workflows")
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

// OrgImport is an export document as read back: the org (without its
// userDetails, which the caller turned into users), and every section's
// documents.
type OrgImport struct {
	Org      bson.D
	Sections map[string][]bson.D
}

// Fields holding user ids, by section, that an import remaps when a
// member got another id on this deployment.
var userIDFields = map[string][]string{
	"profiles":          {"userid"},
	"workflows":         {"createdBy", "modifiedBy", "lastStartedBy"},
	"workflowRevisions": {"modifiedBy"},
	"items":             {"userid"},
}

// ImportOrg stores an exported org: every section's documents (replacing
// any of the same id, so an import cut short can be run again), then the
// org document last, with its members as members (user ids old -> new)
// and its storage switched to the named storage when storageName is set.
// Items lose their cached download links, which are signed again.
//
// Errors: Invalid("org_already_exists") if an org of that id exists
// (checked before anything is written); Conflict("duplicate_org_name").
func (m *Mongo) ImportOrg(ctx context.Context, in *OrgImport, members map[uuid.UUID]Role, remap map[uuid.UUID]uuid.UUID, storageName string) error {
	oid, ok := uuidField(in.Org, "_id")
	if !ok {
		return Invalid("invalid_db")
	}
	if _, err := m.GetOrg(ctx, oid); err == nil {
		return Invalid("org_already_exists")
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	for _, section := range ExportSections {
		coll := m.coll(exportSources[section])
		for _, doc := range in.Sections[section] {
			doc = remapUsers(doc, userIDFields[section], remap)
			if section == "items" {
				doc = resetItemFiles(doc, storageName)
			}
			id, ok := field(doc, "_id")
			if !ok {
				return Invalid("invalid_db")
			}
			if _, err := coll.ReplaceOne(ctx, bson.M{"_id": id}, doc, options.Replace().SetUpsert(true)); err != nil {
				return fmt.Errorf("importing %s: %w", section, err)
			}
		}
	}
	users := bson.D{}
	for id, role := range members {
		users = append(users, bson.E{Key: id.String(), Value: role})
	}
	org := setField(withoutFields(in.Org, "userDetails", "deletionJob"), "users", users)
	if storageName != "" {
		org = setField(org, "storage", Storage{Type: "default", Name: storageName, Path: oid.String() + "/"})
	}
	if _, err := m.coll(collOrgs).InsertOne(ctx, org); err != nil {
		if isDuplicate(err) {
			if _, gerr := m.GetOrg(ctx, oid); gerr == nil {
				return Invalid("org_already_exists")
			}
			return Conflict("duplicate_org_name")
		}
		return fmt.Errorf("importing org: %w", err)
	}
	return nil
}

// resetItemFiles drops the files' cached download links and, when
// storageName is set, records them in that storage.
func resetItemFiles(doc bson.D, storageName string) bson.D {
	files, ok := field(doc, "files")
	if !ok {
		return doc
	}
	list, ok := files.(bson.A)
	if !ok {
		return doc
	}
	out := make(bson.A, len(list))
	for i, f := range list {
		fd, ok := f.(bson.D)
		if !ok {
			out[i] = f
			continue
		}
		fd = setField(setField(fd, "presignedUrl", nil), "expireAt", nil)
		if storageName != "" {
			fd = setField(fd, "def_storage_name", storageName)
		}
		out[i] = fd
	}
	return setField(doc, "files", out)
}

func remapUsers(doc bson.D, fields []string, remap map[uuid.UUID]uuid.UUID) bson.D {
	for _, f := range fields {
		if old, ok := uuidField(doc, f); ok {
			if id, changed := remap[old]; changed {
				doc = setField(doc, f, id)
			}
		}
	}
	return doc
}

func field(doc bson.D, key string) (any, bool) {
	for _, e := range doc {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// uuidField reads a uuid stored as BSON binary (subtype 4 or 3) or as a
// string.
func uuidField(doc bson.D, key string) (uuid.UUID, bool) {
	v, ok := field(doc, key)
	if !ok {
		return uuid.Nil, false
	}
	switch x := v.(type) {
	case bson.Binary:
		id, err := uuid.FromBytes(x.Data)
		return id, err == nil
	case string:
		id, err := uuid.Parse(x)
		return id, err == nil
	case uuid.UUID:
		return x, true
	}
	return uuid.Nil, false
}

func setField(doc bson.D, key string, value any) bson.D {
	out := make(bson.D, 0, len(doc)+1)
	set := false
	for _, e := range doc {
		if e.Key == key {
			e.Value, set = value, true
		}
		out = append(out, e)
	}
	if !set {
		out = append(out, bson.E{Key: key, Value: value})
	}
	return out
}

func withoutFields(doc bson.D, keys ...string) bson.D {
	out := make(bson.D, 0, len(doc))
	for _, e := range doc {
		drop := false
		for _, k := range keys {
			drop = drop || e.Key == k
		}
		if !drop {
			out = append(out, e)
		}
	}
	return out
}
