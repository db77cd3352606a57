package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The notifications collection as the webhook deliverer's outbox. A
// notification is due when NextAttempt has come; one deliverer at a time
// holds it under a lease, and records the attempt's outcome under that
// lease. Every replica may deliver: the lease, not the process, decides
// who sends.

// ErrNotificationLeaseLost: the deliverer's lease ran out and another
// deliverer took the notification over, so the outcome did not change
// its schedule.
var ErrNotificationLeaseLost = Conflict("notification_lease_lost")

// NotificationClaim is a notification leased to one deliverer.
type NotificationClaim struct {
	Notification
	// Lease names this claim; its outcome is recorded under it.
	Lease uuid.UUID
}

// RetryNotification asks for one more attempt of the org's notification
// id, due at at (at once), whatever became of the earlier ones. Each call
// is one attempt; the automatic retries stay as they were.
//
// Errors: NotFound("notification_not_found").
func (m *Mongo) RetryNotification(ctx context.Context, oid, id uuid.UUID, at time.Time) error {
	// $min leaves an earlier due time alone and sets a missing one; an
	// attempt in flight keeps its lease and sees the request when it ends.
	res, err := m.coll(collWebhooks).UpdateOne(ctx, bson.M{"_id": id, "oid": oid},
		bson.M{"$inc": bson.M{"retriesRequested": 1}, "$min": bson.M{"nextAttempt": at}})
	if err != nil {
		return fmt.Errorf("asking for a notification retry: %w", err)
	}
	if res.MatchedCount == 0 {
		return errNotificationNotFound
	}
	return nil
}

// ClaimNotification leases the notification whose attempt is most
// overdue at now, and that nobody holds, until now+lease; if its holder
// dies, the lease runs out and the attempt is taken up again. It returns
// nil when none is due.
//
// Errors: none of the store kinds.
func (m *Mongo) ClaimNotification(ctx context.Context, now time.Time, lease time.Duration) (*NotificationClaim, error) {
	id := uuid.New()
	filter := bson.M{"nextAttempt": bson.M{"$lte": now},
		"$or": bson.A{bson.M{"leaseUntil": bson.M{"$exists": false}}, bson.M{"leaseUntil": bson.M{"$lte": now}}}}
	var d notificationDoc
	err := m.coll(collWebhooks).FindOneAndUpdate(ctx, filter,
		bson.M{"$set": bson.M{"leaseUntil": now.Add(lease), "leaseId": id}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "nextAttempt", Value: 1}}).
			SetReturnDocument(options.After)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claiming notification: %w", err)
	}
	n, err := d.notification()
	if err != nil {
		return nil, err
	}
	return &NotificationClaim{Notification: *n, Lease: id}, nil
}

// DeliveryAttempt is the outcome of one POST of a notification.
type DeliveryAttempt struct {
	At      time.Time
	Success bool
	// Manual: the attempt was one the API asked for, not the deliverer's
	// own.
	Manual bool
	// Next is when the next automatic attempt is due; nil ends them.
	Next *time.Time
}

// RecordNotificationAttempt counts one attempt of notification id, as
// upstream records it (attempts+1, lastAttempted; success set only by a
// successful attempt), schedules the next one and releases the lease.
// A retry asked for meanwhile stays due at once.
//
// Errors: ErrNotificationLeaseLost (the attempt is counted, the schedule
// is left to the new holder), NotFound("notification_not_found").
func (m *Mongo) RecordNotificationAttempt(ctx context.Context, id, lease uuid.UUID, a DeliveryAttempt) error {
	counted := bson.M{"lastAttempted": a.At}
	if a.Success {
		counted["success"] = true // and it stays true whatever follows
	}
	set := maps.Clone(counted)
	inc := bson.M{"attempts": 1}
	if a.Manual {
		inc["retriesRequested"] = -1
	} else {
		inc["autoAttempts"] = 1
	}
	unset := bson.M{"leaseUntil": "", "leaseId": ""}
	if a.Next != nil {
		set["nextAttempt"] = *a.Next
	} else {
		unset["nextAttempt"] = ""
	}
	var d struct {
		RetriesRequested int `bson:"retriesRequested"`
	}
	err := m.coll(collWebhooks).FindOneAndUpdate(ctx, bson.M{"_id": id, "leaseId": lease},
		bson.M{"$set": set, "$inc": inc, "$unset": unset},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		// The POST was made all the same, so attempts stays the truth.
		if err := m.updateNotification(ctx, id, bson.M{"$set": counted, "$inc": bson.M{"attempts": 1}}); err != nil {
			return err
		}
		return ErrNotificationLeaseLost
	}
	if err != nil {
		return fmt.Errorf("recording notification attempt: %w", err)
	}
	if d.RetriesRequested > 0 {
		// The update above replaced the due time the request had set.
		return m.updateNotification(ctx, id, bson.M{"$min": bson.M{"nextAttempt": a.At}})
	}
	return nil
}

// CancelNotificationDelivery drops every pending attempt of notification
// id, counting none, and releases the lease: its org no longer has a URL
// for it, which makes a send a no-op upstream too.
//
// Errors: ErrNotificationLeaseLost.
func (m *Mongo) CancelNotificationDelivery(ctx context.Context, id, lease uuid.UUID) error {
	res, err := m.coll(collWebhooks).UpdateOne(ctx, bson.M{"_id": id, "leaseId": lease},
		bson.M{"$set": bson.M{"retriesRequested": 0}, "$unset": bson.M{"nextAttempt": "", "leaseUntil": "", "leaseId": ""}})
	if err != nil {
		return fmt.Errorf("cancelling notification delivery: %w", err)
	}
	if res.MatchedCount == 0 {
		return ErrNotificationLeaseLost
	}
	return nil
}

func (m *Mongo) updateNotification(ctx context.Context, id uuid.UUID, update bson.M) error {
	res, err := m.coll(collWebhooks).UpdateOne(ctx, bson.M{"_id": id}, update)
	if err != nil {
		return fmt.Errorf("updating notification: %w", err)
	}
	if res.MatchedCount == 0 {
		return errNotificationNotFound
	}
	return nil
}
