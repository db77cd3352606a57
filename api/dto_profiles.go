package api

import (
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/netpolicy"
	"github.com/trawlerhq/trawler/store"
)

// profileIn is POST /profiles and PATCH /profiles/{id} (upstream
// ProfileCreateUpdate): commit the browser into a profile, or with no
// browserid (PATCH only) change the name and description.
type profileIn struct {
	BrowserID   *string `json:"browserid"`
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

func (in *profileIn) validate() error {
	var v validator
	if in.Name == nil {
		v.missing("body", "name")
	}
	validateMetadata(&v, in.Name, in.Description, nil)
	return v.err()
}

// browserIn is POST /profiles/browser (upstream ProfileLaunchBrowserIn).
type browserIn struct {
	URL            *string     `json:"url"`
	ProfileID      *string     `json:"profileId"`
	CrawlerChannel opt[string] `json:"crawlerChannel"`
	ProxyID        opt[string] `json:"proxyId"`
}

// validate checks in; allowed are the internal ranges the URL may name.
func (in *browserIn) validate(allowed netpolicy.AllowList) error {
	var v validator
	if in.URL == nil {
		v.missing("body", "url")
	} else if validateHTTPURL(&v, *in.URL, "body", "url") {
		v.internalHost(*in.URL, allowed, "crawls", "body", "url")
	}
	if in.ProfileID != nil {
		validateUUID4(&v, *in.ProfileID, "body", "profileId")
	}
	if in.CrawlerChannel.Null {
		v.notNull("body", "crawlerChannel")
	}
	return v.err()
}

// urlIn is POST /profiles/browser/{id}/navigate.
type urlIn struct {
	URL *string `json:"url"`
}

// validate checks in; allowed are the internal ranges the URL may name.
func (in *urlIn) validate(allowed netpolicy.AllowList) error {
	var v validator
	if in.URL == nil {
		v.missing("body", "url")
	} else if validateHTTPURL(&v, *in.URL, "body", "url") {
		v.internalHost(*in.URL, allowed, "crawls", "body", "url")
	}
	return v.err()
}

// validateHTTPURL checks pydantic v1's HttpUrl (see validHTTPURL) and
// the length of a URL, and reports whether it passed.
func validateHTTPURL(v *validator, s string, loc ...any) bool {
	if utf8.RuneCountInString(s) > maxURLLen {
		v.maxLen(s, maxURLLen, loc...)
		return false
	}
	if !validHTTPURL(s) {
		v.add("invalid or missing URL scheme, or host without a top-level domain", "value_error.url", loc...)
		return false
	}
	return true
}

// validateUUID4 checks a UUID of version 4, as pydantic's UUID4.
func validateUUID4(v *validator, s string, loc ...any) {
	id, err := uuid.Parse(s)
	switch {
	case err != nil:
		v.add("value is not a valid uuid", "type_error.uuid", loc...)
	case id.Version() != 4:
		v.add("uuid version 4 expected", "value_error.uuid.version", loc...)
	}
}

// profileFileOut is a profile's file on the wire.
type profileFileOut struct {
	Filename       string  `json:"filename"`
	Hash           string  `json:"hash"`
	Size           int64   `json:"size"`
	DefStorageName *string `json:"def_storage_name"`
}

// profileOut is a profile on the wire (upstream Profile).
type profileOut struct {
	ID          uuid.UUID      `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	UserID      uuid.UUID      `json:"userid"`
	OID         uuid.UUID      `json:"oid"`
	Origins     []string       `json:"origins"`
	Resource    profileFileOut `json:"resource"`
	Created     string         `json:"created"`
	// ProxyID is the proxy the profile was made through, null for none.
	ProxyID *string `json:"proxyId"`
}

func toProfileOut(p *store.Profile) profileOut {
	out := profileOut{ID: p.ID, Name: p.Name, Description: p.Description, UserID: p.UserID, OID: p.OID,
		Origins: nonNil(p.Origins), Created: fmtTime(p.Created), Resource: profileFileOut{
			Filename: p.Resource.Filename, Hash: p.Resource.Hash, Size: p.Resource.Size,
			DefStorageName: p.Resource.DefStorageName}}
	if p.ProxyID != "" {
		out.ProxyID = &p.ProxyID
	}
	return out
}

// workflowRefOut names a workflow.
type workflowRefOut struct {
	ID   uuid.UUID `json:"id"`
	Name *string   `json:"name"`
}

func toWorkflowRefsOut(refs []store.WorkflowRef) []workflowRefOut {
	out := make([]workflowRefOut, len(refs))
	for i, r := range refs {
		out[i] = workflowRefOut{ID: r.ID, Name: r.Name}
	}
	return out
}

// profileWithWorkflowsOut is GET /profiles/{id} (upstream
// ProfileWithCrawlConfigs).
type profileWithWorkflowsOut struct {
	profileOut
	CrawlConfigs []workflowRefOut `json:"crawlconfigs"`
}

// Response bodies of the profile routes.
type (
	profileAddedOut struct {
		Added               bool      `json:"added"`
		ID                  uuid.UUID `json:"id"`
		StorageQuotaReached bool      `json:"storageQuotaReached"`
	}
	profileDeletedOut struct {
		Success             bool `json:"success"`
		StorageQuotaReached bool `json:"storageQuotaReached"`
	}
	profileInUseOut struct {
		Error        string           `json:"error"`
		CrawlConfigs []workflowRefOut `json:"crawlconfigs"`
	}
	browserOut struct {
		BrowserID string `json:"browserid"`
	}
	browserPingOut struct {
		Success bool     `json:"success"`
		Origins []string `json:"origins"`
	}
	browserAccessOut struct {
		Path       string    `json:"path"`
		Password   string    `json:"password"`
		OID        uuid.UUID `json:"oid"`
		AuthBearer string    `json:"auth_bearer"`
		Scale      float64   `json:"scale"`
		URL        string    `json:"url"`
	}
)
