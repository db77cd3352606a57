package store

import (
	"time"

	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// CrawlFilter selects crawls for ListCrawls. Nil fields do not filter;
// string filters are exact matches.
type CrawlFilter struct {
	// AllOrgs lists crawls of every org (superuser routes); the oid
	// argument of ListCrawls is then ignored.
	AllOrgs bool
	// Types restricts the crawl type. Nil means crawls only (type "crawl"
	// or no type), as the /crawls routes want; all-crawls passes
	// []string{TypeCrawl, TypeUpload} or one of them.
	Types       []string
	UserID      *uuid.UUID
	CID         *uuid.UUID
	States      []string // empty: any state
	FirstSeed   *string
	Name        *string
	Description *string
	// CollectionID keeps crawls that belong to this collection.
	CollectionID *uuid.UUID
	// SortBy is one of started, finished, fileSize, firstSeed; "" keeps
	// natural order (all-crawls passes "finished", its default).
	SortBy string
	// SortDirection is 1 or -1 (0 means -1).
	SortDirection int
	Paging
}

// CrawlUpdate lists the user-editable fields of a crawl to change.
// Collection membership changes through AddToCollection and
// RemoveFromCollection, which recount the collections.
type CrawlUpdate struct {
	Name        Maybe[*string]
	Description Maybe[*string]
	Tags        Maybe[[]string]
}

// DeleteResult reports what DeleteCrawls removed.
type DeleteResult struct {
	Deleted int
	// Size is the total fileSize of the deleted crawls; SizeByWorkflow
	// splits it per workflow.
	Size           int64
	SizeByWorkflow map[uuid.UUID]int64
}

var errCrawlNotFound = NotFound("crawl_not_found")

// crawlSorts are the sort keys of the crawl lists.
var crawlSorts = map[string]bool{"started": true, "finished": true, "fileSize": true, "firstSeed": true}

// AddCrawl inserts a new crawl (normally in state starting) and records
// its start on its workflow: crawlAttemptCount + 1 and the last-crawl
// fields pointing at it (recomputed, see RecomputeWorkflowStats). It fills
// c.FirstSeed (a seed-file crawl keeps the caller's), c.Type ("crawl" if empty), a state history of the first
// state, and turns nil lists into empty ones.
//
// A crawl of a workflow that has not ended holds its workflow in
// activeCid, which a unique index keeps to one crawl: the insert itself is
// the compare-and-set that lets only one of two concurrent starts of a
// workflow (two API replicas, a user and the scheduler) through, on
// MongoDB and on FerretDB alike. SetCrawlState frees it when the crawl
// ends.
//
// Errors: ErrCrawlExists if the id is taken, ErrCrawlAlreadyRunning if
// the workflow has a crawl that has not ended (the workflow is then left
// alone).
func (m *Mongo) AddCrawl(ctx context.Context, c *Crawl) error {
	if c.Config.SeedFileID == nil {
		c.FirstSeed = firstSeed(&c.Config)
	}
	if c.Type == "" {
		c.Type = TypeCrawl
	}
	if c.Files == nil {
		c.Files = []CrawlFile{}
	}
	if c.Errors == nil {
		c.Errors = []string{}
	}
	if c.CollectionIDs == nil {
		c.CollectionIDs = []uuid.UUID{}
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.StateHistory == nil {
		c.StateHistory = c.History()
	}
	c.ActiveCID = nil
	if c.Type == TypeCrawl && c.CID != uuid.Nil && !IsFinished(c.State) {
		cid := c.CID
		c.ActiveCID = &cid
	}
	if err := m.insertCrawl(ctx, c); err != nil {
		return err
	}
	if _, err := m.coll(collConfigs).UpdateOne(ctx, bson.M{"_id": c.CID, "oid": c.OID},
		bson.M{"$inc": bson.M{"crawlAttemptCount": 1}}); err != nil {
		return fmt.Errorf("counting crawl attempt on workflow: %w", err)
	}
	// Through the recomputation, not a plain $set: one of the previous
	// crawl's post-crawl tasks may be recomputing right now from crawls read
	// before this insert, and must not write its older view over this one.
	if err := m.RecomputeWorkflowStats(ctx, c.CID); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("recording crawl start on workflow: %w", err)
	}
	return nil
}

// insertCrawl inserts c, telling a taken id from a workflow that has a
// crawl running. A slot held by a crawl that has ended (its release lost,
// as a concurrent write on FerretDB can lose it) is freed, once.
func (m *Mongo) insertCrawl(ctx context.Context, c *Crawl) error {
	for attempt := 0; ; attempt++ {
		_, err := m.coll(collCrawls).InsertOne(ctx, c)
		switch {
		case err == nil:
			return nil
		case !isDuplicate(err):
			return fmt.Errorf("inserting crawl: %w", err)
		}
		if _, err := m.GetCrawlByID(ctx, c.ID); err == nil {
			return ErrCrawlExists
		}
		if c.ActiveCID == nil || attempt > 0 {
			return ErrCrawlAlreadyRunning
		}
		var holder struct {
			ID    string `bson:"_id"`
			State string `bson:"state"`
		}
		read := options.FindOne().SetProjection(bson.M{"state": 1})
		err = m.coll(collCrawls).FindOne(ctx, bson.M{"activeCid": c.ActiveCID}, read).Decode(&holder)
		switch {
		case errors.Is(err, mongo.ErrNoDocuments):
			// Freed in between: try again.
		case err != nil:
			return fmt.Errorf("finding the workflow's running crawl: %w", err)
		case !IsFinished(holder.State):
			return ErrCrawlAlreadyRunning
		default:
			if _, err := m.coll(collCrawls).UpdateOne(ctx, bson.M{"_id": holder.ID}, bson.M{"$unset": bson.M{"activeCid": ""}}); err != nil {
				return fmt.Errorf("freeing the workflow of ended crawl %s: %w", holder.ID, err)
			}
		}
	}
}

// GetCrawl returns crawl id of org oid, of any type, with files.
//
// Errors: NotFound("crawl_not_found"), also for another org's id.
func (m *Mongo) GetCrawl(ctx context.Context, oid uuid.UUID, id string) (*Crawl, error) {
	// Filter by _id alone and check the org here: FerretDB uses an index
	// only for exactly {_id} (see condFilter).
	c, err := m.GetCrawlByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.OID != oid {
		return nil, errCrawlNotFound
	}
	return c, nil
}

// GetCrawlByID returns crawl id in whatever org it is (operator and
// superuser routes).
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) GetCrawlByID(ctx context.Context, id string) (*Crawl, error) {
	var c Crawl
	if err := m.coll(collCrawls).FindOne(ctx, bson.M{"_id": id}).Decode(&c); err != nil {
		return nil, notFoundOr(err, errCrawlNotFound, "finding crawl")
	}
	return &c, nil
}

