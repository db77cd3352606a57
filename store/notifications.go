package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The webhook events an org can subscribe a URL to (the keys of
// Org.WebhookURLs).
const (
	EventCrawlStarted          = "crawlStarted"
	EventCrawlFinished         = "crawlFinished"
	EventUploadFinished        = "uploadFinished"
	EventAddedToCollection     = "addedToCollection"
	EventRemovedFromCollection = "removedFromCollection"
)

// WebhookEvents lists every event, in upstream's order.
var WebhookEvents = []string{EventCrawlStarted, EventCrawlFinished, EventUploadFinished,
	EventAddedToCollection, EventRemovedFromCollection}

// Notification is one webhook event for an org and the record of its
// delivery. The collection is also the outbox the deliverer works from:
// a notification whose NextAttempt is set has a delivery pending, which
// survives a restart of the process.
type Notification struct {
	ID    uuid.UUID
	Event string
	OID   uuid.UUID
	// Body is the JSON object POSTed to the receiver, key order kept.
	Body          json.RawMessage
	Success       bool
	Attempts      int
	Created       time.Time
	LastAttempted *time.Time

	// NextAttempt is when the pending delivery is due; nil when none is.
	NextAttempt *time.Time
	// SendAttempts counts the attempts of the current send (a send is the
	// first delivery or a manual retry, each with its own retries).
	SendAttempts int
}

// notificationDoc is the stored form: the body is a subdocument, as
// upstream stores it, and converts to and from JSON in its key order.
type notificationDoc struct {
	ID            uuid.UUID  `bson:"_id"`
	Event         string     `bson:"event"`
	OID           uuid.UUID  `bson:"oid"`
	Body          bson.Raw   `bson:"body"`
	Success       bool       `bson:"success"`
	Attempts      int        `bson:"attempts"`
	Created       time.Time  `bson:"created"`
	LastAttempted *time.Time `bson:"lastAttempted"`
	NextAttempt   *time.Time `bson:"nextAttempt,omitempty"`
	SendAttempts  int        `bson:"sendAttempts"`
}

func (d *notificationDoc) notification() (*Notification, error) {
	body, err := bson.MarshalExtJSON(d.Body, false, false)
	if err != nil {
		return nil, fmt.Errorf("decoding notification body: %w", err)
	}
	return &Notification{ID: d.ID, Event: d.Event, OID: d.OID, Body: body, Success: d.Success,
		Attempts: d.Attempts, Created: d.Created, LastAttempted: d.LastAttempted,
		NextAttempt: d.NextAttempt, SendAttempts: d.SendAttempts}, nil
}

var errNotificationNotFound = NotFound("notification_not_found")

// AddNotification stores n with its delivery due at once (NextAttempt =
// Created). It reports false, storing nothing, when a notification with
// the same id exists: callers give events that must happen once per item
// (crawlStarted, crawlFinished) an id derived from the item, so that
// repeating the call after a crash sends nothing twice.
//
// Errors: Invalid("invalid_body") if Body is not a JSON object.
func (m *Mongo) AddNotification(ctx context.Context, n *Notification) (bool, error) {
	var body bson.Raw
	if err := bson.UnmarshalExtJSON(n.Body, false, &body); err != nil {
		return false, Invalid("invalid_body")
	}
	due := n.Created
	doc := notificationDoc{ID: n.ID, Event: n.Event, OID: n.OID, Body: body, Created: n.Created, NextAttempt: &due}
	if _, err := m.coll(collWebhooks).InsertOne(ctx, doc); err != nil {
		if isDuplicate(err) {
			return false, nil
		}
		return false, fmt.Errorf("inserting notification: %w", err)
	}
	n.NextAttempt, n.Success, n.Attempts, n.LastAttempted, n.SendAttempts = &due, false, 0, nil, 0
	return true, nil
}

// ListNotifications returns one page of the org's notifications in the
// order they were created, and their total.
//
// Errors: none of the store kinds.
func (m *Mongo) ListNotifications(ctx context.Context, oid uuid.UUID, p Paging) ([]Notification, int64, error) {
	opts := options.Find().SetSort(bson.D{{Key: "created", Value: 1}, {Key: "_id", Value: 1}})
	p.apply(opts)
	docs, total, err := findPage[notificationDoc](ctx, m.coll(collWebhooks), bson.M{"oid": oid}, opts, "notifications")
	if err != nil {
		return nil, 0, err
	}
	out := make([]Notification, len(docs))
	for i := range docs {
		n, err := docs[i].notification()
		if err != nil {
			return nil, 0, err
		}
		out[i] = *n
	}
	return out, total, nil
}

// GetNotification returns the org's notification id.
//
// Errors: NotFound("notification_not_found").
func (m *Mongo) GetNotification(ctx context.Context, oid, id uuid.UUID) (*Notification, error) {
	var d notificationDoc
	if err := m.coll(collWebhooks).FindOne(ctx, bson.M{"_id": id, "oid": oid}).Decode(&d); err != nil {
		return nil, notFoundOr(err, errNotificationNotFound, "finding notification")
	}
	return d.notification()
}

// RetryNotification starts a new send of the org's notification id, due
// at at, whatever became of the earlier ones.
//
// Errors: NotFound("notification_not_found").
func (m *Mongo) RetryNotification(ctx context.Context, oid, id uuid.UUID, at time.Time) error {
	res, err := m.coll(collWebhooks).UpdateOne(ctx, bson.M{"_id": id, "oid": oid},
		bson.M{"$set": bson.M{"nextAttempt": at, "sendAttempts": 0}})
	if err != nil {
		return fmt.Errorf("scheduling notification: %w", err)
	}
	if res.MatchedCount == 0 {
		return errNotificationNotFound
	}
	return nil
}

// ClaimNotification picks the notification whose delivery is most overdue
// at now and moves its NextAttempt to now+lease, so that no other
// deliverer takes it meanwhile; if this one dies, the lease runs out and
// the delivery is taken up again. It returns nil when none is due.
//
// Errors: none of the store kinds.
func (m *Mongo) ClaimNotification(ctx context.Context, now time.Time, lease time.Duration) (*Notification, error) {
	var d notificationDoc
	err := m.coll(collWebhooks).FindOneAndUpdate(ctx, bson.M{"nextAttempt": bson.M{"$lte": now}},
		bson.M{"$set": bson.M{"nextAttempt": now.Add(lease)}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "nextAttempt", Value: 1}}).
			SetReturnDocument(options.After)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claiming notification: %w", err)
	}
	return d.notification()
}

