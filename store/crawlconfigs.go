package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// CrawlConfigFilter selects workflows for ListCrawlConfigs. Nil fields do
// not filter; string filters are exact matches.
type CrawlConfigFilter struct {
	CreatedBy   *uuid.UUID
	ModifiedBy  *uuid.UUID
	FirstSeed   *string
	Name        *string
	Description *string
	// Tags must all be present on a workflow.
	Tags []string
	// Schedule true: only scheduled workflows; false: only unscheduled.
	Schedule *bool
	// SortBy is one of created, modified, firstSeed, lastCrawlTime,
	// lastCrawlStartTime, lastRun, name; "" keeps natural order.
	SortBy string
	// SortDirection is 1 or -1 (0 means -1).
	SortDirection int
	Paging
}

// CrawlConfigUpdate lists the fields of a workflow to change. Deciding
// whether settings changed (and so whether a revision is due) is the
// caller's job.
type CrawlConfigUpdate struct {
	Name                  Maybe[*string]
	Description           Maybe[*string]
	Tags                  Maybe[[]string]
	AutoAddCollections    Maybe[[]uuid.UUID]
	Schedule              Maybe[string]
	ProfileID             Maybe[*uuid.UUID]
	CrawlTimeout          Maybe[int64]
	MaxCrawlSize          Maybe[int64]
	Scale                 Maybe[int]
	CrawlFilenameTemplate Maybe[string]
	CrawlerChannel        Maybe[string]
	ProxyID               Maybe[*string]
	Config                Maybe[RawCrawlConfig]
	// SeedFile is the seed file Config names, if it names one: its first
	// URL and count become the workflow's firstSeed and seedCount.
	SeedFile *SeedFile

	Modified   time.Time
	ModifiedBy uuid.UUID
}

var errConfigNotFound = NotFound("crawl_config_not_found")

func firstSeed(c *RawCrawlConfig) string {
	if len(c.Seeds) == 0 {
		return ""
	}
	return c.Seeds[0].URL
}

// seedSummary is the firstSeed and seedCount of a config: those of its
// seeds, or of file when the config names a seed file.
func seedSummary(c *RawCrawlConfig, file *SeedFile) (string, int64) {
	if c.SeedFileID != nil && file != nil {
		return file.FirstSeed, file.SeedCount
	}
	return firstSeed(c), int64(len(c.Seeds))
}

// CreateCrawlConfig inserts the workflow c, filling c.FirstSeed and
// c.SeedCount from its seeds; a seed-file workflow keeps the caller's,
// which are the file's.
//
// Errors: Conflict("crawl_config_exists") if the id is taken.
func (m *Mongo) CreateCrawlConfig(ctx context.Context, c *CrawlConfig) error {
	if c.Config.SeedFileID == nil {
		c.FirstSeed, c.SeedCount = seedSummary(&c.Config, nil)
	}
	if _, err := m.coll(collConfigs).InsertOne(ctx, c); err != nil {
		if isDuplicate(err) {
			return Conflict("crawl_config_exists")
		}
		return fmt.Errorf("inserting crawl config: %w", err)
	}
	return nil
}

// GetCrawlConfig returns workflow cid of org oid, inactive ones included.
//
// Errors: NotFound("crawl_config_not_found"), also for another org's id.
func (m *Mongo) GetCrawlConfig(ctx context.Context, oid, cid uuid.UUID) (*CrawlConfig, error) {
	var c CrawlConfig
	err := m.coll(collConfigs).FindOne(ctx, bson.M{"_id": cid, "oid": oid}).Decode(&c)
	if err != nil {
		return nil, notFoundOr(err, errConfigNotFound, "finding crawl config")
	}
	return &c, nil
}

// CrawlConfigSeeds returns the current seeds of the workflows cids
// (inactive ones too, any org: crawls of several orgs are listed together
// for the superuser) by id; unknown ids are left out.
func (m *Mongo) CrawlConfigSeeds(ctx context.Context, cids []uuid.UUID) (map[uuid.UUID][]Seed, error) {
	out := make(map[uuid.UUID][]Seed, len(cids))
	if len(cids) == 0 {
		return out, nil
	}
	type row struct {
		ID     uuid.UUID `bson:"_id"`
		Config struct {
			Seeds []Seed `bson:"seeds"`
		} `bson:"config"`
	}
	opts := options.Find().SetProjection(bson.M{"config.seeds": 1})
	rows, err := findAll[row](ctx, m.coll(collConfigs), bson.M{"_id": bson.M{"$in": cids}}, opts, "crawl config seeds")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ID] = r.Config.Seeds
	}
	return out, nil
}