// typeFilter matches crawl types; nil means type "crawl" or none.
func typeFilter(types []string) bson.M {
	if types == nil {
		types = []string{TypeCrawl}
	}
	in := bson.A{}
	for _, t := range types {
		in = append(in, t)
		if t == TypeCrawl {
			in = append(in, nil) // crawls written before types existed
		}
	}
	return bson.M{"$in": in}
}

// ListCrawls returns one page of crawls matching f, without their files
// and errors, and the total number matching.
//
// Errors: Invalid("invalid_sort_by"), Invalid("invalid_sort_direction").
func (m *Mongo) ListCrawls(ctx context.Context, oid uuid.UUID, f CrawlFilter) ([]Crawl, int64, error) {
	filter := bson.M{"type": typeFilter(f.Types)}
	if !f.AllOrgs {
		filter["oid"] = oid
	}
	matchIfSet(filter, "userid", f.UserID)
	matchIfSet(filter, "cid", f.CID)
	if len(f.States) > 0 {
		filter["state"] = bson.M{"$in": f.States}
	}
	matchIfSet(filter, "firstSeed", f.FirstSeed)
	matchIfSet(filter, "name", f.Name)
	matchIfSet(filter, "description", f.Description)
	matchIfSet(filter, "collectionIds", f.CollectionID)
	dir, err := sortDirection(f.SortDirection)
	if err != nil {
		return nil, 0, err
	}
	opts := options.Find().SetProjection(bson.M{"files": 0, "errors": 0})
	if f.SortBy != "" {
		if !crawlSorts[f.SortBy] {
			return nil, 0, Invalid("invalid_sort_by")
		}
		opts.SetSort(bson.D{{Key: f.SortBy, Value: dir}, {Key: "_id", Value: dir}})
	}
	f.apply(opts)
	return findPage[Crawl](ctx, m.coll(collCrawls), filter, opts, "crawls")
}

