package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// OrgFilter selects orgs for ListOrgs.
type OrgFilter struct {
	// Member, when set, lists only orgs where this user holds a role
	// (>= viewer); nil lists all orgs (superusers).
	Member *uuid.UUID
	Paging
}

var errOrgNotFound = NotFound("org_not_found")

// CreateOrg inserts o. Nil maps are stored as empty documents.
//
// Errors: Conflict("duplicate_org_name") if the name or id is taken.
func (m *Mongo) CreateOrg(ctx context.Context, o *Org) error {
	doc := *o
	if doc.Users == nil {
		doc.Users = map[string]Role{}
	}
	if doc.Usage == nil {
		doc.Usage = map[string]int64{}
	}
	if _, err := m.coll(collOrgs).InsertOne(ctx, doc); err != nil {
		if isDuplicate(err) {
			return Conflict("duplicate_org_name")
		}
		return fmt.Errorf("inserting org: %w", err)
	}
	return nil
}

// GetOrg returns the org with id.
//
// Errors: NotFound("org_not_found").
func (m *Mongo) GetOrg(ctx context.Context, id uuid.UUID) (*Org, error) {
	return m.findOrg(ctx, bson.M{"_id": id})
}

// GetOrgs returns the orgs with the given ids in one query, by id; an
// id without an org is absent from the map.
func (m *Mongo) GetOrgs(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*Org, error) {
	in := make(bson.A, len(ids))
	for i, id := range ids {
		in[i] = id
	}
	cur, err := m.coll(collOrgs).Find(ctx, bson.M{"_id": bson.M{"$in": in}})
	if err != nil {
		return nil, fmt.Errorf("finding orgs: %w", err)
	}
	var orgs []Org
	if err := cur.All(ctx, &orgs); err != nil {
		return nil, fmt.Errorf("reading orgs: %w", err)
	}
	byID := make(map[uuid.UUID]*Org, len(orgs))
	for i := range orgs {
		byID[orgs[i].ID] = &orgs[i]
	}
	return byID, nil
}

// GetDefaultOrg returns the org marked default.
//
// Errors: NotFound("org_not_found") before EnsureDefaultOrg ran.
func (m *Mongo) GetDefaultOrg(ctx context.Context) (*Org, error) {
	return m.findOrg(ctx, bson.M{"default": true})
}

func (m *Mongo) findOrg(ctx context.Context, filter bson.M) (*Org, error) {
	var o Org
	if err := m.coll(collOrgs).FindOne(ctx, filter).Decode(&o); err != nil {
		return nil, notFoundOr(err, errOrgNotFound, "finding org")
	}
	return &o, nil
}

