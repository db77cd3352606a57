package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// QuotasUpdate is POST /orgs/{oid}/quotas: the baseline's three quotas
// are replaced (absent is 0, as in 2023); each execution-time quota is
// set when given and left as it is when nil (upstream's "set" mode).
type QuotasUpdate struct {
	MaxConcurrentCrawls int
	MaxPagesPerCrawl    int
	StorageQuota        int64

	MaxExecMinutesPerMonth, ExtraExecMinutes, GiftedExecMinutes *int64
	// Modified is when the update was made (quotaUpdates).
	Modified time.Time
}

// UpdateOrgQuotas applies u, appends it to the org's quotaUpdates and
// moves the available gifted and extra seconds by the change of their
// totals (never below 0).
//
// Errors: NotFound("org_not_found").
func (m *Mongo) UpdateOrgQuotas(ctx context.Context, id uuid.UUID, u QuotasUpdate) error {
	defer m.lockOrg(id)()
	org, err := m.GetOrg(ctx, id)
	if err != nil {
		return err
	}
	set := bson.M{"quotas.maxConcurrentCrawls": u.MaxConcurrentCrawls, "quotas.maxPagesPerCrawl": u.MaxPagesPerCrawl,
		"quotas.storageQuota": u.StorageQuota}
	sent := bson.M{"maxConcurrentCrawls": u.MaxConcurrentCrawls, "maxPagesPerCrawl": u.MaxPagesPerCrawl,
		"storageQuota": u.StorageQuota}
	if v := u.MaxExecMinutesPerMonth; v != nil {
		set["quotas.maxExecMinutesPerMonth"], sent["maxExecMinutesPerMonth"] = *v, *v
	}
	if v := u.ExtraExecMinutes; v != nil {
		set["quotas.extraExecMinutes"], sent["extraExecMinutes"] = *v, *v
		set["extraExecSecondsAvailable"] = availableAfter(org.ExtraExecSecondsAvailable, org.Quotas.ExtraExecMinutes, *v)
	}
	if v := u.GiftedExecMinutes; v != nil {
		set["quotas.giftedExecMinutes"], sent["giftedExecMinutes"] = *v, *v
		set["giftedExecSecondsAvailable"] = availableAfter(org.GiftedExecSecondsAvailable, org.Quotas.GiftedExecMinutes, *v)
	}
	return m.updateOrg(ctx, id, bson.M{"$set": set,
		"$push": bson.M{"quotaUpdates": bson.M{"modified": u.Modified.UTC().Truncate(time.Millisecond), "update": sent}}})
}

// writeOrgExecCharge charges d seconds counted at now to org oid and
// returns the org afterwards; the caller holds the org's lock.
func (m *Mongo) writeOrgExecCharge(ctx context.Context, oid uuid.UUID, now time.Time, d int64) (*Org, error) {
	org, err := m.GetOrg(ctx, oid)
	if err != nil {
		return nil, err
	}
	c := SplitExecCharge(org, now, d)
	inc := bson.M{"crawlExecSeconds." + c.Month: c.Total}
	if c.Monthly > 0 {
		inc["monthlyExecSeconds."+c.Month] = c.Monthly
	}
	if c.Gifted > 0 {
		inc["giftedExecSeconds."+c.Month] = c.Gifted
		inc["giftedExecSecondsAvailable"] = -c.Gifted
	}
	if c.Extra > 0 {
		inc["extraExecSeconds."+c.Month] = c.Extra
		inc["extraExecSecondsAvailable"] = -c.Extra
	}
	var out Org
	err = m.coll(collOrgs).FindOneAndUpdate(ctx, bson.M{"_id": oid}, bson.M{"$inc": inc},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&out)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, errOrgNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("charging org exec seconds: %w", err)
	}
	return &out, nil
}

// ClaimAutoPauseEmail reports whether the owners are to be told of crawl
// id's automatic pause: true once, until a resume clears the flag.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) ClaimAutoPauseEmail(ctx context.Context, id string) (bool, error) {
	defer m.lockCrawl(id)()
	var cur struct {
		Sent bool `bson:"autoPausedEmailsSent"`
	}
	read := options.FindOne().SetProjection(bson.M{"autoPausedEmailsSent": 1})
	if err := m.coll(collCrawls).FindOne(ctx, bson.M{"_id": id}, read).Decode(&cur); err != nil {
		return false, notFoundOr(err, errCrawlNotFound, "finding crawl")
	}
	if cur.Sent {
		return false, nil
	}
	res, err := m.coll(collCrawls).UpdateOne(ctx,
		m.condFilter(ctx, id, bson.M{"autoPausedEmailsSent": bson.M{"$ne": true}}),
		bson.M{"$set": bson.M{"autoPausedEmailsSent": true}})
	if err != nil {
		return false, fmt.Errorf("claiming auto-pause e-mail: %w", err)
	}
	return res.MatchedCount == 1, nil
}

// RequestCrawlPause records on crawl id that a pause was asked for at at
// (shouldPause, pausedAt), as the pause route does.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) RequestCrawlPause(ctx context.Context, id string, at time.Time) error {
	res, err := m.coll(collCrawls).UpdateOne(ctx, bson.M{"_id": id},
		bson.M{"$set": bson.M{"shouldPause": true, "pausedAt": at.UTC().Truncate(time.Second)}})
	if err != nil {
		return fmt.Errorf("recording pause request: %w", err)
	}
	if res.MatchedCount == 0 {
		return errCrawlNotFound
	}
	return nil
}

// OrgOwnerEmails returns the e-mail addresses of the org's owners.
//
// Errors: NotFound("org_not_found").
func (m *Mongo) OrgOwnerEmails(ctx context.Context, oid uuid.UUID) ([]string, error) {
	org, err := m.GetOrg(ctx, oid)
	if err != nil {
		return nil, err
	}
	var ids bson.A
	for id, role := range org.Users {
		if uid, err := uuid.Parse(id); err == nil && role >= RoleOwner {
			ids = append(ids, uid)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	cur, err := m.coll(collUsers).Find(ctx, bson.M{"id": bson.M{"$in": ids}},
		options.Find().SetProjection(bson.M{"email": 1}).SetSort(bson.M{"email": 1}))
	if err != nil {
		return nil, fmt.Errorf("finding org owners: %w", err)
	}
	var users []struct {
		Email string `bson:"email"`
	}
	if err := cur.All(ctx, &users); err != nil {
		return nil, fmt.Errorf("reading org owners: %w", err)
	}
	emails := make([]string, 0, len(users))
	for _, u := range users {
		emails = append(emails, u.Email)
	}
	return emails, nil
}

// lockOrg serialises this process's read-then-write changes of org id's
// exec counters, and returns the unlock function. Its stripes are not
// the crawls': a crawl's count never waits for an org's write.
func (m *Mongo) lockOrg(id uuid.UUID) func() {
	mu := &m.orgLocks[id[len(id)-1]%uint8(len(m.orgLocks))]
	mu.Lock()
	return mu.Unlock
}

// sameTime reports whether two optional times are the same instant, to
// the millisecond MongoDB keeps.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Truncate(time.Millisecond).Equal(b.Truncate(time.Millisecond))
}