// DeliveryAttempt is the outcome of one POST of a notification.
type DeliveryAttempt struct {
	At      time.Time
	Success bool
	// Next is when to try again; nil ends the send.
	Next *time.Time
}

// RecordNotificationAttempt counts one attempt of notification id, as
// upstream records it (attempts+1, lastAttempted; success set only by a
// successful attempt), and schedules the next one or ends the send.
//
// Errors: NotFound("notification_not_found").
func (m *Mongo) RecordNotificationAttempt(ctx context.Context, id uuid.UUID, a DeliveryAttempt) error {
	set := bson.M{"lastAttempted": a.At}
	if a.Success {
		set["success"] = true
	}
	update := bson.M{"$set": set, "$inc": bson.M{"attempts": 1, "sendAttempts": 1}}
	if a.Next != nil {
		set["nextAttempt"] = *a.Next
	} else {
		update["$unset"] = bson.M{"nextAttempt": ""}
	}
	return m.updateNotification(ctx, id, update)
}

// EndNotificationSend drops the pending delivery of notification id
// without counting an attempt (its org no longer has a URL for it).
//
// Errors: NotFound("notification_not_found").
func (m *Mongo) EndNotificationSend(ctx context.Context, id uuid.UUID) error {
	return m.updateNotification(ctx, id, bson.M{"$unset": bson.M{"nextAttempt": ""}})
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
