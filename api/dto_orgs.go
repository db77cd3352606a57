package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// userOut is GET /api/users/me.
type userOut struct {
	ID          uuid.UUID `json:"id"`
	Email       string    `json:"email"`
	IsActive    bool      `json:"is_active"`
	IsSuperuser bool      `json:"is_superuser"`
	IsVerified  bool      `json:"is_verified"`
	Name        string    `json:"name"`
}

func toUserOut(u *store.User) userOut {
	return userOut{ID: u.ID, Email: u.Email, IsActive: u.IsActive, IsSuperuser: u.IsSuperuser,
		IsVerified: u.IsVerified, Name: u.Name}
}

// userOrgOut is one org of GET /api/users/me-with-orgs.
type userOrgOut struct {
	ID      uuid.UUID  `json:"id"`
	Name    string     `json:"name"`
	Default bool       `json:"default"`
	Role    store.Role `json:"role"`
}

// userWithOrgsOut is GET /api/users/me-with-orgs.
type userWithOrgsOut struct {
	userOut
	Orgs []userOrgOut `json:"orgs"`
}

// settingsOut is GET /api/settings, exactly upstream's object.
type settingsOut struct {
	RegistrationEnabled        bool  `json:"registrationEnabled"`
	JWTTokenLifetime           int64 `json:"jwtTokenLifetime"`
	DefaultBehaviorTimeSeconds int   `json:"defaultBehaviorTimeSeconds"`
	MaxPagesPerCrawl           int   `json:"maxPagesPerCrawl"`
	DefaultPageLoadTimeSeconds int   `json:"defaultPageLoadTimeSeconds"`
	// PausedExpiryMinutes is how long a crawl may stay paused;
	// RateLimitDurationMinutes upstream's rate-limit pause, which trawler
	// does not have (0).
	PausedExpiryMinutes      int64 `json:"pausedExpiryMinutes"`
	RateLimitDurationMinutes int64 `json:"rateLimitDurationMinutes"`
}

// quotasOut are an org's limits on the wire: the baseline's three keys
// and upstream's execution-time quotas.
type quotasOut struct {
	MaxConcurrentCrawls    int   `json:"maxConcurrentCrawls"`
	MaxPagesPerCrawl       int   `json:"maxPagesPerCrawl"`
	StorageQuota           int64 `json:"storageQuota"`
	MaxExecMinutesPerMonth int64 `json:"maxExecMinutesPerMonth"`
	ExtraExecMinutes       int64 `json:"extraExecMinutes"`
	GiftedExecMinutes      int64 `json:"giftedExecMinutes"`
}

func toQuotasOut(q store.OrgQuotas) quotasOut {
	return quotasOut{MaxConcurrentCrawls: q.MaxConcurrentCrawls, MaxPagesPerCrawl: q.MaxPagesPerCrawl,
		StorageQuota: q.StorageQuota, MaxExecMinutesPerMonth: q.MaxExecMinutesPerMonth,
		ExtraExecMinutes: q.ExtraExecMinutes, GiftedExecMinutes: q.GiftedExecMinutes}
}

// quotaUpdateOut is one entry of an org's quotaUpdates.
type quotaUpdateOut struct {
	Modified string         `json:"modified"`
	Update   map[string]any `json:"update"`
}

// orgMemberOut is one member as owners see them.
type orgMemberOut struct {
	Role  store.Role `json:"role"`
	Name  string     `json:"name"`
	Email string     `json:"email"`
}

