// Package store is trawler's persistence: the domain types of users,
// organisations, workflows (crawl configs) and crawls, the error vocabulary,
// and their MongoDB implementation. It imports nothing else of trawler.
//
// Queries stay within what both MongoDB 6+ and FerretDB v1 support (no
// $lookup, $facet, positional updates or transactions): joins and counts
// are done in Go. FerretDB v1 also has silent wrong results the store codes
// around (pinned in TestConformance): a $group computes only its first
// accumulator, and $ne on a field of an array of subdocuments matches
// anyway. And it answers every query by a full collection scan unless the
// filter is exactly {_id: <string>}, so crawl documents are read and
// written by _id alone where possible (see condFilter).
//
// Derived numbers (workflow stats, org bytesStored and usage, collection
// counts) are recomputed from the crawls, never adjusted with $inc, so
// every operator write and post-crawl task can be repeated after a crash.
package store

import (
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Roles of a user in an organisation. A check for role R passes when the
// user is a superuser or holds a role >= R.
type Role int

// Role values, as on the wire.
const (
	RoleViewer     Role = 10
	RoleCrawler    Role = 20
	RoleOwner      Role = 40
	RoleSuperAdmin Role = 100
)

// User is an account.
type User struct {
	ID             uuid.UUID `bson:"id"`
	Email          string    `bson:"email"`
	Name           string    `bson:"name"`
	HashedPassword string    `bson:"hashed_password"`
	IsActive       bool      `bson:"is_active"`
	IsSuperuser    bool      `bson:"is_superuser"`
	IsVerified     bool      `bson:"is_verified"`
	// Invites are the user's pending invites to orgs, by InviteKey.
	Invites map[string]Invite `bson:"invites,omitempty"`
}

// Org is an organisation: the unit of membership, quotas and storage.
type Org struct {
	ID          uuid.UUID        `bson:"_id"`
	Name        string           `bson:"name"`
	Users       map[string]Role  `bson:"users"` // user id -> role
	Storage     Storage          `bson:"storage"`
	Usage       map[string]int64 `bson:"usage"` // "YYYY-MM" -> crawl seconds
	BytesStored int64            `bson:"bytesStored"`
	// BytesStoredSeedFiles is the part of BytesStored that seed files take.
	BytesStoredSeedFiles int64             `bson:"bytesStoredSeedFiles"`
	Default              bool              `bson:"default"`
	Quotas               OrgQuotas         `bson:"quotas"`
	WebhookURLs          map[string]string `bson:"webhookUrls,omitempty"`
	Origin               string            `bson:"origin,omitempty"`
	// AllowSharedProxies and AllowedProxies say which crawler proxies the
	// org's crawls may use: the shared ones when allowed, and those named.
	AllowSharedProxies bool     `bson:"allowSharedProxies"`
	AllowedProxies     []string `bson:"allowedProxies,omitempty"`
	// ReadOnly keeps the org from starting crawls and adding seed files,
	// and pauses its running crawls (upstream-2026 §1.8); ReadOnlyReason
	// says why.
	ReadOnly       bool   `bson:"readOnly"`
	ReadOnlyReason string `bson:"readOnlyReason,omitempty"`

	ExecCounters `bson:",inline"`
	// QuotaUpdates is the history of POST /quotas, oldest first.
	QuotaUpdates []QuotaUpdate `bson:"quotaUpdates,omitempty"`
}

// ExecCounters are an org's execution-time counters (upstream-2026 §6.1),
// the month maps keyed "YYYY-MM" (UTC).
type ExecCounters struct {
	// CrawlExecSeconds are all crawler-pod seconds, over quota or not.
	CrawlExecSeconds map[string]int64 `bson:"crawlExecSeconds,omitempty"`
	// MonthlyExecSeconds are the seconds charged to the monthly quota.
	MonthlyExecSeconds map[string]int64 `bson:"monthlyExecSeconds,omitempty"`
	// GiftedExecSeconds and ExtraExecSeconds are the seconds charged to
	// the gifted and the extra minutes.
	GiftedExecSeconds map[string]int64 `bson:"giftedExecSeconds,omitempty"`
	ExtraExecSeconds  map[string]int64 `bson:"extraExecSeconds,omitempty"`
	// GiftedExecSecondsAvailable and ExtraExecSecondsAvailable are what
	// is left of the gifted and extra minutes, in seconds.
	GiftedExecSecondsAvailable int64 `bson:"giftedExecSecondsAvailable"`
	ExtraExecSecondsAvailable  int64 `bson:"extraExecSecondsAvailable"`
}

// QuotaUpdate is one change of an org's quotas: when, and the fields sent.
type QuotaUpdate struct {
	Modified time.Time      `bson:"modified"`
	Update   map[string]any `bson:"update"`
}

// Storage names where an org's files go: a configured storage (Type
// "default", Name and Path "<oid>/") or the org's own bucket (Type "s3",
// EndpointURL with bucket and key prefix, and its credentials; stored as
// upstream stores them).
type Storage struct {
	Type string `bson:"type"` // "default" or "s3"
	Name string `bson:"name,omitempty"`
	Path string `bson:"path,omitempty"` // e.g. "<oid>/"

	EndpointURL         string `bson:"endpoint_url,omitempty"`
	AccessKey           string `bson:"access_key,omitempty"`
	SecretKey           string `bson:"secret_key,omitempty"`
	AccessEndpointURL   string `bson:"access_endpoint_url,omitempty"`
	Region              string `bson:"region,omitempty"`
	UseAccessForPresign *bool  `bson:"use_access_for_presign,omitempty"`
}

// OrgQuotas are an org's limits; 0 means unlimited.
type OrgQuotas struct {
	MaxConcurrentCrawls int   `bson:"maxConcurrentCrawls"`
	MaxPagesPerCrawl    int   `bson:"maxPagesPerCrawl"`
	StorageQuota        int64 `bson:"storageQuota"`
	// MaxExecMinutesPerMonth is the monthly execution-time quota, reset
	// each calendar month (UTC); ExtraExecMinutes and GiftedExecMinutes
	// are purchased and granted minutes in total, not per month. Once any
	// of the three is set, a 0 in another means "none of that kind".
	MaxExecMinutesPerMonth int64 `bson:"maxExecMinutesPerMonth"`
	ExtraExecMinutes       int64 `bson:"extraExecMinutes"`
	GiftedExecMinutes      int64 `bson:"giftedExecMinutes"`
}

// StorageQuotaReached reports whether the org has a storage quota and its
// stored bytes reached it.
func (o *Org) StorageQuotaReached() bool {
	return o.Quotas.StorageQuota > 0 && o.BytesStored >= o.Quotas.StorageQuota
}

// RoleOf returns the role of user u in the org (0 if not a member).
func (o *Org) RoleOf(u *User) Role {
	if u.IsSuperuser {
		return RoleSuperAdmin
	}
	return o.Users[u.ID.String()]
}

// Seed is one start URL of a crawl config.
type Seed struct {
	URL       string   `bson:"url"`
	ScopeType *string  `bson:"scopeType,omitempty"`
	Include   Patterns `bson:"include,omitempty"`
	Exclude   Patterns `bson:"exclude,omitempty"`
	Sitemap   any      `bson:"sitemap,omitempty"` // bool or URL string
	AllowHash *bool    `bson:"allowHash,omitempty"`
	Depth     *int     `bson:"depth,omitempty"`
	ExtraHops *int     `bson:"extraHops,omitempty"`
}

// Patterns is a list of regular expressions that was given either as one
// string or as a list; Single remembers which, so it is echoed back as given.
// Set is false for null. In MongoDB it is stored as upstream stores it:
// null, a string, or an array of strings (see patterns.go).
type Patterns struct {
	Values []string `bson:"values"`
	Single bool     `bson:"single,omitempty"`
	Set    bool     `bson:"set,omitempty"`
}

// RawCrawlConfig is the crawler configuration of a workflow, passed to the
// crawler as crawl-config.json (unset fields left out).
type RawCrawlConfig struct {
	Seeds           []Seed   `bson:"seeds"`
	ScopeType       string   `bson:"scopeType"`
	Include         Patterns `bson:"include"`
	Exclude         Patterns `bson:"exclude"`
	Depth           int      `bson:"depth"`
	Limit           int      `bson:"limit"`
	ExtraHops       int      `bson:"extraHops"`
	Lang            *string  `bson:"lang"`
	BlockAds        bool     `bson:"blockAds"`
	BehaviorTimeout *int     `bson:"behaviorTimeout"`
	PageLoadTimeout *int     `bson:"pageLoadTimeout"`
	PageExtraDelay  int      `bson:"pageExtraDelay"`
	Workers         *int     `bson:"workers"`
	Headless        *bool    `bson:"headless"`
	GenerateWACZ    *bool    `bson:"generateWACZ"`
	CombineWARC     *bool    `bson:"combineWARC"`
	UseSitemap      bool     `bson:"useSitemap"`
	Logging         *string  `bson:"logging"`
	Behaviors       *string  `bson:"behaviors"`
	// SeedFileID names the seed file whose URLs the crawl takes as its
	// seeds (upstream-2026.md §4.3); Seeds is then empty.
	SeedFileID *uuid.UUID `bson:"seedFileId,omitempty"`
}

// CrawlConfig is a workflow: a crawler configuration plus its schedule,
// limits and statistics.
type CrawlConfig struct {
	ID                    uuid.UUID      `bson:"_id"`
	OID                   uuid.UUID      `bson:"oid"`
	Name                  *string        `bson:"name"`
	Description           *string        `bson:"description"`
	Schedule              string         `bson:"schedule"`
	JobType               string         `bson:"jobType"`
	Config                RawCrawlConfig `bson:"config"`
	Tags                  []string       `bson:"tags"`
	CrawlTimeout          int64          `bson:"crawlTimeout"`
	MaxCrawlSize          int64          `bson:"maxCrawlSize"`
	Scale                 int            `bson:"scale"`
	ProfileID             *uuid.UUID     `bson:"profileid"`
	CrawlFilenameTemplate string         `bson:"crawlFilenameTemplate,omitempty"`
	AutoAddCollections    []uuid.UUID    `bson:"autoAddCollections"`
	Created               time.Time      `bson:"created"`
	CreatedBy             uuid.UUID      `bson:"createdBy"`
	Modified              time.Time      `bson:"modified"`
	ModifiedBy            uuid.UUID      `bson:"modifiedBy"`
	Inactive              bool           `bson:"inactive"`
	Rev                   int            `bson:"rev"`
	// CrawlerChannel is the crawler channel its crawls run on; workflows
	// stored before channels existed have none (the default channel).
	CrawlerChannel string `bson:"crawlerChannel,omitempty"`
	// ProxyID is the crawler proxy its crawls go through (nil: none, or
	// the profile's when it has a profile).
	ProxyID *string `bson:"proxyId"`
	// FirstSeed is config.seeds[0].url, denormalised by the store so that
	// lists can filter and sort on it without aggregation; for a seed-file
	// workflow it is the file's first URL.
	FirstSeed string `bson:"firstSeed"`
	// SeedCount is len(config.seeds), or the seed file's line count.
	SeedCount int64 `bson:"seedCount"`

	WorkflowStats `bson:",inline"`
}

// WorkflowStats are a workflow's crawl statistics, kept as crawls change.
type WorkflowStats struct {
	CrawlAttemptCount    int   `bson:"crawlAttemptCount"`
	CrawlCount           int   `bson:"crawlCount"`
	CrawlSuccessfulCount int   `bson:"crawlSuccessfulCount"`
	TotalSize            int64 `bson:"totalSize"`

	LastCrawl `bson:",inline"`
}

// LastCrawl are a workflow's fields about its latest crawl: the one that
// has not ended if there is one, else the one that ended last. All nil
// (and false) when it has no crawl.
type LastCrawl struct {
	LastCrawlID        *string    `bson:"lastCrawlId"`
	LastCrawlStartTime *time.Time `bson:"lastCrawlStartTime"`
	LastStartedBy      *uuid.UUID `bson:"lastStartedBy"`
	LastCrawlTime      *time.Time `bson:"lastCrawlTime"`
	LastCrawlState     *string    `bson:"lastCrawlState"`
	LastCrawlSize      *int64     `bson:"lastCrawlSize"`
	LastRun            *time.Time `bson:"lastRun"`
	IsCrawlRunning     bool       `bson:"isCrawlRunning"`
	LastCrawlStopping  bool       `bson:"lastCrawlStopping"`
	// LastCrawlShouldPause and LastCrawlPausedAt are the running crawl's
	// shouldPause and pausedAt.
	LastCrawlShouldPause bool       `bson:"lastCrawlShouldPause"`
	LastCrawlPausedAt    *time.Time `bson:"lastCrawlPausedAt"`
}

// LastCrawlOf returns the last-crawl fields crawl c gives its workflow:
// while it has not ended, its live state, stats size and stopping flag
// (isCrawlRunning true, lastCrawlTime null, lastRun its start); once it
// has, its final state, file size and finish time.
func LastCrawlOf(c *Crawl) LastCrawl {
	l := LastCrawl{
		LastCrawlID: &c.ID, LastCrawlStartTime: &c.Started, LastStartedBy: &c.UserID,
		LastCrawlState: &c.State,
	}
	if IsFinished(c.State) {
		l.LastCrawlTime, l.LastCrawlSize, l.LastRun = c.Finished, &c.FileSize, c.Finished
		return l
	}
	live := int64(0)
	if c.Stats != nil {
		live = c.Stats.Size
	}
	l.LastCrawlSize, l.LastRun = &live, &c.Started
	l.IsCrawlRunning, l.LastCrawlStopping = true, c.Stopping
	l.LastCrawlShouldPause, l.LastCrawlPausedAt = c.ShouldPause, c.PausedAt
	return l
}

// ConfigRevision is a copy of a workflow's settings before a change.
type ConfigRevision struct {
	ID           uuid.UUID      `bson:"_id"`
	CID          uuid.UUID      `bson:"cid"`
	Schedule     string         `bson:"schedule"`
	Config       RawCrawlConfig `bson:"config"`
	ProfileID    *uuid.UUID     `bson:"profileid"`
	CrawlTimeout int64          `bson:"crawlTimeout"`
	MaxCrawlSize int64          `bson:"maxCrawlSize"`
	Scale        int            `bson:"scale"`
	Modified     time.Time      `bson:"modified"`
	ModifiedBy   uuid.UUID      `bson:"modifiedBy"`
	Rev          int            `bson:"rev"`
	// CrawlerChannel is "" in revisions of workflows from before channels.
	CrawlerChannel string `bson:"crawlerChannel,omitempty"`
}

// CrawlStats are a crawl's page and size counters.
type CrawlStats struct {
	Found int64 `bson:"found"`
	Done  int64 `bson:"done"`
	Size  int64 `bson:"size"`
}

// CrawlFile is one WACZ file a crawl produced.
type CrawlFile struct {
	Filename       string     `bson:"filename"`
	Hash           string     `bson:"hash"`
	Size           int64      `bson:"size"`
	DefStorageName *string    `bson:"def_storage_name"`
	PresignedURL   *string    `bson:"presignedUrl"`
	ExpireAt       *time.Time `bson:"expireAt"`
}

// Path is where the file is downloaded from: its presigned URL when it
// has one, else its name, with accessURL prepended when that is relative.
func (f *CrawlFile) Path(accessURL string) string {
	switch {
	case f.PresignedURL != nil && *f.PresignedURL != "":
		return *f.PresignedURL
	case strings.Contains(f.Filename, "://"), strings.HasPrefix(f.Filename, "/"):
		return f.Filename
	}
	return accessURL + f.Filename
}

// Crawl is one run of a workflow. Its document is the source of truth for
// the user-visible state; the operator writes state, stats, files and
// errors to it.
type Crawl struct {
	ID            string         `bson:"_id"`
	Type          string         `bson:"type"` // "crawl" (uploads share the collection)
	UserID        uuid.UUID      `bson:"userid"`
	OID           uuid.UUID      `bson:"oid"`
	CID           uuid.UUID      `bson:"cid"`
	CIDRev        int            `bson:"cid_rev"`
	Name          *string        `bson:"name"`
	Description   *string        `bson:"description"`
	Started       time.Time      `bson:"started"`
	Finished      *time.Time     `bson:"finished"`
	State         string         `bson:"state"`
	Stats         *CrawlStats    `bson:"stats"`
	Files         []CrawlFile    `bson:"files"`
	Errors        []string       `bson:"errors"`
	CollectionIDs []uuid.UUID    `bson:"collectionIds"`
	FileSize      int64          `bson:"fileSize"`
	FileCount     int            `bson:"fileCount"`
	Tags          []string       `bson:"tags"`
	Schedule      string         `bson:"schedule"`
	JobType       string         `bson:"jobType"`
	Config        RawCrawlConfig `bson:"config"`
	CrawlTimeout  int64          `bson:"crawlTimeout"`
	MaxCrawlSize  int64          `bson:"maxCrawlSize"`
	Scale         int            `bson:"scale"`
	ProfileID     *uuid.UUID     `bson:"profileid"`
	Manual        bool           `bson:"manual"`
	Stopping      bool           `bson:"stopping"`
	// ShouldPause is the last pause (true) or resume (false) request;
	// PausedAt is when the last pause was asked for, null after a resume
	// (a crawl that ends paused keeps it).
	ShouldPause bool       `bson:"shouldPause"`
	PausedAt    *time.Time `bson:"pausedAt"`
	// CrawlerChannel and Image are the crawl's channel and that channel's
	// image when the crawl started; crawls from before channels have
	// neither.
	CrawlerChannel string `bson:"crawlerChannel,omitempty"`
	Image          string `bson:"image,omitempty"`
	// ProxyID is the crawler proxy the crawl went through, if any.
	ProxyID string `bson:"proxyId,omitempty"`
	// FirstSeed is config.seeds[0].url, set by the store on insert (the
	// caller's value for a seed-file crawl).
	FirstSeed string `bson:"firstSeed"`
	// Pods holds the operator's view of each pod of the crawl, keyed as the
	// operator chooses ("redis", "0", "1", ...).
	Pods map[string]PodStatus `bson:"podStatus,omitempty"`
	// PostCrawlDone is set once the post-crawl tasks (RunPostCrawlTasks)
	// have all completed; the operator reruns them until it is.
	PostCrawlDone bool `bson:"postCrawlDone,omitempty"`
	// ActiveCID is the crawl's workflow while the crawl has not ended, and
	// unset after: a unique index on it is the store's guard that a
	// workflow has one unfinished crawl at a time (see AddCrawl).
	ActiveCID *uuid.UUID `bson:"activeCid,omitempty"`
	// StateHistory is every state the crawl has been in, oldest first
	// (the last MaxStateHistory of them): watchers that look at the crawl
	// less often than it changes still see each state it passed through.
	// Crawls stored before it existed have none until their next change.
	StateHistory []StateChange `bson:"stateHistory,omitempty"`
	// PageCounts are set when the crawl ends (or its pages are read
	// again); until then they are 0.
	PageCounts `bson:",inline"`
	// CrawlExecSeconds are the crawler-pod seconds counted for the crawl
	// (upstream-2026 §6.4); LastExecUpdate (upstream's _lut) is when they
	// were last counted, the compare-and-set value of ChargeCrawlsExec.
	CrawlExecSeconds int64      `bson:"crawlExecSeconds"`
	LastExecUpdate   *time.Time `bson:"_lut,omitempty"`
	// AutoPausedEmailsSent is set once the org's owners were told of the
	// crawl's automatic pause; a resume clears it.
	AutoPausedEmailsSent bool `bson:"autoPausedEmailsSent,omitempty"`
}

// StateChange is one entry of a crawl's state history.
type StateChange struct {
	// Seq numbers the crawl's states from 1 (its first state) on; it
	// keeps counting when old entries are dropped.
	Seq   int       `bson:"seq"`
	State string    `bson:"state"`
	At    time.Time `bson:"at"`
}

// MaxStateHistory bounds a crawl's state history: a crawl that keeps
// flapping (running, waiting_capacity, running, ...) keeps its newest
// entries.
const MaxStateHistory = 100

// History returns the crawl's state history, or, for a crawl stored
// without one, a history of its current state alone.
func (c *Crawl) History() []StateChange {
	if len(c.StateHistory) > 0 || c.State == "" {
		return c.StateHistory
	}
	return []StateChange{{Seq: 1, State: c.State, At: c.Started}}
}

// withState returns the history after a change to state at time at,
// bounded by MaxStateHistory; the history is unchanged if state is
// already the current one.
func (c *Crawl) withState(state string, at time.Time) []StateChange {
	h := c.History()
	if len(h) > 0 && h[len(h)-1].State == state {
		return h
	}
	seq := 1
	if len(h) > 0 {
		seq = h[len(h)-1].Seq + 1
	}
	h = append(slices.Clone(h), StateChange{Seq: seq, State: state, At: at})
	if len(h) > MaxStateHistory {
		h = h[len(h)-MaxStateHistory:]
	}
	return h
}

// PodStatus is what the operator records about one pod of a crawl: its
// phase, why it last exited, and its resource use against its allocation.
type PodStatus struct {
	Phase    string `bson:"phase"`
	Restarts int32  `bson:"restarts"`
	// ExitCode and Reason (e.g. "OOMKilled", "Error", "Completed") are the
	// last termination of the main container, if any.
	ExitCode      *int32    `bson:"exitCode"`
	Reason        string    `bson:"reason,omitempty"`
	CPUUsedMilli  int64     `bson:"cpuUsedMilli"`
	CPUAllocMilli int64     `bson:"cpuAllocMilli"`
	MemoryUsed    int64     `bson:"memoryUsed"` // bytes
	MemoryAlloc   int64     `bson:"memoryAlloc"`
	StorageUsed   int64     `bson:"storageUsed"`
	StorageAlloc  int64     `bson:"storageAlloc"`
	LastUpdated   time.Time `bson:"lastUpdated"`
}

// Crawl types: uploads share the crawls collection upstream.
const (
	TypeCrawl  = "crawl"
	TypeUpload = "upload"
)

// Collection is a named set of crawls with counts recomputed from its
// successful member crawls.
type Collection struct {
	ID          uuid.UUID `bson:"_id"`
	OID         uuid.UUID `bson:"oid"`
	Name        string    `bson:"name"`
	Description *string   `bson:"description"`
	Modified    time.Time `bson:"modified"`
	IsPublic    bool      `bson:"isPublic"`
	CrawlCount  int       `bson:"crawlCount"`
	PageCount   int64     `bson:"pageCount"`
	TotalSize   int64     `bson:"totalSize"`
	Tags        []string  `bson:"tags"`
}

// SearchValues are the distinct non-empty values offered for search.
type SearchValues struct {
	Names        []string
	Descriptions []string
	FirstSeeds   []string
	// WorkflowIDs is filled for workflows only.
	WorkflowIDs []uuid.UUID
}

// Profile is a saved browser profile: a tar.gz of a Chromium user-data
// directory (cookies, local storage) that crawls load with --profile. The
// profile browser's pod uploads the file itself; the document records it.
type Profile struct {
	ID          uuid.UUID   `bson:"_id"`
	Name        string      `bson:"name"`
	Description string      `bson:"description"`
	UserID      uuid.UUID   `bson:"userid"`
	OID         uuid.UUID   `bson:"oid"`
	Origins     []string    `bson:"origins"`
	Resource    ProfileFile `bson:"resource"`
	Created     time.Time   `bson:"created"`
	// ProxyID is the crawler proxy the profile was made through, which
	// the crawls using it go through too ("" for none).
	ProxyID string `bson:"proxyId,omitempty"`
}

// ProfileFile is a profile's stored file. Filename is the bare name
// ("profile-<id>.tar.gz"), kept under "<org storage path>profiles/" in
// the storage DefStorageName names (nil: the org's own storage).
type ProfileFile struct {
	Filename       string  `bson:"filename"`
	Hash           string  `bson:"hash"`
	Size           int64   `bson:"size"`
	DefStorageName *string `bson:"def_storage_name"`
}

// WorkflowRef names a workflow.
type WorkflowRef struct {
	ID   uuid.UUID `bson:"_id"`
	Name *string   `bson:"name"`
}
