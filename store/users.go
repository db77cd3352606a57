package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// userDoc adds the lowercased e-mail that the unique index and the
// case-insensitive lookup use; User.Email keeps the spelling given.
type userDoc struct {
	User       `bson:",inline"`
	EmailLower string `bson:"emailLower"`
}

// UserUpdate lists the fields of a user to change.
type UserUpdate struct {
	Name           Maybe[string]
	Email          Maybe[string]
	HashedPassword Maybe[string]
	IsActive       Maybe[bool]
	IsSuperuser    Maybe[bool]
	IsVerified     Maybe[bool]
}

// CreateUser inserts u. Hashing the password is the caller's job; u carries
// the hash.
//
// Errors: Conflict("user_already_exists") if the e-mail (compared
// case-insensitively) or the id is taken.
func (m *Mongo) CreateUser(ctx context.Context, u *User) error {
	doc := userDoc{User: *u, EmailLower: strings.ToLower(u.Email)}
	if _, err := m.coll(collUsers).InsertOne(ctx, doc); err != nil {
		if isDuplicate(err) {
			return Conflict("user_already_exists")
		}
		return fmt.Errorf("inserting user: %w", err)
	}
	return nil
}

// GetUser returns the user with id.
//
// Errors: NotFound("user_not_found").
func (m *Mongo) GetUser(ctx context.Context, id uuid.UUID) (*User, error) {
	return m.findUser(ctx, bson.M{"id": id})
}

// GetUserByEmail returns the user whose e-mail equals email, ignoring case.
//
// Errors: NotFound("user_not_found").
func (m *Mongo) GetUserByEmail(ctx context.Context, email string) (*User, error) {
	return m.findUser(ctx, bson.M{"emailLower": strings.ToLower(email)})
}

func (m *Mongo) findUser(ctx context.Context, filter bson.M) (*User, error) {
	var d userDoc
	err := m.coll(collUsers).FindOne(ctx, filter).Decode(&d)
	if err != nil {
		return nil, notFoundOr(err, NotFound("user_not_found"), "finding user")
	}
	return &d.User, nil
}

// UpdateUser changes the fields set in upd.
//
// Errors: NotFound("user_not_found"); Conflict("user_already_exists") if
// the new e-mail is another user's.
func (m *Mongo) UpdateUser(ctx context.Context, id uuid.UUID, upd UserUpdate) error {
	set := bson.M{}
	setIf(set, "name", upd.Name)
	if upd.Email.Set {
		set["email"], set["emailLower"] = upd.Email.Value, strings.ToLower(upd.Email.Value)
	}
	setIf(set, "hashed_password", upd.HashedPassword)
	setIf(set, "is_active", upd.IsActive)
	setIf(set, "is_superuser", upd.IsSuperuser)
	setIf(set, "is_verified", upd.IsVerified)
	if len(set) == 0 {
		_, err := m.GetUser(ctx, id)
		return err
	}
	res, err := m.coll(collUsers).UpdateOne(ctx, bson.M{"id": id}, bson.M{"$set": set})
	if err != nil {
		if isDuplicate(err) {
			return Conflict("user_already_exists")
		}
		return fmt.Errorf("updating user: %w", err)
	}
	if res.MatchedCount == 0 {
		return NotFound("user_not_found")
	}
	return nil
}

// ListUsersByIDs returns the users among ids that exist, keyed by id, for
// joining user names into lists (FerretDB has no $lookup).
//
// Errors: none of the store kinds.
func (m *Mongo) ListUsersByIDs(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]User, error) {
	out := make(map[uuid.UUID]User, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	opts := options.Find().SetProjection(bson.M{"hashed_password": 0})
	docs, err := findAll[userDoc](ctx, m.coll(collUsers), bson.M{"id": bson.M{"$in": ids}}, opts, "users")
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		out[d.ID] = d.User
	}
	return out, nil
}

// DeleteUser removes the user's account. As upstream, org memberships
// keep the stale id (orgs list such members without name or e-mail).
//
// Errors: NotFound("user_not_found").
func (m *Mongo) DeleteUser(ctx context.Context, id uuid.UUID) error {
	res, err := m.coll(collUsers).DeleteOne(ctx, bson.M{"id": id})
	if err != nil {
		return fmt.Errorf("deleting user: %w", err)
	}
	if res.DeletedCount == 0 {
		return NotFound("user_not_found")
	}
	return nil
}