// EnsureDefaultOrg creates the default org named name at bootstrap, or
// renames the existing default org to name (as upstream does on each
// start). Safe to run from several replicas at once.
//
// Errors: Conflict("duplicate_org_name") if another, non-default org
// already has that name.
func (m *Mongo) EnsureDefaultOrg(ctx context.Context, name string) (*Org, error) {
	o, err := m.GetDefaultOrg(ctx)
	switch {
	case err == nil:
		if o.Name != name {
			if err := m.RenameOrg(ctx, o.ID, name); err != nil {
				return nil, err
			}
			o.Name = name
		}
		return o, nil
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	id := uuid.New()
	o = &Org{
		ID:      id,
		Name:    name,
		Default: true,
		Storage: Storage{Type: "default", Name: "default", Path: id.String() + "/"},
	}
	if err := m.CreateOrg(ctx, o); err != nil {
		if errors.Is(err, ErrConflict) {
			// Another replica won the race; use its org.
			if def, gerr := m.GetDefaultOrg(ctx); gerr == nil {
				return def, nil
			}
		}
		return nil, err
	}
	return m.GetOrg(ctx, id)
}

// ListOrgs returns one page of orgs (the default org first, then by name)
// and the total number matching f.
//
// Errors: none of the store kinds.
func (m *Mongo) ListOrgs(ctx context.Context, f OrgFilter) ([]Org, int64, error) {
	filter := bson.M{}
	if f.Member != nil {
		filter["users."+f.Member.String()] = bson.M{"$gte": RoleViewer}
	}
	opts := options.Find().SetSort(bson.D{{Key: "default", Value: -1}, {Key: "name", Value: 1}})
	f.apply(opts)
	return findPage[Org](ctx, m.coll(collOrgs), filter, opts, "orgs")
}

// RenameOrg sets the org's name.
//
// Errors: NotFound("org_not_found"); Conflict("duplicate_org_name").
func (m *Mongo) RenameOrg(ctx context.Context, id uuid.UUID, name string) error {
	return m.updateOrg(ctx, id, bson.M{"$set": bson.M{"name": name}})
}

// SetOrgUserRole gives user uid role in the org (adding them if needed).
//
// Errors: NotFound("org_not_found").
func (m *Mongo) SetOrgUserRole(ctx context.Context, id, uid uuid.UUID, role Role) error {
	return m.updateOrg(ctx, id, bson.M{"$set": bson.M{"users." + uid.String(): role}})
}

// maxMemberChangeAttempts bounds the re-reads when the org changes
// between ChangeOrgMember's read and its conditional write.
const maxMemberChangeAttempts = 5

// ChangeOrgMember gives member uid a new role, or removes them when role
// is nil. It changes only members, and never leaves the org without an
// owner: the write is conditional on uid's role as read and, when an
// owner loses that role, on another owner still being one, so two
// owners demoting each other at once cannot both succeed.
//
// Errors: NotFound("org_not_found"); ErrNoSuchOrgUser if uid is not a
// member; ErrLastOwner if uid is the only owner and would stop being one;
// Conflict("org_changed") if the org kept changing.
func (m *Mongo) ChangeOrgMember(ctx context.Context, id, uid uuid.UUID, role *Role) error {
	field := "users." + uid.String()
	update := bson.M{"$unset": bson.M{field: ""}}
	if role != nil {
		update = bson.M{"$set": bson.M{field: *role}}
	}
	for range maxMemberChangeAttempts {
		org, err := m.GetOrg(ctx, id)
		if err != nil {
			return err
		}
		current, ok := org.Users[uid.String()]
		if !ok {
			return ErrNoSuchOrgUser
		}
		filter := bson.M{"_id": id, field: current}
		if current >= RoleOwner && (role == nil || *role < RoleOwner) {
			var others bson.A
			for member, r := range org.Users {
				if member != uid.String() && r >= RoleOwner {
					others = append(others, bson.M{"users." + member: bson.M{"$gte": RoleOwner}})
				}
			}
			if len(others) == 0 {
				return ErrLastOwner
			}
			filter["$or"] = others
		}
		res, err := m.coll(collOrgs).UpdateOne(ctx, filter, update)
		if err != nil {
			return fmt.Errorf("changing org member: %w", err)
		}
		if res.MatchedCount == 1 {
			return nil
		}
	}
	return Conflict("org_changed")
}

// SetOrgQuotas replaces the org's quotas.
//
// Errors: NotFound("org_not_found").
func (m *Mongo) SetOrgQuotas(ctx context.Context, id uuid.UUID, q OrgQuotas) error {
	return m.updateOrg(ctx, id, bson.M{"$set": bson.M{"quotas": q}})
}

// SetOrgProxies sets which crawler proxies the org may use.
//
// Errors: NotFound("org_not_found").
func (m *Mongo) SetOrgProxies(ctx context.Context, id uuid.UUID, allowShared bool, allowed []string) error {
	if allowed == nil {
		allowed = []string{}
	}
	return m.updateOrg(ctx, id, bson.M{"$set": bson.M{"allowSharedProxies": allowShared, "allowedProxies": allowed}})
}

// SetOrgReadOnly sets or clears the org's read-only mode and its reason
// (cleared with the mode).
//
// Errors: NotFound("org_not_found").
func (m *Mongo) SetOrgReadOnly(ctx context.Context, id uuid.UUID, readOnly bool, reason string) error {
	if !readOnly {
		reason = ""
	}
	return m.updateOrg(ctx, id, bson.M{"$set": bson.M{"readOnly": readOnly, "readOnlyReason": reason}})
}

// SetOrgWebhooks replaces the org's event webhook URLs and records the
// origin (scheme://host) that download URLs in webhook bodies start with.
//
// Errors: NotFound("org_not_found").
func (m *Mongo) SetOrgWebhooks(ctx context.Context, id uuid.UUID, urls map[string]string, origin string) error {
	if urls == nil {
		urls = map[string]string{}
	}
	return m.updateOrg(ctx, id, bson.M{"$set": bson.M{"webhookUrls": urls, "origin": origin}})
}

// SetOrgStorage replaces where the org's new files go.
//
// Errors: NotFound("org_not_found").
func (m *Mongo) SetOrgStorage(ctx context.Context, id uuid.UUID, st Storage) error {
	return m.updateOrg(ctx, id, bson.M{"$set": bson.M{"storage": st}})
}

func (m *Mongo) updateOrg(ctx context.Context, id uuid.UUID, update bson.M) error {
	res, err := m.coll(collOrgs).UpdateOne(ctx, bson.M{"_id": id}, update)
	if err != nil {
		if isDuplicate(err) {
			return Conflict("duplicate_org_name")
		}
		return fmt.Errorf("updating org: %w", err)
	}
	if res.MatchedCount == 0 {
		return errOrgNotFound
	}
	return nil
}
