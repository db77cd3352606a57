package api

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// What the API consumes, declared on the consumer side: the store, and
// the seams to Kubernetes, object storage, e-mail and webhooks that main
// fills with the real thing and tests with fakes or the sandbox's servers.

// Store is the whole store, taken as one: every handler reaches it
// through the one Server, so per-resource interfaces would narrow
// nothing. Its methods are grouped by resource below; store.Mongo
// implements it. Two groups are also declared on their own, held by the
// components that use nothing else: crawlFeedStore (event streams) and
// loginThrottle (login limits). Errors are the store's vocabulary
// (store.ErrNotFound, ErrConflict, ErrInvalid and the sentinels beside
// them), which statusOf maps to statuses and details.
type Store interface {
	// Users.
	CreateUser(ctx context.Context, u *store.User) error
	GetUser(ctx context.Context, id uuid.UUID) (*store.User, error)
	GetUserByEmail(ctx context.Context, email string) (*store.User, error)
	UpdateUser(ctx context.Context, id uuid.UUID, upd store.UserUpdate) error
	DeleteUser(ctx context.Context, id uuid.UUID) error
	ListUsersByIDs(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]store.User, error)

	// Invites: new-user ones in their own collection, existing-user ones on
	// the user.
	CreateInvite(ctx context.Context, inv *store.Invite, notBefore time.Time) error
	GetInvite(ctx context.Context, id uuid.UUID, notBefore time.Time) (*store.Invite, error)
	ListInvites(ctx context.Context, f store.InviteFilter) ([]store.Invite, int64, error)
	DeleteInvite(ctx context.Context, id uuid.UUID) error
	DeleteInvitesByEmail(ctx context.Context, oid uuid.UUID, email string) (int64, error)
	AddUserInvite(ctx context.Context, uid uuid.UUID, inv store.Invite) error
	TakeUserInvite(ctx context.Context, uid uuid.UUID, key string) (*store.Invite, error)

	// Organisations, their members, quotas, webhooks and storage.
	CreateOrg(ctx context.Context, o *store.Org) error
	GetOrg(ctx context.Context, id uuid.UUID) (*store.Org, error)
	EnsureDefaultOrg(ctx context.Context, name string) (*store.Org, error)
	ListOrgs(ctx context.Context, f store.OrgFilter) ([]store.Org, int64, error)
	RenameOrg(ctx context.Context, id uuid.UUID, name string) error
	SetOrgUserRole(ctx context.Context, id, uid uuid.UUID, role store.Role) error
	ChangeOrgMember(ctx context.Context, id, uid uuid.UUID, role *store.Role) error
	UpdateOrgQuotas(ctx context.Context, id uuid.UUID, u store.QuotasUpdate) error
	SetOrgProxies(ctx context.Context, id uuid.UUID, allowShared bool, allowed []string) error
	StartSeedFileCleanup(ctx context.Context, now time.Time) (*store.BackgroundJob, error)
	SeedFilesCreatedBefore(ctx context.Context, t time.Time) ([]store.SeedFile, error)
	SetOrgReadOnly(ctx context.Context, id uuid.UUID, readOnly bool, reason string) error
	SetOrgWebhooks(ctx context.Context, id uuid.UUID, urls map[string]string, origin string) error
	GetDefaultOrg(ctx context.Context) (*store.Org, error)
	SetOrgStorage(ctx context.Context, id uuid.UUID, st store.Storage) error

	// Org deletion (a background job), export and import.
	StartOrgDeletion(ctx context.Context, oid uuid.UUID, now time.Time) (*store.BackgroundJob, error)
	GetJob(ctx context.Context, id string) (*store.BackgroundJob, error)
	UnfinishedJobs(ctx context.Context, typ string) ([]store.BackgroundJob, error)
	FinishJob(ctx context.Context, id string, success bool, at time.Time) error
	RecordJobFailure(ctx context.Context, id string, maxTries int, at time.Time) (gaveUp bool, err error)
	RetryJob(ctx context.Context, id string, now time.Time) error
	OrgActiveCrawls(ctx context.Context, oid uuid.UUID) ([]store.Crawl, error)
	OrgItemsBatch(ctx context.Context, oid uuid.UUID, n int) ([]store.Crawl, error)
	DeleteOrgItems(ctx context.Context, oid uuid.UUID, ids []string) error
	DeleteOrgDocuments(ctx context.Context, oid uuid.UUID) error
	ExportOrg(ctx context.Context, oid uuid.UUID, emit func(section string, doc bson.Raw) error) error
	ImportOrg(ctx context.Context, in *store.OrgImport, members map[uuid.UUID]store.Role, remap map[uuid.UUID]uuid.UUID, storageName string) error

	// Workflows and their revisions.
	CreateCrawlConfig(ctx context.Context, c *store.CrawlConfig) error
	GetCrawlConfig(ctx context.Context, oid, cid uuid.UUID) (*store.CrawlConfig, error)
	CrawlConfigSeeds(ctx context.Context, cids []uuid.UUID) (map[uuid.UUID][]store.Seed, error)
	ListCrawlConfigs(ctx context.Context, oid uuid.UUID, f store.CrawlConfigFilter) ([]store.CrawlConfig, int64, error)
	UpdateCrawlConfig(ctx context.Context, oid, cid uuid.UUID, upd store.CrawlConfigUpdate, rev *store.ConfigRevision) (*store.CrawlConfig, error)
	DeactivateCrawlConfig(ctx context.Context, oid, cid uuid.UUID) error
	DeleteCrawlConfig(ctx context.Context, oid, cid uuid.UUID) error
	ListScheduledCrawlConfigs(ctx context.Context) ([]store.CrawlConfig, error)
	CrawlConfigTags(ctx context.Context, oid uuid.UUID) ([]string, error)
	CrawlConfigSearchValues(ctx context.Context, oid uuid.UUID) (*store.SearchValues, error)
	ListRevisions(ctx context.Context, cid uuid.UUID, p store.Paging) ([]store.ConfigRevision, int64, error)

	// Crawls and uploads. The operator owns a crawl's state changes after
	// it starts; the API only cancels crawls whose CrawlJob is gone.
	AddCrawl(ctx context.Context, c *store.Crawl) error
	SaveUpload(ctx context.Context, u *store.Upload, replace bool) (*store.Crawl, error)
	GetCrawl(ctx context.Context, oid uuid.UUID, id string) (*store.Crawl, error)
	GetCrawlByID(ctx context.Context, id string) (*store.Crawl, error)
	ListCrawls(ctx context.Context, oid uuid.UUID, f store.CrawlFilter) ([]store.Crawl, int64, error)
	ActiveCrawls(ctx context.Context, oid, cid uuid.UUID) ([]store.Crawl, error)
	UpdateCrawl(ctx context.Context, oid uuid.UUID, id string, upd store.CrawlUpdate) error
	SetCrawlStopping(ctx context.Context, oid uuid.UUID, id string, stopping bool) error
	SetCrawlPause(ctx context.Context, oid uuid.UUID, id string, pausedAt *time.Time) (*store.Crawl, error)
	SetCrawlScale(ctx context.Context, oid uuid.UUID, id string, scale int) error
	SetCrawlConfig(ctx context.Context, oid uuid.UUID, id string, cfg store.RawCrawlConfig) error
	SetCrawlState(ctx context.Context, crawlID, newState string, allowedFrom []string, extra store.CrawlStateExtra) (bool, *store.Crawl, error)
	ClearCanceledCrawlFiles(ctx context.Context, crawlID string) error
	DeleteCrawls(ctx context.Context, oid uuid.UUID, ids []string) (*store.DeleteResult, error)
	CrawlSearchValues(ctx context.Context, oid uuid.UUID, types []string) (*store.SearchValues, error)
	ListCrawlErrors(ctx context.Context, crawlID string, p store.Paging) ([]string, int64, error)
	RunPostCrawlTasks(ctx context.Context, crawlID string) (*store.Crawl, error)
	SetCrawlFilePresignedURLs(ctx context.Context, crawlID string, urls map[string]store.PresignedURL) (bool, error)

	// Collections and their membership.
	CreateCollection(ctx context.Context, c *store.Collection, itemIDs ...string) error
	GetCollection(ctx context.Context, oid, id uuid.UUID) (*store.Collection, error)
	ListCollections(ctx context.Context, oid uuid.UUID, f store.CollectionFilter) ([]store.Collection, int64, error)
	ListAllCollections(ctx context.Context, oid uuid.UUID) ([]store.Collection, error)
	CollectionNames(ctx context.Context, oid uuid.UUID) ([]string, error)
	CollectionRefs(ctx context.Context, oid uuid.UUID, ids []uuid.UUID) ([]store.Collection, error)
	CheckCollections(ctx context.Context, oid uuid.UUID, ids []uuid.UUID) error
	CollectionItems(ctx context.Context, oid, id uuid.UUID) ([]store.Crawl, error)

	// Pages.
	ListPages(ctx context.Context, q store.PageQuery) ([]store.Page, int64, error)
	GetPage(ctx context.Context, oid uuid.UUID, crawlID string, id uuid.UUID) (*store.Page, error)
	AddPages(ctx context.Context, pages []store.Page) (int, error)
	ClearPages(ctx context.Context, crawlID string) error
	RecountPages(ctx context.Context, crawlID string) (store.PageCounts, error)
	UpdateCollection(ctx context.Context, oid, id uuid.UUID, upd store.CollectionUpdate) error
	DeleteCollection(ctx context.Context, oid, id uuid.UUID) error
	AddToCollection(ctx context.Context, oid, id uuid.UUID, itemIDs []string, now time.Time) (*store.Collection, error)
	RemoveFromCollection(ctx context.Context, oid, id uuid.UUID, itemIDs []string, now time.Time) (*store.Collection, error)
	ChangeItemCollections(ctx context.Context, oid uuid.UUID, item string, added, removed []uuid.UUID, now time.Time) error

	// Browser profiles.
	SaveProfile(ctx context.Context, p *store.Profile, replace bool) error
	GetProfile(ctx context.Context, oid, id uuid.UUID) (*store.Profile, error)
	ListProfiles(ctx context.Context, oid uuid.UUID, userID *uuid.UUID, p store.Paging) ([]store.Profile, int64, error)
	UpdateProfileMetadata(ctx context.Context, oid, id uuid.UUID, name string, description *string) error
	DeleteProfile(ctx context.Context, oid, id uuid.UUID) error
	ProfileWorkflows(ctx context.Context, oid, id uuid.UUID) ([]store.WorkflowRef, error)
	ProfileNames(ctx context.Context, oid uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error)

	// Seed files: files of URLs workflows crawl instead of their seeds.
	AddSeedFile(ctx context.Context, f *store.SeedFile) error
	GetSeedFile(ctx context.Context, oid, id uuid.UUID) (*store.SeedFile, error)
	ListSeedFiles(ctx context.Context, oid uuid.UUID, f store.SeedFileFilter) ([]store.SeedFile, int64, error)
	DeleteSeedFile(ctx context.Context, oid, id uuid.UUID) (*store.SeedFile, error)

	// Webhook notifications: the API lists them and schedules manual
	// retries; the Webhooks deliverer does the rest.
	ListNotifications(ctx context.Context, oid uuid.UUID, p store.Paging) ([]store.Notification, int64, error)
	GetNotification(ctx context.Context, oid, id uuid.UUID) (*store.Notification, error)
	RetryNotification(ctx context.Context, oid, id uuid.UUID, at time.Time) error

	// Crawl event streams (crawlFeeds holds only these: crawlFeedStore).
	GetCrawlProgress(ctx context.Context, id string) (*store.Crawl, error)
	WatchCrawl(ctx context.Context, id string) (<-chan struct{}, error)

	// Login attempt counters (loginLimiter holds only these:
	// loginThrottle).
	AddLoginAttempt(ctx context.Context, keys []string, start, end time.Time) ([]int64, error)
	ReleaseLoginAttempt(ctx context.Context, key string, start time.Time, forget bool) error
	PaceLoginAttempt(ctx context.Context, key string, start, now, next time.Time) (time.Time, error)
	RememberLogin(ctx context.Context, key string, until time.Time) error
	LoginRemembered(ctx context.Context, key string, now time.Time) (bool, error)
	DeleteEndedLoginWindows(ctx context.Context, t time.Time) error
}

