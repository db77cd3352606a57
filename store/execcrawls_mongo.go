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
	"golang.org/x/sync/errgroup"
)

// CrawlExecCharge is one crawl's accounting tick: Seconds of crawler-pod
// time counted up to Now since the crawl's last count (Since; nil for an
// operator that does not know the crawl's clock yet).
type CrawlExecCharge struct {
	CrawlID string
	Since   *time.Time
	Now     time.Time
	Seconds int64
}

// ExecTick is the outcome of one CrawlExecCharge.
type ExecTick struct {
	// Counted is false when nothing was charged: the call had no since,
	// or the crawl was already counted past since (by an earlier leader,
	// say). LastUpdate and CrawlExecSeconds are then the stored clock to
	// adopt (LastUpdate is the call's now for a crawl never counted).
	Counted          bool
	LastUpdate       time.Time
	CrawlExecSeconds int64
	// Org is the crawl's org after the charge (nil when nothing was
	// charged, or when the org's charge failed), for the quota checks
	// that follow a tick.
	Org *Org
	// Err is this charge's failure: NotFound("crawl_not_found"), or a
	// database error. Nothing was counted.
	Err error
	// OrgErr is the failure of the org's charge after the crawl was
	// counted: the seconds are owed to the org and go with its next
	// charge (orgCharges).
	OrgErr error
}

// errCountedElsewhere answers the charges of a write that matched fewer
// crawls than it counted: another process counted some of them between
// the read and the write, and which ones is not known. Each is counted
// again, finds its stored clock moved and adopts it; the org is not
// charged for those that did match (trawler undercharges rather than
// double charges).
var errCountedElsewhere = errors.New("crawl exec seconds counted by another process")

// orgChargeCalls bounds the org charges one ChargeCrawlsExec makes at
// once (one per org its crawls belong to).
const orgChargeCalls = 8

// ChargeCrawlsExec counts each charge's crawler-pod seconds for its crawl
// and charges them to the crawl's org (§6.4, §6.5): one read and one
// write of the crawls, however many, then one charge per org. Ten
// thousand running crawls are about 170 counts a second; counted one by
// one, their round trips kept a database busy enough that crawls' state
// changes waited behind them.
//
// The crawl's _lut is the compare-and-set value: a count since another
// time than the stored _lut (when there is one) charges nothing, so a
// pass repeated after a crash never charges twice. A charge without
// Since charges nothing and writes nothing: it answers the stored clock,
// or Now for a crawl never counted, whose first count then writes its
// _lut. The caller has at most one charge of a crawl in flight (the
// operator's leader is the only one counting). An org charge that fails
// after its crawls were counted is owed to the org's next charge
// (OrgErr); a crash before that leaves the org uncharged for those
// seconds: trawler undercharges rather than double charges.
//
// The ticks are in the charges' order.
func (m *Mongo) ChargeCrawlsExec(ctx context.Context, charges []CrawlExecCharge) []ExecTick {
	ticks := make([]ExecTick, len(charges))
	stored, err := m.readExecClocks(ctx, charges)
	if err != nil {
		for i := range ticks {
			ticks[i].Err = err
		}
		return ticks
	}
	var counts []mongo.WriteModel
	var counted []int
	for i, c := range charges {
		cur, ok := stored[c.CrawlID]
		now := c.Now.UTC().Truncate(time.Second)
		switch {
		case !ok:
			ticks[i].Err = errCrawlNotFound
		case c.Since == nil || cur.LUT != nil && !sameTime(cur.LUT, c.Since):
			// The first count finds no _lut: the operator started the
			// clock in its memory alone.
			ticks[i] = ExecTick{LastUpdate: now, CrawlExecSeconds: cur.CrawlExecSeconds}
			if cur.LUT != nil {
				ticks[i].LastUpdate = cur.LUT.UTC()
			}
		default:
			cond := bson.M{"_lut": nil}
			if cur.LUT != nil {
				cond = bson.M{"_lut": *cur.LUT}
			}
			counts = append(counts, mongo.NewUpdateOneModel().SetFilter(m.condFilter(ctx, c.CrawlID, cond)).
				SetUpdate(bson.M{"$inc": bson.M{"crawlExecSeconds": c.Seconds}, "$set": bson.M{"_lut": now}}))
			counted = append(counted, i)
			ticks[i] = ExecTick{Counted: true, LastUpdate: now, CrawlExecSeconds: cur.CrawlExecSeconds + c.Seconds}
		}
	}
	if err := m.writeExecCounts(ctx, counts); err != nil {
		for _, i := range counted {
			ticks[i] = ExecTick{Err: err}
		}
		return ticks
	}
	m.chargeOrgsExec(ctx, charges, stored, counted, ticks)
	return ticks
}

