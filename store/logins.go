package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// loginAttemptDoc counts the login attempts of one key (an account, a
// client address or the pair, as the API spells them) in one fixed
// window. Keeping the counters in MongoDB makes every API replica see
// the same ones. The collection also holds the logins RememberLogin
// keeps ({_id: key, expiresAt}), swept with the ended windows.
type loginAttemptDoc struct {
	ID        string    `bson:"_id"` // key + "@" + window start (unix seconds)
	Count     int64     `bson:"count"`
	ExpiresAt time.Time `bson:"expiresAt"` // the window's end
	// NextAt is when the key's next paced turn is free
	// (PaceLoginAttempt); unset until one was taken.
	NextAt *time.Time `bson:"nextAt,omitempty"`
}

// loginWindowID is the document id of key's window starting at start.
func loginWindowID(key string, start time.Time) string {
	return fmt.Sprintf("%s@%d", key, start.Unix())
}

// AddLoginAttempt counts one attempt for each key in the window
// [start, end) and returns each key's count including this attempt.
//
// Errors: none of the store kinds.
func (m *Mongo) AddLoginAttempt(ctx context.Context, keys []string, start, end time.Time) ([]int64, error) {
	counts := make([]int64, len(keys))
	opts := options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)
	for i, key := range keys {
		var d loginAttemptDoc
		err := m.coll(collLoginAttempts).FindOneAndUpdate(ctx, bson.M{"_id": loginWindowID(key, start)},
			bson.M{"$inc": bson.M{"count": 1}, "$setOnInsert": bson.M{"expiresAt": end}}, opts).Decode(&d)
		if err != nil {
			return nil, fmt.Errorf("counting login attempt: %w", err)
		}
		counts[i] = d.Count
	}
	return counts, nil
}

// ReleaseLoginAttempt takes back an attempt counted by AddLoginAttempt in
// the window starting at start: with forget, the key's count of that
// window goes (a successful login clears its account's failures), else
// it drops by one (the attempt was not a failure).
//
// Errors: none of the store kinds.
func (m *Mongo) ReleaseLoginAttempt(ctx context.Context, key string, start time.Time, forget bool) error {
	filter := bson.M{"_id": loginWindowID(key, start)}
	var err error
	if forget {
		_, err = m.coll(collLoginAttempts).DeleteOne(ctx, filter)
	} else {
		_, err = m.coll(collLoginAttempts).UpdateOne(ctx, filter, bson.M{"$inc": bson.M{"count": -1}})
	}
	if err != nil {
		return fmt.Errorf("releasing login attempt: %w", err)
	}
	return nil
}

// DeleteEndedLoginWindows removes the counters of windows that ended
// before t (FerretDB has no TTL indexes to do it).
//
// Errors: none of the store kinds.
func (m *Mongo) DeleteEndedLoginWindows(ctx context.Context, t time.Time) error {
	if _, err := m.coll(collLoginAttempts).DeleteMany(ctx, bson.M{"expiresAt": bson.M{"$lte": t}}); err != nil {
		return fmt.Errorf("deleting ended login windows: %w", err)
	}
	return nil
}

// PaceLoginAttempt takes the paced turn of key's window starting at
// start (a counter AddLoginAttempt made): if no turn was taken yet, or
// the last one's pause ended by now, the turn is taken until next and
// the zero time returned; otherwise it returns when the current pause
// ends. Replicas share the turn, as they share the counts.
//
// Errors: none of the store kinds.
func (m *Mongo) PaceLoginAttempt(ctx context.Context, key string, start, now, next time.Time) (time.Time, error) {
	id := loginWindowID(key, start)
	free := bson.M{"_id": id, "$or": bson.A{bson.M{"nextAt": bson.M{"$exists": false}}, bson.M{"nextAt": bson.M{"$lte": now}}}}
	err := m.coll(collLoginAttempts).FindOneAndUpdate(ctx, free, bson.M{"$set": bson.M{"nextAt": next}}).Err()
	if err == nil {
		return time.Time{}, nil
	}
	if !errors.Is(err, mongo.ErrNoDocuments) {
		return time.Time{}, fmt.Errorf("pacing login attempt: %w", err)
	}
	var d loginAttemptDoc
	err = m.coll(collLoginAttempts).FindOne(ctx, bson.M{"_id": id}).Decode(&d)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments) || err == nil && d.NextAt == nil:
		return time.Time{}, nil // swept meanwhile: the window is over
	case err != nil:
		return time.Time{}, fmt.Errorf("reading login pace: %w", err)
	}
	return *d.NextAt, nil
}

// RememberLogin keeps key (an account and an address it logged in from,
// as the API spells it) until until.
//
// Errors: none of the store kinds.
func (m *Mongo) RememberLogin(ctx context.Context, key string, until time.Time) error {
	_, err := m.coll(collLoginAttempts).UpdateOne(ctx, bson.M{"_id": key},
		bson.M{"$set": bson.M{"expiresAt": until}}, options.UpdateOne().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("remembering login: %w", err)
	}
	return nil
}

// LoginRemembered reports whether RememberLogin kept key beyond now.
//
// Errors: none of the store kinds.
func (m *Mongo) LoginRemembered(ctx context.Context, key string, now time.Time) (bool, error) {
	n, err := m.coll(collLoginAttempts).CountDocuments(ctx, bson.M{"_id": key, "expiresAt": bson.M{"$gt": now}})
	if err != nil {
		return false, fmt.Errorf("reading remembered login: %w", err)
	}
	return n > 0, nil
}