// ActiveCrawls returns the crawls of workflow cid that have not ended
// (starting, waiting or running states), oldest first.
//
// Errors: none of the store kinds.
func (m *Mongo) ActiveCrawls(ctx context.Context, oid, cid uuid.UUID) ([]Crawl, error) {
	filter := bson.M{"oid": oid, "cid": cid, "state": bson.M{"$in": ActiveStates}}
	opts := options.Find().SetProjection(bson.M{"files": 0, "errors": 0}).
		SetSort(bson.D{{Key: "started", Value: 1}})
	return findAll[Crawl](ctx, m.coll(collCrawls), filter, opts, "active crawls")
}

// UpdateCrawl changes the user-editable fields set in upd (of a crawl or
// an upload). New tags are recounted in the item's collections.
//
// Errors: Invalid("no_update_data") if upd sets nothing;
// NotFound("crawl_not_found").
func (m *Mongo) UpdateCrawl(ctx context.Context, oid uuid.UUID, id string, upd CrawlUpdate) error {
	set := bson.M{}
	setIf(set, "name", upd.Name)
	setIf(set, "description", upd.Description)
	setIf(set, "tags", upd.Tags)
	if len(set) == 0 {
		return Invalid("no_update_data")
	}
	if !upd.Tags.Set {
		return m.setCrawl(ctx, oid, id, set)
	}
	// The write returns the item's collections as they are after it: a
	// membership change racing with the edit is either seen here or
	// recounts the new tags itself.
	var after struct {
		CollectionIDs []uuid.UUID `bson:"collectionIds"`
	}
	if err := m.setCrawlReturning(ctx, oid, id, set, &after); err != nil {
		return err
	}
	return m.recomputeCollections(ctx, after.CollectionIDs)
}

// SetCrawlStopping records that the user asked the crawl to stop.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) SetCrawlStopping(ctx context.Context, oid uuid.UUID, id string, stopping bool) error {
	return m.setCrawl(ctx, oid, id, bson.M{"stopping": stopping})
}

// SetCrawlScale records the crawl's new scale.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) SetCrawlScale(ctx context.Context, oid uuid.UUID, id string, scale int) error {
	return m.setCrawl(ctx, oid, id, bson.M{"scale": scale})
}

// SetCrawlConfig replaces the crawl's copy of the crawler configuration
// (after an exclusion change).
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) SetCrawlConfig(ctx context.Context, oid uuid.UUID, id string, cfg RawCrawlConfig) error {
	set := bson.M{"config": cfg}
	if cfg.SeedFileID == nil { // a seed-file crawl's firstSeed is its file's
		set["firstSeed"] = firstSeed(&cfg)
	}
	return m.setCrawl(ctx, oid, id, set)
}

// setCrawl sets fields of crawl id after checking that it is in org oid.
// A crawl never changes org, so checking first and writing by _id alone
// (fast on FerretDB, see condFilter) is as safe as one filter.
func (m *Mongo) setCrawl(ctx context.Context, oid uuid.UUID, id string, set bson.M) error {
	if err := m.checkItemOrg(ctx, oid, id); err != nil {
		return err
	}
	res, err := m.coll(collCrawls).UpdateOne(ctx, bson.M{"_id": id}, bson.M{"$set": set})
	if err != nil {
		return fmt.Errorf("updating crawl: %w", err)
	}
	if res.MatchedCount == 0 {
		return errCrawlNotFound
	}
	return nil
}

// setCrawlReturning is setCrawl that decodes the crawl as it is after the
// write into after, in the write's own round trip. FerretDB v1 has no
// findAndModify projection ("fields"), so the whole document comes back.
func (m *Mongo) setCrawlReturning(ctx context.Context, oid uuid.UUID, id string, set bson.M, after any) error {
	if err := m.checkItemOrg(ctx, oid, id); err != nil {
		return err
	}
	write := options.FindOneAndUpdate().SetReturnDocument(options.After)
	if err := m.coll(collCrawls).FindOneAndUpdate(ctx, bson.M{"_id": id}, bson.M{"$set": set}, write).Decode(after); err != nil {
		return notFoundOr(err, errCrawlNotFound, "updating crawl")
	}
	return nil
}

