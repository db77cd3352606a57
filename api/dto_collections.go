package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// collectionIn is POST /collections (upstream CollIn).
type collectionIn struct {
	Name        *string  `json:"name"`
	Description *string  `json:"description"`
	CrawlIDs    []string `json:"crawlIds"`
	IsPublic    *bool    `json:"isPublic"`
}

func (in *collectionIn) validate() error {
	var v validator
	if in.Name == nil {
		v.missing("body", "name")
	} else {
		v.minLength(*in.Name, 1, "body", "name")
	}
	validateMetadata(&v, in.Name, in.Description, nil)
	v.maxItems(len(in.CrawlIDs), maxIDList, "body", "crawlIds")
	return v.err()
}

// toStoreCollection builds a new, empty collection from a validated
// request (isPublic honoured, as upstream later fixed).
func toStoreCollection(in *collectionIn, oid uuid.UUID, now time.Time) *store.Collection {
	return &store.Collection{ID: uuid.New(), OID: oid, Name: *in.Name, Description: in.Description,
		Modified: now, IsPublic: in.IsPublic != nil && *in.IsPublic, Tags: []string{}}
}

// collectionUpdateIn is PATCH /collections/{id}. Unlike upstream, a name
// must stay a non-empty string and isPublic a boolean.
type collectionUpdateIn struct {
	Name        opt[string] `json:"name"`
	Description opt[string] `json:"description"`
	IsPublic    opt[bool]   `json:"isPublic"`
}

func (in *collectionUpdateIn) validate() error {
	var v validator
	if in.Name.Set {
		if in.Name.Null {
			v.notNull("body", "name")
		} else {
			v.minLength(in.Name.Value, 1, "body", "name")
		}
	}
	if in.IsPublic.Set && in.IsPublic.Null {
		v.notNull("body", "isPublic")
	}
	validateMetadata(&v, in.Name.ptr(), in.Description.ptr(), nil)
	return v.err()
}

// toStoreCollectionUpdate converts a validated PATCH; empty means there is
// nothing to update.
func toStoreCollectionUpdate(in *collectionUpdateIn, now time.Time) (store.CollectionUpdate, bool) {
	u := store.CollectionUpdate{Modified: now}
	if in.Name.Set {
		u.Name = store.Some(in.Name.Value)
	}
	if in.Description.Set {
		u.Description = store.Some(in.Description.ptr())
	}
	if in.IsPublic.Set {
		u.IsPublic = store.Some(in.IsPublic.Value)
	}
	return u, in.Name.Set || in.Description.Set || in.IsPublic.Set
}

// collectionCrawlsIn is the body of /add and /remove.
type collectionCrawlsIn struct {
	CrawlIDs []string `json:"crawlIds"`
}

func (in *collectionCrawlsIn) validate() error {
	var v validator
	if in.CrawlIDs == nil {
		v.missing("body", "crawlIds")
	}
	v.maxItems(len(in.CrawlIDs), maxIDList, "body", "crawlIds")
	return v.err()
}

// collectionOut is a collection on the wire (upstream CollOut).
type collectionOut struct {
	ID          uuid.UUID     `json:"id"`
	Name        string        `json:"name"`
	OID         uuid.UUID     `json:"oid"`
	Description *string       `json:"description"`
	Modified    string        `json:"modified"`
	CrawlCount  int           `json:"crawlCount"`
	PageCount   int64         `json:"pageCount"`
	TotalSize   int64         `json:"totalSize"`
	Tags        []string      `json:"tags"`
	IsPublic    bool          `json:"isPublic"`
	Resources   []resourceOut `json:"resources"`
}

func toCollectionOut(c *store.Collection, resources []resourceOut) collectionOut {
	return collectionOut{ID: c.ID, Name: c.Name, OID: c.OID, Description: c.Description,
		Modified: fmtTime(c.Modified), CrawlCount: c.CrawlCount, PageCount: c.PageCount,
		TotalSize: c.TotalSize, Tags: nonNil(c.Tags), IsPublic: c.IsPublic, Resources: nonNil(resources)}
}

// Response bodies of the collection routes.
type (
	collectionAddedOut struct {
		Added bool      `json:"added"`
		ID    uuid.UUID `json:"id"`
		Name  string    `json:"name"`
	}
	collectionSearchOut struct {
		Names []string `json:"names"`
	}
)