// configSorts are the sort keys of the workflow list with their secondary
// key (upstream §5.5).
var configSorts = map[string]string{
	"created":            "",
	"modified":           "",
	"firstSeed":          "",
	"name":               "firstSeed",
	"lastCrawlTime":      "modified",
	"lastCrawlStartTime": "modified",
	"lastRun":            "modified",
}

// ListCrawlConfigs returns one page of the org's active workflows matching
// f and their total.
//
// Errors: Invalid("invalid_sort_by"), Invalid("invalid_sort_direction").
func (m *Mongo) ListCrawlConfigs(ctx context.Context, oid uuid.UUID, f CrawlConfigFilter) ([]CrawlConfig, int64, error) {
	filter := bson.M{"oid": oid, "inactive": bson.M{"$ne": true}}
	matchIfSet(filter, "createdBy", f.CreatedBy)
	matchIfSet(filter, "modifiedBy", f.ModifiedBy)
	matchIfSet(filter, "firstSeed", f.FirstSeed)
	matchIfSet(filter, "name", f.Name)
	matchIfSet(filter, "description", f.Description)
	if len(f.Tags) > 0 {
		filter["tags"] = bson.M{"$all": f.Tags}
	}
	if f.Schedule != nil {
		if *f.Schedule {
			filter["schedule"] = bson.M{"$nin": bson.A{"", nil}}
		} else {
			filter["schedule"] = bson.M{"$in": bson.A{"", nil}}
		}
	}
	opts := options.Find()
	if f.SortBy != "" {
		second, ok := configSorts[f.SortBy]
		if !ok {
			return nil, 0, Invalid("invalid_sort_by")
		}
		dir, err := sortDirection(f.SortDirection)
		if err != nil {
			return nil, 0, err
		}
		sort := bson.D{{Key: f.SortBy, Value: dir}}
		if second != "" {
			sort = append(sort, bson.E{Key: second, Value: dir})
		}
		// _id last so that pages never overlap when sort keys tie.
		opts.SetSort(append(sort, bson.E{Key: "_id", Value: dir}))
	} else if _, err := sortDirection(f.SortDirection); err != nil {
		return nil, 0, err
	}
	f.apply(opts)
	return findPage[CrawlConfig](ctx, m.coll(collConfigs), filter, opts, "crawl configs")
}

