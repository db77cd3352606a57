package store

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// loginAttemptDoc counts the login attempts of one key (an account or a
// client address, as the API spells it) in one fixed window. Keeping the
// counters in MongoDB makes every API replica see the same ones.
type loginAttemptDoc struct {
	ID        string    `bson:"_id"` // key + "@" + window start (unix seconds)
	Count     int64     `bson:"count"`
	ExpiresAt time.Time `bson:"expiresAt"` // the window's end
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
