package api

import (
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
}

// quotasOut are an org's limits on the wire, upstream's three keys.
type quotasOut struct {
	MaxConcurrentCrawls int   `json:"maxConcurrentCrawls"`
	MaxPagesPerCrawl    int   `json:"maxPagesPerCrawl"`
	StorageQuota        int64 `json:"storageQuota"`
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
	Origin      *string                  `json:"origin"`
	WebhookURLs webhookURLs              `json:"webhookUrls"`
	Quotas      quotasOut                `json:"quotas"`
}

// toOrgOut serializes o for a caller holding role; members holds the
// user records of o's members (needed for owners only).
func toOrgOut(o *store.Org, role store.Role, members map[uuid.UUID]store.User) orgOut {
	out := orgOut{ID: o.ID, Name: o.Name, Default: o.Default, BytesStored: o.BytesStored,
		WebhookURLs: toWebhookURLs(o.WebhookURLs), Quotas: quotasOut{
			MaxConcurrentCrawls: o.Quotas.MaxConcurrentCrawls, MaxPagesPerCrawl: o.Quotas.MaxPagesPerCrawl,
			StorageQuota: o.Quotas.StorageQuota}}
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
		usage := o.Usage
		if usage == nil {
			usage = map[string]int64{}
		}
		out.Usage = &usage
	}
	return out
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

// quotasIn is POST /api/orgs/{oid}/quotas; absent fields become 0, other
// keys are ignored (as upstream).
type quotasIn struct {
	MaxConcurrentCrawls int   `json:"maxConcurrentCrawls"`
	MaxPagesPerCrawl    int   `json:"maxPagesPerCrawl"`
	StorageQuota        int64 `json:"storageQuota"`
}

func (in quotasIn) validate() error {
	var v validator
	for _, f := range []struct {
		name string
		n    int64
	}{{"maxConcurrentCrawls", int64(in.MaxConcurrentCrawls)}, {"maxPagesPerCrawl", int64(in.MaxPagesPerCrawl)},
		{"storageQuota", in.StorageQuota}} {
		if f.n < 0 {
			v.between(f.n, 0, 0, "body", f.name)
		}
	}
	return v.err()
}

func toStoreQuotas(in quotasIn) store.OrgQuotas {
	return store.OrgQuotas{MaxConcurrentCrawls: in.MaxConcurrentCrawls, MaxPagesPerCrawl: in.MaxPagesPerCrawl,
		StorageQuota: in.StorageQuota}
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