// UpdateCrawlConfig applies upd to the active workflow cid of org oid,
// bumps its rev and returns the updated workflow. When rev is not nil (the
// settings changed) it is inserted first, so a crash between the two
// writes leaves at worst an extra revision, never a lost one.
//
// Errors: NotFound("crawl_config_not_found") if cid is missing, inactive or
// in another org.
func (m *Mongo) UpdateCrawlConfig(ctx context.Context, oid, cid uuid.UUID, upd CrawlConfigUpdate, rev *ConfigRevision) (*CrawlConfig, error) {
	filter := bson.M{"_id": cid, "oid": oid, "inactive": bson.M{"$ne": true}}
	if rev != nil {
		n, err := m.coll(collConfigs).CountDocuments(ctx, filter)
		if err != nil {
			return nil, fmt.Errorf("finding crawl config: %w", err)
		}
		if n == 0 {
			return nil, errConfigNotFound
		}
		if err := m.insertRevision(ctx, rev); err != nil {
			return nil, err
		}
	}
	set := bson.M{"modified": upd.Modified, "modifiedBy": upd.ModifiedBy}
	setIf(set, "name", upd.Name)
	setIf(set, "description", upd.Description)
	setIf(set, "tags", upd.Tags)
	setIf(set, "autoAddCollections", upd.AutoAddCollections)
	setIf(set, "schedule", upd.Schedule)
	setIf(set, "profileid", upd.ProfileID)
	setIf(set, "crawlTimeout", upd.CrawlTimeout)
	setIf(set, "maxCrawlSize", upd.MaxCrawlSize)
	setIf(set, "scale", upd.Scale)
	setIf(set, "crawlFilenameTemplate", upd.CrawlFilenameTemplate)
	setIf(set, "crawlerChannel", upd.CrawlerChannel)
	setIf(set, "proxyId", upd.ProxyID)
	if upd.Config.Set {
		set["config"] = upd.Config.Value
		set["firstSeed"], set["seedCount"] = seedSummary(&upd.Config.Value, upd.SeedFile)
	}
	var c CrawlConfig
	err := m.coll(collConfigs).FindOneAndUpdate(ctx, filter,
		bson.M{"$set": set, "$inc": bson.M{"rev": 1}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&c)
	if err != nil {
		return nil, notFoundOr(err, errConfigNotFound, "updating crawl config")
	}
	return &c, nil
}

// DeactivateCrawlConfig marks workflow cid inactive (it keeps its crawls
// and disappears from lists and the scheduler).
//
// Errors: NotFound("crawl_config_not_found").
func (m *Mongo) DeactivateCrawlConfig(ctx context.Context, oid, cid uuid.UUID) error {
	res, err := m.coll(collConfigs).UpdateOne(ctx, bson.M{"_id": cid, "oid": oid},
		bson.M{"$set": bson.M{"inactive": true}})
	if err != nil {
		return fmt.Errorf("deactivating crawl config: %w", err)
	}
	if res.MatchedCount == 0 {
		return errConfigNotFound
	}
	return nil
}

// DeleteCrawlConfig deletes workflow cid and its revisions. Callers delete
// only workflows that never ran (crawlAttemptCount 0).
//
// Errors: NotFound("crawl_config_not_found").
func (m *Mongo) DeleteCrawlConfig(ctx context.Context, oid, cid uuid.UUID) error {
	res, err := m.coll(collConfigs).DeleteOne(ctx, bson.M{"_id": cid, "oid": oid})
	if err != nil {
		return fmt.Errorf("deleting crawl config: %w", err)
	}
	if res.DeletedCount == 0 {
		return errConfigNotFound
	}
	if _, err := m.coll(collRevisions).DeleteMany(ctx, bson.M{"cid": cid}); err != nil {
		return fmt.Errorf("deleting crawl config revisions: %w", err)
	}
	return nil
}

// ListScheduledCrawlConfigs returns every active workflow with a schedule,
// across all orgs, for the cron scheduler.
//
// Errors: none of the store kinds.
func (m *Mongo) ListScheduledCrawlConfigs(ctx context.Context) ([]CrawlConfig, error) {
	filter := bson.M{"schedule": bson.M{"$nin": bson.A{"", nil}}, "inactive": bson.M{"$ne": true}}
	return findAll[CrawlConfig](ctx, m.coll(collConfigs), filter, options.Find(), "scheduled crawl configs")
}

// CrawlConfigTags returns the distinct tags of all the org's workflows
// (inactive ones included), sorted.
//
// Errors: none of the store kinds.
func (m *Mongo) CrawlConfigTags(ctx context.Context, oid uuid.UUID) ([]string, error) {
	return distinctStrings(ctx, m.coll(collConfigs), bson.M{"oid": oid}, "tags")
}

// CrawlConfigSearchValues returns the distinct non-empty names,
// descriptions, first seeds and the ids of all the org's workflows
// (inactive ones included).
//
// Errors: none of the store kinds.
func (m *Mongo) CrawlConfigSearchValues(ctx context.Context, oid uuid.UUID) (*SearchValues, error) {
	type row struct {
		ID          uuid.UUID `bson:"_id"`
		Name        *string   `bson:"name"`
		Description *string   `bson:"description"`
		FirstSeed   string    `bson:"firstSeed"`
	}
	opts := options.Find().SetProjection(bson.M{"name": 1, "description": 1, "firstSeed": 1})
	rows, err := findAll[row](ctx, m.coll(collConfigs), bson.M{"oid": oid}, opts, "crawl configs")
	if err != nil {
		return nil, err
	}
	var names, descs, seeds distinctSet
	sv := &SearchValues{WorkflowIDs: make([]uuid.UUID, 0, len(rows))}
	for _, r := range rows {
		names.addPtr(r.Name)
		descs.addPtr(r.Description)
		seeds.add(r.FirstSeed)
		sv.WorkflowIDs = append(sv.WorkflowIDs, r.ID)
	}
	sv.Names, sv.Descriptions, sv.FirstSeeds = names.sorted(), descs.sorted(), seeds.sorted()
	return sv, nil
}