// orgOut is an org serialized for the caller: storage never, users for
// owners only, usage for crawlers and up (null for the others, as
// upstream).
type orgOut struct {
	ID          uuid.UUID                `json:"id"`
	Name        string                   `json:"name"`
	Users       *map[string]orgMemberOut `json:"users"`
	Usage       *map[string]int64        `json:"usage"`
	Default     bool                     `json:"default"`
	BytesStored int64                    `json:"bytesStored"`
	// BytesStoredSeedFiles is upstream's current field, left out while
	// the org has no seed files, so that orgs keep their 2023 shape.
	BytesStoredSeedFiles int64       `json:"bytesStoredSeedFiles,omitempty"`
	Origin               *string     `json:"origin"`
	WebhookURLs          webhookURLs `json:"webhookUrls"`
	Quotas               quotasOut   `json:"quotas"`
	// The crawler proxies the org may use (upstream HEAD's fields).
	AllowSharedProxies bool     `json:"allowSharedProxies"`
	AllowedProxies     []string `json:"allowedProxies"`
	// Read-only mode (upstream's fields).
	ReadOnly       bool    `json:"readOnly"`
	ReadOnlyReason *string `json:"readOnlyReason"`

	// The execution-time counters (upstream-2026 §6.1); the month maps
	// are {} for viewers, as upstream.
	CrawlExecSeconds           map[string]int64 `json:"crawlExecSeconds"`
	MonthlyExecSeconds         map[string]int64 `json:"monthlyExecSeconds"`
	GiftedExecSeconds          map[string]int64 `json:"giftedExecSeconds"`
	ExtraExecSeconds           map[string]int64 `json:"extraExecSeconds"`
	GiftedExecSecondsAvailable int64            `json:"giftedExecSecondsAvailable"`
	ExtraExecSecondsAvailable  int64            `json:"extraExecSecondsAvailable"`
	QuotaUpdates               []quotaUpdateOut `json:"quotaUpdates"`
	// StorageQuotaReached and ExecMinutesQuotaReached are computed by
	// GET /orgs/{oid} only (false in lists, as upstream).
	StorageQuotaReached     bool `json:"storageQuotaReached"`
	ExecMinutesQuotaReached bool `json:"execMinutesQuotaReached"`
}

// toOrgOut serializes o for a caller holding role; members holds the
// user records of o's members (needed for owners only).
func toOrgOut(o *store.Org, role store.Role, members map[uuid.UUID]store.User) orgOut {
	out := orgOut{ID: o.ID, Name: o.Name, Default: o.Default, BytesStored: o.BytesStored,
		BytesStoredSeedFiles: o.BytesStoredSeedFiles,
		WebhookURLs:          toWebhookURLs(o.WebhookURLs), Quotas: toQuotasOut(o.Quotas),
		AllowSharedProxies: o.AllowSharedProxies, AllowedProxies: nonNil(o.AllowedProxies),
		ReadOnly: o.ReadOnly, ReadOnlyReason: nonEmpty(o.ReadOnlyReason),
		GiftedExecSecondsAvailable: o.GiftedExecSecondsAvailable, ExtraExecSecondsAvailable: o.ExtraExecSecondsAvailable,
		CrawlExecSeconds: map[string]int64{}, MonthlyExecSeconds: nonNilMonths(o.MonthlyExecSeconds),
		GiftedExecSeconds: nonNilMonths(o.GiftedExecSeconds), ExtraExecSeconds: nonNilMonths(o.ExtraExecSeconds),
		QuotaUpdates: make([]quotaUpdateOut, 0, len(o.QuotaUpdates))}
	for _, u := range o.QuotaUpdates {
		out.QuotaUpdates = append(out.QuotaUpdates, quotaUpdateOut{Modified: fmtTime(u.Modified), Update: u.Update})
	}
	if o.Origin != "" {
		out.Origin = &o.Origin
	}
	if role >= store.RoleOwner {
		users := make(map[string]orgMemberOut, len(o.Users))
		for id, r := range o.Users {
			m := orgMemberOut{Role: r}
			if uid, err := uuid.Parse(id); err == nil {
				u := members[uid]
				m.Name, m.Email = u.Name, u.Email
			}
			users[id] = m
		}
		out.Users = &users
	}
	if role >= store.RoleCrawler {
		out.CrawlExecSeconds = nonNilMonths(o.CrawlExecSeconds)
		usage := o.Usage
		if usage == nil {
			usage = map[string]int64{}
		}
		out.Usage = &usage
	}
	return out
}

