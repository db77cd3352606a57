package api

import (
	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// crawlConfigOut is a workflow on the wire (upstream CrawlConfigOut).
type crawlConfigOut struct {
	ID                   uuid.UUID    `json:"id"`
	OID                  uuid.UUID    `json:"oid"`
	Name                 *string      `json:"name"`
	Description          *string      `json:"description"`
	Schedule             string       `json:"schedule"`
	JobType              string       `json:"jobType"`
	Config               rawConfigOut `json:"config"`
	Tags                 []string     `json:"tags"`
	CrawlTimeout         int64        `json:"crawlTimeout"`
	MaxCrawlSize         int64        `json:"maxCrawlSize"`
	Scale                int          `json:"scale"`
	ProfileID            *uuid.UUID   `json:"profileid"`
	Created              string       `json:"created"`
	CreatedBy            uuid.UUID    `json:"createdBy"`
	Modified             string       `json:"modified"`
	ModifiedBy           uuid.UUID    `json:"modifiedBy"`
	AutoAddCollections   []uuid.UUID  `json:"autoAddCollections"`
	Inactive             bool         `json:"inactive"`
	Rev                  int          `json:"rev"`
	CrawlAttemptCount    int          `json:"crawlAttemptCount"`
	CrawlCount           int          `json:"crawlCount"`
	CrawlSuccessfulCount int          `json:"crawlSuccessfulCount"`
	TotalSize            int64        `json:"totalSize"`
	LastCrawlID          *string      `json:"lastCrawlId"`
	LastCrawlStartTime   *string      `json:"lastCrawlStartTime"`
	LastStartedBy        *uuid.UUID   `json:"lastStartedBy"`
	LastCrawlTime        *string      `json:"lastCrawlTime"`
	LastCrawlState       *string      `json:"lastCrawlState"`
	LastCrawlSize        *int64       `json:"lastCrawlSize"`
	LastRun              *string      `json:"lastRun"`
	IsCrawlRunning       bool         `json:"isCrawlRunning"`
	LastCrawlStopping    bool         `json:"lastCrawlStopping"`
	// The running crawl's pause: upstream's fields, null when none runs.
	LastCrawlShouldPause  bool    `json:"lastCrawlShouldPause"`
	LastCrawlPausedAt     *string `json:"lastCrawlPausedAt"`
	LastCrawlPausedExpiry *string `json:"lastCrawlPausedExpiry"`
	ProfileName           *string `json:"profileName"`
	CreatedByName         *string `json:"createdByName"`
	ModifiedByName        *string `json:"modifiedByName"`
	LastStartedByName     *string `json:"lastStartedByName"`
	FirstSeed             *string `json:"firstSeed"`
	CrawlerChannel        string  `json:"crawlerChannel"`
	// ProxyID is the workflow's proxy; GET of one workflow with a profile
	// shows the profile's (getCrawlConfig).
	ProxyID *string `json:"proxyId"`
	// SeedCount is the seed file's line count, on seed-file workflows
	// only: the others keep their 2023 shape.
	SeedCount *int64 `json:"seedCount,omitempty"`
}

// toCrawlConfigOut converts a workflow; users resolves the …ByName
// fields.
func toCrawlConfigOut(c *store.CrawlConfig, users map[uuid.UUID]store.User) crawlConfigOut {
	tags := c.Tags
	if tags == nil {
		tags = []string{}
	}
	colls := c.AutoAddCollections
	if colls == nil {
		colls = []uuid.UUID{}
	}
	out := crawlConfigOut{
		ID: c.ID, OID: c.OID, Name: c.Name, Description: c.Description, Schedule: c.Schedule,
		JobType: c.JobType, Config: toRawConfigOut(c.Config), Tags: tags, CrawlTimeout: c.CrawlTimeout,
		MaxCrawlSize: c.MaxCrawlSize, Scale: c.Scale, ProfileID: c.ProfileID,
		Created: fmtTime(c.Created), CreatedBy: c.CreatedBy, Modified: fmtTime(c.Modified),
		ModifiedBy: c.ModifiedBy, AutoAddCollections: colls, Inactive: c.Inactive, Rev: c.Rev,
		CrawlAttemptCount: c.CrawlAttemptCount, CrawlCount: c.CrawlCount,
		CrawlSuccessfulCount: c.CrawlSuccessfulCount, TotalSize: c.TotalSize,
		LastCrawlID: c.LastCrawlID, LastCrawlStartTime: fmtTimePtr(c.LastCrawlStartTime),
		LastStartedBy: c.LastStartedBy, LastCrawlTime: fmtTimePtr(c.LastCrawlTime),
		LastCrawlState: c.LastCrawlState, LastCrawlSize: c.LastCrawlSize, LastRun: fmtTimePtr(c.LastRun),
		IsCrawlRunning: c.IsCrawlRunning, LastCrawlStopping: c.LastCrawlStopping,
		LastCrawlShouldPause: c.LastCrawlShouldPause, LastCrawlPausedAt: fmtTimePtr(c.LastCrawlPausedAt),
		CreatedByName: userName(users, &c.CreatedBy), ModifiedByName: userName(users, &c.ModifiedBy),
		LastStartedByName: userName(users, c.LastStartedBy), CrawlerChannel: channelOf(c.CrawlerChannel),
		ProxyID: c.ProxyID,
	}
	if c.FirstSeed != "" {
		out.FirstSeed = &c.FirstSeed
	}
	if c.Config.SeedFileID != nil {
		out.SeedCount = &c.SeedCount
	}
	return out
}

func userName(users map[uuid.UUID]store.User, id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	u, ok := users[*id]
	if !ok {
		return nil
	}
	return &u.Name
}

// workflowUserIDs are the users a workflow's …ByName fields name.
func workflowUserIDs(cs ...store.CrawlConfig) []uuid.UUID {
	var ids []uuid.UUID
	for _, c := range cs {
		ids = append(ids, c.CreatedBy, c.ModifiedBy)
		if c.LastStartedBy != nil {
			ids = append(ids, *c.LastStartedBy)
		}
	}
	return ids
}

// revisionOut is one ConfigRevision.
type revisionOut struct {
	ID             uuid.UUID    `json:"id"`
	CID            uuid.UUID    `json:"cid"`
	Schedule       string       `json:"schedule"`
	Config         rawConfigOut `json:"config"`
	ProfileID      *uuid.UUID   `json:"profileid"`
	CrawlTimeout   int64        `json:"crawlTimeout"`
	MaxCrawlSize   int64        `json:"maxCrawlSize"`
	Scale          int          `json:"scale"`
	Modified       string       `json:"modified"`
	ModifiedBy     uuid.UUID    `json:"modifiedBy"`
	Rev            int          `json:"rev"`
	CrawlerChannel string       `json:"crawlerChannel"`
}

func toRevisionOut(r *store.ConfigRevision) revisionOut {
	return revisionOut{ID: r.ID, CID: r.CID, Schedule: r.Schedule, Config: toRawConfigOut(r.Config),
		ProfileID: r.ProfileID, CrawlTimeout: r.CrawlTimeout, MaxCrawlSize: r.MaxCrawlSize, Scale: r.Scale,
		Modified: fmtTime(r.Modified), ModifiedBy: r.ModifiedBy, Rev: r.Rev, CrawlerChannel: channelOf(r.CrawlerChannel)}
}

// Response bodies of the workflow routes.
type (
	crawlConfigAddedOut struct {
		Added               bool      `json:"added"`
		ID                  uuid.UUID `json:"id"`
		RunNowJob           *string   `json:"run_now_job"`
		StorageQuotaReached bool      `json:"storageQuotaReached"`
		// ExecMinutesQuotaReached and ErrorDetail are upstream's current
		// fields: why a runNow did not start (errorDetail omitted when it
		// did, so the baseline's body is unchanged).
		ExecMinutesQuotaReached bool    `json:"execMinutesQuotaReached"`
		ErrorDetail             *string `json:"errorDetail,omitempty"`
	}
	crawlConfigUpdatedOut struct {
		Updated         bool `json:"updated"`
		SettingsChanged bool `json:"settings_changed"`
		MetadataChanged bool `json:"metadata_changed"`
	}
	crawlConfigDeletedOut struct {
		Success bool   `json:"success"`
		Status  string `json:"status"`
	}
	crawlConfigSearchOut struct {
		Names        []string    `json:"names"`
		Descriptions []string    `json:"descriptions"`
		FirstSeeds   []string    `json:"firstSeeds"`
		WorkflowIDs  []uuid.UUID `json:"workflowIds"`
	}
	startedOut struct {
		Started string `json:"started"`
	}
)

func toCrawlConfigSearchOut(sv *store.SearchValues) crawlConfigSearchOut {
	return crawlConfigSearchOut{Names: nonNil(sv.Names), Descriptions: nonNil(sv.Descriptions),
		FirstSeeds: nonNil(sv.FirstSeeds), WorkflowIDs: nonNil(sv.WorkflowIDs)}
}

// nonNil makes a nil slice encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