// DeleteCrawls deletes those of ids that are crawls of org oid (any type),
// their error lines and pages, and then recomputes the stats of their workflows,
// collections and the org's bytesStored. Ids not found are skipped.
// Storage objects and running CrawlJobs are the caller's business.
//
// A crash after the delete and before the recomputation leaves stale
// stats until the workflow's next crawl ends or next delete.
//
// Errors: NotFound("crawl_not_found") if none of ids was found.
func (m *Mongo) DeleteCrawls(ctx context.Context, oid uuid.UUID, ids []string) (*DeleteResult, error) {
	type row struct {
		ID            string      `bson:"_id"`
		CID           uuid.UUID   `bson:"cid"`
		FileSize      int64       `bson:"fileSize"`
		CollectionIDs []uuid.UUID `bson:"collectionIds"`
	}
	filter := bson.M{"_id": bson.M{"$in": ids}, "oid": oid}
	opts := options.Find().SetProjection(bson.M{"cid": 1, "fileSize": 1, "collectionIds": 1})
	rows, err := findAll[row](ctx, m.coll(collCrawls), filter, opts, "crawls to delete")
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errCrawlNotFound
	}
	found := make([]string, 0, len(rows))
	res := &DeleteResult{SizeByWorkflow: map[uuid.UUID]int64{}}
	colls := map[uuid.UUID]bool{}
	for _, r := range rows {
		found = append(found, r.ID)
		res.Size += r.FileSize
		if r.CID != uuid.Nil {
			res.SizeByWorkflow[r.CID] += r.FileSize
		}
		for _, c := range r.CollectionIDs {
			colls[c] = true
		}
	}
	del, err := m.coll(collCrawls).DeleteMany(ctx, bson.M{"_id": bson.M{"$in": found}, "oid": oid})
	if err != nil {
		return nil, fmt.Errorf("deleting crawls: %w", err)
	}
	res.Deleted = int(del.DeletedCount)
	if _, err := m.coll(collCrawlErrors).DeleteMany(ctx, bson.M{"crawlId": bson.M{"$in": found}}); err != nil {
		return nil, fmt.Errorf("deleting crawl errors: %w", err)
	}
	if err := m.DeletePages(ctx, found); err != nil {
		return nil, err
	}
	for cid := range res.SizeByWorkflow {
		if err := m.RecomputeWorkflowStats(ctx, cid); err != nil {
			return nil, err
		}
	}
	if err := m.recomputeCollections(ctx, slices.Collect(maps.Keys(colls))); err != nil {
		return nil, err
	}
	if err := m.RecomputeOrgBytesStored(ctx, oid); err != nil {
		return nil, err
	}
	return res, nil
}

// CrawlSearchValues returns the distinct non-empty names, descriptions and
// first seeds of the org's crawls of the given types (nil as in
// CrawlFilter.Types).
//
// Errors: none of the store kinds.
func (m *Mongo) CrawlSearchValues(ctx context.Context, oid uuid.UUID, types []string) (*SearchValues, error) {
	type row struct {
		Name        *string `bson:"name"`
		Description *string `bson:"description"`
		FirstSeed   string  `bson:"firstSeed"`
	}
	opts := options.Find().SetProjection(bson.M{"name": 1, "description": 1, "firstSeed": 1})
	filter := bson.M{"oid": oid, "type": typeFilter(types)}
	rows, err := findAll[row](ctx, m.coll(collCrawls), filter, opts, "crawls")
	if err != nil {
		return nil, err
	}
	var names, descs, seeds distinctSet
	for _, r := range rows {
		names.addPtr(r.Name)
		descs.addPtr(r.Description)
		seeds.add(r.FirstSeed)
	}
	return &SearchValues{Names: names.sorted(), Descriptions: descs.sorted(), FirstSeeds: seeds.sorted()}, nil
}

// SetCrawlPause records a pause request at pausedAt, or a resume when
// pausedAt is nil. A resume also re-arms the e-mail of an automatic
// pause. It returns the crawl as it is after the change.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) SetCrawlPause(ctx context.Context, oid uuid.UUID, id string, pausedAt *time.Time) (*Crawl, error) {
	set := bson.M{"shouldPause": pausedAt != nil, "pausedAt": pausedAt}
	if pausedAt == nil {
		set["autoPausedEmailsSent"] = false
	}
	// One round trip for the write and the read-back: a hundred pauses at
	// once wait on the store in line.
	var c Crawl
	if err := m.setCrawlReturning(ctx, oid, id, set, &c); err != nil {
		return nil, err
	}
	return &c, nil
}