// nonNilMonths is a month map as upstream serialises it: {} when empty.
func nonNilMonths(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

// orgCreateIn is POST /api/orgs/create.
type orgCreateIn struct {
	Name *string `json:"name"`
}

// orgRenameIn is POST /api/orgs/{oid}/rename.
type orgRenameIn struct {
	Name *string `json:"name"`
}

func validateOrgName(name *string) error {
	var v validator
	if name == nil {
		v.missing("body", "name")
	} else if *name == "" {
		v.add("ensure this value has at least 1 characters", "value_error.any_str.min_length", "body", "name")
	} else {
		v.maxLen(*name, maxNameLen, "body", "name")
	}
	return v.err()
}

// orgAddedOut answers org creation.
type orgAddedOut struct {
	ID    *uuid.UUID `json:"id,omitempty"`
	Added bool       `json:"added"`
	Error *string    `json:"error,omitempty"`
}

// addUserIn is POST /api/orgs/{oid}/add-user.
type addUserIn struct {
	Email    *string     `json:"email"`
	Password *string     `json:"password"`
	Name     *string     `json:"name"`
	Role     *store.Role `json:"role"`
}

// userRoleIn is PATCH /api/orgs/{oid}/user-role.
type userRoleIn struct {
	Email *string     `json:"email"`
	Role  *store.Role `json:"role"`
}

// removeUserIn is POST /api/orgs/{oid}/remove.
type removeUserIn struct {
	Email *string `json:"email"`
}

// quotasIn is POST /api/orgs/{oid}/quotas. The baseline's three quotas
// become 0 when absent (as in 2023); an execution-time quota that is
// absent or null is left as it is (upstream's current "set" mode). Other
// keys are ignored (as upstream).
type quotasIn struct {
	MaxConcurrentCrawls    int    `json:"maxConcurrentCrawls"`
	MaxPagesPerCrawl       int    `json:"maxPagesPerCrawl"`
	StorageQuota           int64  `json:"storageQuota"`
	MaxExecMinutesPerMonth *int64 `json:"maxExecMinutesPerMonth"`
	ExtraExecMinutes       *int64 `json:"extraExecMinutes"`
	GiftedExecMinutes      *int64 `json:"giftedExecMinutes"`
}

func (in quotasIn) validate() error {
	var v validator
	concurrent, pages := int64(in.MaxConcurrentCrawls), int64(in.MaxPagesPerCrawl)
	for _, f := range []struct {
		name string
		n    *int64
	}{{"maxConcurrentCrawls", &concurrent}, {"maxPagesPerCrawl", &pages},
		{"storageQuota", &in.StorageQuota}, {"maxExecMinutesPerMonth", in.MaxExecMinutesPerMonth},
		{"extraExecMinutes", in.ExtraExecMinutes}, {"giftedExecMinutes", in.GiftedExecMinutes}} {
		if f.n != nil && *f.n < 0 {
			v.between(*f.n, 0, 0, "body", f.name)
		}
	}
	return v.err()
}

func toQuotasUpdate(in quotasIn, now time.Time) store.QuotasUpdate {
	return store.QuotasUpdate{MaxConcurrentCrawls: in.MaxConcurrentCrawls, MaxPagesPerCrawl: in.MaxPagesPerCrawl,
		StorageQuota: in.StorageQuota, MaxExecMinutesPerMonth: in.MaxExecMinutesPerMonth,
		ExtraExecMinutes: in.ExtraExecMinutes, GiftedExecMinutes: in.GiftedExecMinutes, Modified: now}
}

// validRole reports a role one can give a member.
func validRole(r store.Role) bool {
	return r == store.RoleViewer || r == store.RoleCrawler || r == store.RoleOwner
}

func validateRole(v *validator, r *store.Role) {
	switch {
	case r == nil:
		v.missing("body", "role")
	case !validRole(*r):
		v.add("value is not a valid enumeration member; permitted: 10, 20, 40", "type_error.enum", "body", "role")
	}
}

// Small response bodies shared by several routes.
type (
	updatedOut struct {
		Updated bool `json:"updated"`
	}
	addedOut struct {
		Added bool `json:"added"`
	}
	removedOut struct {
		Removed bool `json:"removed"`
	}
	successOut struct {
		Success bool `json:"success"`
	}
)