// ObjectStorage is what the API needs of object storage: the configured
// storages by name and the buckets orgs bring. *s3.Registry implements
// it. The buckets are the concrete *s3.Bucket on purpose: package s3 is
// already trawler's own thin layer over the S3 client (keys checked,
// errors sorted into s3.ErrNotFound, ErrUnavailable and ErrInvalidKey),
// with one implementation, which tests run against the sandbox's S3
// server; an interface here would repeat it method for method.
type ObjectStorage interface {
	Named(name string) (*s3.Bucket, error)
	Custom(cfg s3.Config) (*s3.Bucket, error)
}

// Mailer sends one plain-text e-mail; email.Sender implements it.
type Mailer interface {
	Send(ctx context.Context, to, subject, body string) error
}

// Webhooks creates the notifications of events the API causes and
// delivers them in the background; webhook.Notifier implements it.
type Webhooks interface {
	// CrawlFinished stores the crawlFinished notification of an ended
	// crawl (once per crawl).
	CrawlFinished(ctx context.Context, c *store.Crawl) error
	// UploadFinished stores the uploadFinished notification of a stored
	// upload (once per stored version).
	UploadFinished(ctx context.Context, u *store.Crawl) error
	// CollectionChanged stores an addedToCollection or
	// removedFromCollection notification.
	CollectionChanged(ctx context.Context, oid uuid.UUID, event string, coll uuid.UUID, itemIDs []string) error
	// Kick makes the deliverer look for due notifications now.
	Kick()
}

