package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

var errProfileNotFound = NotFound("profile_not_found")

// SaveProfile records a committed profile: a new one, or a re-commit
// that replaces the document (and file) of profile p.ID of the same org.
// The org's bytesStored is recomputed, so a re-commit counts the new size
// instead of adding to the old one.
//
// Errors: NotFound("profile_not_found") when replace is set and the
// profile is not one of the org's.
func (m *Mongo) SaveProfile(ctx context.Context, p *Profile, replace bool) error {
	if p.Origins == nil {
		p.Origins = []string{}
	}
	if replace {
		res, err := m.coll(collProfiles).ReplaceOne(ctx, bson.M{"_id": p.ID, "oid": p.OID}, p)
		if err != nil {
			return fmt.Errorf("replacing profile: %w", err)
		}
		if res.MatchedCount == 0 {
			return errProfileNotFound
		}
	} else if _, err := m.coll(collProfiles).InsertOne(ctx, p); err != nil {
		return fmt.Errorf("inserting profile: %w", err)
	}
	return m.RecomputeOrgBytesStored(ctx, p.OID)
}

// GetProfile returns profile id of org oid.
//
// Errors: NotFound("profile_not_found"), also for another org's id.
func (m *Mongo) GetProfile(ctx context.Context, oid, id uuid.UUID) (*Profile, error) {
	var p Profile
	if err := m.coll(collProfiles).FindOne(ctx, bson.M{"_id": id, "oid": oid}).Decode(&p); err != nil {
		return nil, notFoundOr(err, errProfileNotFound, "finding profile")
	}
	return &p, nil
}

// ListProfiles returns one page of the org's profiles (of one user when
// userID is set), in natural order, and their total.
//
// Errors: none of the store kinds.
func (m *Mongo) ListProfiles(ctx context.Context, oid uuid.UUID, userID *uuid.UUID, p Paging) ([]Profile, int64, error) {
	filter := bson.M{"oid": oid}
	matchIfSet(filter, "userid", userID)
	opts := options.Find()
	p.apply(opts)
	return findPage[Profile](ctx, m.coll(collProfiles), filter, opts, "profiles")
}

// UpdateProfileMetadata sets the profile's name and, when not nil, its
// description.
//
// Errors: NotFound("profile_not_found").
func (m *Mongo) UpdateProfileMetadata(ctx context.Context, oid, id uuid.UUID, name string, description *string) error {
	set := bson.M{"name": name}
	if description != nil {
		set["description"] = *description
	}
	res, err := m.coll(collProfiles).UpdateOne(ctx, bson.M{"_id": id, "oid": oid}, bson.M{"$set": set})
	if err != nil {
		return fmt.Errorf("updating profile: %w", err)
	}
	if res.MatchedCount == 0 {
		return errProfileNotFound
	}
	return nil
}

// DeleteProfile deletes the profile's document and recomputes the org's
// bytesStored. Its file is the caller's business.
//
// Errors: NotFound("profile_not_found").
func (m *Mongo) DeleteProfile(ctx context.Context, oid, id uuid.UUID) error {
	res, err := m.coll(collProfiles).DeleteOne(ctx, bson.M{"_id": id, "oid": oid})
	if err != nil {
		return fmt.Errorf("deleting profile: %w", err)
	}
	if res.DeletedCount == 0 {
		return errProfileNotFound
	}
	return m.RecomputeOrgBytesStored(ctx, oid)
}

// ProfileWorkflows returns the org's active workflows that crawl with
// profile id.
//
// Errors: none of the store kinds.
func (m *Mongo) ProfileWorkflows(ctx context.Context, oid, id uuid.UUID) ([]WorkflowRef, error) {
	filter := bson.M{"oid": oid, "profileid": id, "inactive": bson.M{"$ne": true}}
	opts := options.Find().SetProjection(bson.M{"name": 1}).SetLimit(1000)
	return findAll[WorkflowRef](ctx, m.coll(collConfigs), filter, opts, "workflows of profile")
}

// ProfileNames returns the names of those of ids that are profiles of org
// oid (for profileName in workflow and crawl outputs; a deleted profile,
// or another org's, has none).
//
// Errors: none of the store kinds.
func (m *Mongo) ProfileNames(ctx context.Context, oid uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	out := map[uuid.UUID]string{}
	if len(ids) == 0 {
		return out, nil
	}
	opts := options.Find().SetProjection(bson.M{"name": 1})
	rows, err := findAll[Profile](ctx, m.coll(collProfiles), bson.M{"_id": bson.M{"$in": ids}, "oid": oid}, opts, "profile names")
	if err != nil {
		return nil, err
	}
	for _, p := range rows {
		out[p.ID] = p.Name
	}
	return out, nil
}
