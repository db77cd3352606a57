package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
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
// a notification whose NextAttempt is set has an attempt pending, which
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

	// NextAttempt is when the next attempt is due (the next automatic
	// retry, or at once when a retry was asked for); nil when none is.
	NextAttempt *time.Time
	// AutoAttempts counts the attempts the deliverer made on its own (the
	// first delivery and its retries); its backoff and giving up go by it.
	AutoAttempts int
	// RetriesRequested counts the manual retries asked for and not made
	// yet; each is one attempt.
	RetriesRequested int
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
	AutoAttempts  int        `bson:"autoAttempts"`
	// RetriesRequested counts up as the API asks and down as attempts are
	// made, so that every request is one attempt, however they interleave.
	RetriesRequested int `bson:"retriesRequested"`
	// LeaseUntil and LeaseID are set while one deliverer holds the
	// notification (see ClaimNotification).
	LeaseUntil *time.Time `bson:"leaseUntil,omitempty"`
	LeaseID    *uuid.UUID `bson:"leaseId,omitempty"`
}

func (d *notificationDoc) notification() (*Notification, error) {
	body, err := bson.MarshalExtJSON(d.Body, false, false)
	if err != nil {
		return nil, fmt.Errorf("decoding notification body: %w", err)
	}
	return &Notification{ID: d.ID, Event: d.Event, OID: d.OID, Body: body, Success: d.Success,
		Attempts: d.Attempts, Created: d.Created, LastAttempted: d.LastAttempted,
		NextAttempt: d.NextAttempt, AutoAttempts: d.AutoAttempts, RetriesRequested: d.RetriesRequested}, nil
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
	n.NextAttempt, n.Success, n.Attempts, n.LastAttempted, n.AutoAttempts, n.RetriesRequested = &due, false, 0, nil, 0, 0
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