// CrawlLauncher starts and controls crawls on Kubernetes by creating and
// patching CrawlJobs; k8s.Launcher implements it. Methods other than
// LaunchCrawl wrap k8s.ErrCrawlJobNotFound when the CrawlJob is gone.
type CrawlLauncher interface {
	// LaunchCrawl creates the crawl's ConfigMap and CrawlJob.
	LaunchCrawl(ctx context.Context, req k8s.CrawlRequest) error
	// StopCrawl asks for a graceful stop (spec.stopping).
	StopCrawl(ctx context.Context, crawlID string) error
	// PauseCrawl pauses the crawl as of pausedAt (spec.pausedAt), or
	// resumes it when pausedAt is zero.
	PauseCrawl(ctx context.Context, crawlID string, pausedAt time.Time) error
	// ScaleCrawl sets the desired number of crawler instances.
	ScaleCrawl(ctx context.Context, crawlID string, scale int32) error
	// RestartCrawl replaces the crawl config and restarts the crawlers.
	RestartCrawl(ctx context.Context, crawlID string, configJSON []byte) error
	// CancelCrawl deletes the CrawlJob; the operator marks it canceled.
	CancelCrawl(ctx context.Context, crawlID string) error
}

// StorageSecrets keeps the Secret storage-<name> that gives an org's own
// storage to its crawler pods; k8s.Launcher implements it.
type StorageSecrets interface {
	// ApplyStorageSecret creates or replaces the Secret with data.
	ApplyStorageSecret(ctx context.Context, name string, data map[string]string) error
	// DeleteStorageSecret removes it; a missing Secret is fine.
	DeleteStorageSecret(ctx context.Context, name string) error
}

// BrowserLauncher starts, keeps alive and removes profile browsers by
// creating, patching and deleting ProfileJobs; k8s.Launcher implements
// it. Methods other than LaunchProfileBrowser wrap
// k8s.ErrProfileJobNotFound when the ProfileJob is gone.
type BrowserLauncher interface {
	LaunchProfileBrowser(ctx context.Context, req k8s.ProfileRequest) error
	GetProfileBrowser(ctx context.Context, browserID string) (*trawlerv1.ProfileJob, error)
	// PingProfileBrowser moves the browser's expiry to k8s.ProfileBrowserTTL from now.
	PingProfileBrowser(ctx context.Context, browserID string) error
	DeleteProfileBrowser(ctx context.Context, browserID string) error
}

// OrgObjects removes an org's objects from Kubernetes; k8s.Launcher
// implements it.
type OrgObjects interface {
	// DeleteOrgObjects deletes the org's CrawlJobs, ProfileJobs,
	// ConfigMaps and storage Secret, and answers how many CrawlJobs and
	// ProfileJobs it found (0: none left).
	DeleteOrgObjects(ctx context.Context, oid string) (int, error)
}
