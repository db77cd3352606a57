package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Invite is a pending invitation to join an org with a role. Invites of
// people without an account live in the invites collection, keyed by
// their token; invites of existing users live in the user's document
// (User.Invites), keyed by the token as 32 hex digits.
type Invite struct {
	ID           uuid.UUID `bson:"_id"` // the token
	Created      time.Time `bson:"created"`
	InviterEmail string    `bson:"inviterEmail"`
	OID          uuid.UUID `bson:"oid"`
	Role         Role      `bson:"role"`
	// Email is the invitee's address as typed (new-user invites only).
	Email string `bson:"email,omitempty"`
}

// inviteDoc adds the lowercased e-mail that duplicate checks and lookups
// compare, so that User@Example.COM can redeem an invite to
// user@example.com (upstream compared exactly and could not).
type inviteDoc struct {
	Invite     `bson:",inline"`
	EmailLower string `bson:"emailLower"`
}

var errInviteNotFound = NotFound("invite_not_found")

// InviteFilter selects invites for ListInvites.
type InviteFilter struct {
	// OID, when set, lists only that org's invites.
	OID *uuid.UUID
	// NotBefore hides invites created earlier (expired).
	NotBefore time.Time
	Paging
}

// CreateInvite stores a new-user invite. Invites to the same address and
// org created before notBefore have expired and are removed first.
//
// Errors: Conflict("invite_exists") if the address has a live invite to
// the org.
func (m *Mongo) CreateInvite(ctx context.Context, inv *Invite, notBefore time.Time) error {
	lower := strings.ToLower(inv.Email)
	expired := bson.M{"oid": inv.OID, "emailLower": lower, "created": bson.M{"$lt": notBefore}}
	if _, err := m.coll(collInvites).DeleteMany(ctx, expired); err != nil {
		return fmt.Errorf("removing expired invites: %w", err)
	}
	if _, err := m.coll(collInvites).InsertOne(ctx, inviteDoc{Invite: *inv, EmailLower: lower}); err != nil {
		if isDuplicate(err) {
			return Conflict("invite_exists")
		}
		return fmt.Errorf("inserting invite: %w", err)
	}
	return nil
}

// GetInvite returns the new-user invite with token id unless it expired
// (created before notBefore).
//
// Errors: NotFound("invite_not_found").
func (m *Mongo) GetInvite(ctx context.Context, id uuid.UUID, notBefore time.Time) (*Invite, error) {
	var d inviteDoc
	err := m.coll(collInvites).FindOne(ctx, bson.M{"_id": id}).Decode(&d)
	if err != nil {
		return nil, notFoundOr(err, errInviteNotFound, "finding invite")
	}
	if d.Created.Before(notBefore) {
		return nil, errInviteNotFound
	}
	return &d.Invite, nil
}

// ListInvites returns one page of live new-user invites, oldest first, and
// the total matching f.
//
// Errors: none of the store kinds.
func (m *Mongo) ListInvites(ctx context.Context, f InviteFilter) ([]Invite, int64, error) {
	filter := bson.M{"created": bson.M{"$gte": f.NotBefore}}
	if f.OID != nil {
		filter["oid"] = *f.OID
	}
	opts := options.Find().SetSort(bson.D{{Key: "created", Value: 1}, {Key: "_id", Value: 1}})
	f.apply(opts)
	docs, total, err := findPage[inviteDoc](ctx, m.coll(collInvites), filter, opts, "invites")
	if err != nil {
		return nil, 0, err
	}
	out := make([]Invite, len(docs))
	for i, d := range docs {
		out[i] = d.Invite
	}
	return out, total, nil
}

// DeleteInvite removes the new-user invite with token id (a redeemed
// one); a missing invite is not an error.
//
// Errors: none of the store kinds.
func (m *Mongo) DeleteInvite(ctx context.Context, id uuid.UUID) error {
	if _, err := m.coll(collInvites).DeleteOne(ctx, bson.M{"_id": id}); err != nil {
		return fmt.Errorf("deleting invite: %w", err)
	}
	return nil
}

// DeleteInvitesByEmail removes the org's new-user invites to email
// (compared ignoring case) and returns how many there were.
//
// Errors: NotFound("invite_not_found") if there were none.
func (m *Mongo) DeleteInvitesByEmail(ctx context.Context, oid uuid.UUID, email string) (int64, error) {
	res, err := m.coll(collInvites).DeleteMany(ctx, bson.M{"oid": oid, "emailLower": strings.ToLower(email)})
	if err != nil {
		return 0, fmt.Errorf("deleting invites: %w", err)
	}
	if res.DeletedCount == 0 {
		return 0, errInviteNotFound
	}
	return res.DeletedCount, nil
}

// InviteKey is how an existing user's invite is keyed in User.Invites:
// the token as 32 lowercase hex digits.
func InviteKey(id uuid.UUID) string { return strings.ReplaceAll(id.String(), "-", "") }

// AddUserInvite stores an invite for an existing user.
//
// Errors: NotFound("user_not_found").
func (m *Mongo) AddUserInvite(ctx context.Context, uid uuid.UUID, inv Invite) error {
	res, err := m.coll(collUsers).UpdateOne(ctx, bson.M{"id": uid},
		bson.M{"$set": bson.M{"invites." + InviteKey(inv.ID): inv}})
	if err != nil {
		return fmt.Errorf("adding user invite: %w", err)
	}
	if res.MatchedCount == 0 {
		return NotFound("user_not_found")
	}
	return nil
}

// TakeUserInvite removes and returns the invite keyed key from the user's
// invites, so that it is redeemed at most once.
//
// Errors: NotFound("invite_not_found").
func (m *Mongo) TakeUserInvite(ctx context.Context, uid uuid.UUID, key string) (*Invite, error) {
	if !validInviteKey(key) {
		return nil, errInviteNotFound
	}
	field := "invites." + key
	var before userDoc
	err := m.coll(collUsers).FindOneAndUpdate(ctx, bson.M{"id": uid, field: bson.M{"$exists": true}},
		bson.M{"$unset": bson.M{field: ""}}, options.FindOneAndUpdate().SetReturnDocument(options.Before)).Decode(&before)
	if err != nil {
		return nil, notFoundOr(err, errInviteNotFound, "taking user invite")
	}
	inv, ok := before.Invites[key]
	if !ok {
		return nil, errInviteNotFound
	}
	return &inv, nil
}

// validInviteKey keeps keys that are not 32 hex digits (and so could be
// field paths) out of queries.
func validInviteKey(key string) bool {
	if len(key) != 32 {
		return false
	}
	for _, r := range key {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