// execClock is what a count reads of a crawl.
type execClock struct {
	ID               string     `bson:"_id"`
	OID              uuid.UUID  `bson:"oid"`
	CrawlExecSeconds int64      `bson:"crawlExecSeconds"`
	LUT              *time.Time `bson:"_lut"`
}

// readExecClocks reads the charged crawls' clocks in one query, by id; a
// crawl not found is absent.
func (m *Mongo) readExecClocks(ctx context.Context, charges []CrawlExecCharge) (map[string]execClock, error) {
	ids := make(bson.A, len(charges))
	for i, c := range charges {
		ids[i] = c.CrawlID
	}
	cur, err := m.coll(collCrawls).Find(ctx, bson.M{"_id": bson.M{"$in": ids}},
		options.Find().SetProjection(bson.M{"oid": 1, "crawlExecSeconds": 1, "_lut": 1}))
	if err != nil {
		return nil, fmt.Errorf("finding crawls to count: %w", err)
	}
	var clocks []execClock
	if err := cur.All(ctx, &clocks); err != nil {
		return nil, fmt.Errorf("reading crawls to count: %w", err)
	}
	byID := make(map[string]execClock, len(clocks))
	for _, c := range clocks {
		byID[c.ID] = c
	}
	return byID, nil
}

// writeExecCounts writes the crawls' counts in one unordered bulk write.
func (m *Mongo) writeExecCounts(ctx context.Context, counts []mongo.WriteModel) error {
	if len(counts) == 0 {
		return nil
	}
	res, err := m.coll(collCrawls).BulkWrite(ctx, counts, options.BulkWrite().SetOrdered(false))
	if err != nil {
		return fmt.Errorf("counting crawl exec seconds: %w", err)
	}
	if res.MatchedCount != int64(len(counts)) {
		return errCountedElsewhere
	}
	return nil
}

// chargeOrgsExec charges each org the seconds its counted crawls brought,
// as one charge per org and month, and gives each counted tick its org
// afterwards (or the org charge's failure, OrgErr).
func (m *Mongo) chargeOrgsExec(ctx context.Context, charges []CrawlExecCharge, stored map[string]execClock, counted []int, ticks []ExecTick) {
	type orgCharge struct {
		now     time.Time
		seconds int64
		ticks   []int
	}
	byOrg := map[orgMonth]*orgCharge{}
	for _, i := range counted {
		c := charges[i]
		if c.Seconds <= 0 {
			continue
		}
		now := ticks[i].LastUpdate // the count's now, as written to _lut
		key := orgMonth{oid: stored[c.CrawlID].OID, month: YearMonth(now)}
		oc := byOrg[key]
		if oc == nil {
			oc = &orgCharge{}
			byOrg[key] = oc
		}
		oc.seconds += c.Seconds
		if now.After(oc.now) {
			oc.now = now
		}
		oc.ticks = append(oc.ticks, i)
	}
	// Each org's error goes to its own ticks, so the group returns none.
	var g errgroup.Group
	g.SetLimit(orgChargeCalls)
	for key, oc := range byOrg {
		g.Go(func() error {
			org, err := m.chargeOrgExec(ctx, key.oid, oc.now, oc.seconds)
			for _, i := range oc.ticks {
				ticks[i].Org, ticks[i].OrgErr = org, err
			}
			return nil
		})
	}
	_ = g.Wait()
}
