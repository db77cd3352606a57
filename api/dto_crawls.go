package api

import (
	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// statsOut are a crawl's page and size counters.
type statsOut struct {
	Found int64 `json:"found"`
	Done  int64 `json:"done"`
	Size  int64 `json:"size"`
}

// crawlOut is a crawl or an upload on the wire (upstream CrawlOut). The
// workflow fields are null for uploads.
type crawlOut struct {
	ID            string        `json:"id"`
	Type          string        `json:"type"`
	UserID        uuid.UUID     `json:"userid"`
	UserName      *string       `json:"userName"`
	OID           uuid.UUID     `json:"oid"`
	CID           *uuid.UUID    `json:"cid"`
	CIDRev        *int          `json:"cid_rev"`
	Name          *string       `json:"name"`
	Description   *string       `json:"description"`
	Started       string        `json:"started"`
	Finished      *string       `json:"finished"`
	State         string        `json:"state"`
	Stats         *statsOut     `json:"stats"`
	FileSize      int64         `json:"fileSize"`
	FileCount     int           `json:"fileCount"`
	Tags          []string      `json:"tags"`
	Errors        []string      `json:"errors"` // always null, as upstream
	CollectionIDs []uuid.UUID   `json:"collectionIds"`
	Config        *rawConfigOut `json:"config"`
	FirstSeed     *string       `json:"firstSeed"`
	SeedCount     *int          `json:"seedCount"`
	ProfileName   *string       `json:"profileName"`
	Stopping      *bool         `json:"stopping"`
	Manual        *bool         `json:"manual"`
	// ShouldPause and PausedAt are the last pause or resume request
	// (upstream's fields; null for uploads).
	ShouldPause *bool   `json:"shouldPause"`
	PausedAt    *string `json:"pausedAt"`
	// CrawlerChannel is "default" for uploads and older crawls, as
	// upstream's model default; Image is null for them.
	CrawlerChannel string  `json:"crawlerChannel"`
	Image          *string `json:"image"`
	// The page counters (upstream-2026 §3.2), 0 until the item's pages
	// are counted.
	PageCount       int `json:"pageCount"`
	UniquePageCount int `json:"uniquePageCount"`
	FilePageCount   int `json:"filePageCount"`
	ErrorPageCount  int `json:"errorPageCount"`
	// CrawlExecSeconds are the crawler-pod seconds counted for the crawl
	// (upstream-2026 §6.4); 0 for uploads.
	CrawlExecSeconds int64 `json:"crawlExecSeconds"`
}

// toCrawlOut converts a crawl or an upload in its list-item form:
// firstSeed from the crawl's own config, seedCount from its workflow's
// current seeds (null without a workflow, as for uploads), stats live
// while it runs.
func toCrawlOut(c *store.Crawl, refs crawlRefs) crawlOut {
	typ := c.Type
	if typ == "" {
		typ = store.TypeCrawl
	}
	out := crawlOut{
		ID: c.ID, Type: typ, UserID: c.UserID, UserName: userName(refs.users, &c.UserID), OID: c.OID,
		Name: c.Name, Description: c.Description,
		Started: fmtTime(c.Started), Finished: fmtTimePtr(c.Finished), State: c.State,
		FileSize: c.FileSize, FileCount: c.FileCount, Tags: nonNil(c.Tags),
		CollectionIDs: nonNil(c.CollectionIDs), ProfileName: nameOf(refs.profiles, c.OID, c.ProfileID),
		CrawlerChannel: channelOf(c.CrawlerChannel), PageCount: c.PageCount, UniquePageCount: c.UniquePageCount,
		FilePageCount: c.FilePageCount, ErrorPageCount: c.ErrorPageCount, CrawlExecSeconds: c.CrawlExecSeconds,
	}
	if c.Image != "" {
		out.Image = &c.Image
	}
	if typ == store.TypeCrawl {
		config := toRawConfigOut(c.Config)
		out.CID, out.CIDRev, out.Config = &c.CID, &c.CIDRev, &config
		out.Stopping, out.Manual = &c.Stopping, &c.Manual
		out.ShouldPause, out.PausedAt = &c.ShouldPause, fmtTimePtr(c.PausedAt)
	}
	if c.FirstSeed != "" {
		out.FirstSeed = &c.FirstSeed
	}
	if seeds := refs.seeds[c.CID]; len(seeds) > 0 {
		n := len(seeds)
		out.SeedCount = &n
	}
	stats := c.Stats
	if live := refs.live[c.ID]; live != nil {
		stats = live
	}
	if stats != nil {
		out.Stats = &statsOut{Found: stats.Found, Done: stats.Done, Size: stats.Size}
	}
	return out
}

// resourceOut is one downloadable file of a crawl; Name is the stored
// file name in full (the key under the storage's prefix, e.g.
// <oid>/<name>.wacz), as upstream sends it.
type resourceOut struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Hash    string `json:"hash"`
	Size    int64  `json:"size"`
	CrawlID string `json:"crawlId"`
}

// collectionRefOut names a collection a crawl belongs to.
type collectionRefOut struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

// crawlOutWithResources is replay.json: the crawl and its files.
type crawlOutWithResources struct {
	crawlOut
	Resources   []resourceOut      `json:"resources"`
	Collections []collectionRefOut `json:"collections"`
}

// toCrawlOutWithResources adds the files with their download links and
// the collections the crawl is in. Unlike the list item, its firstSeed is
// the workflow's current first seed.
func toCrawlOutWithResources(c *store.Crawl, refs crawlRefs, resources []resourceOut, colls []store.Collection) crawlOutWithResources {
	out := crawlOutWithResources{crawlOut: toCrawlOut(c, refs), Resources: nonNil(resources),
		Collections: make([]collectionRefOut, len(colls))}
	for i, coll := range colls {
		out.Collections[i] = collectionRefOut{ID: coll.ID, Name: coll.Name}
	}
	if seeds := refs.seeds[c.CID]; len(seeds) > 0 {
		out.FirstSeed = &seeds[0].URL
	}
	return out
}

// crawlConfigIDs are the distinct workflows of crawls.
func crawlConfigIDs(cs ...store.Crawl) []uuid.UUID {
	return distinctIDs(cs, func(c *store.Crawl) uuid.UUID { return c.CID })
}

// crawlUserIDs are the distinct users the crawls' userName fields name.
func crawlUserIDs(cs ...store.Crawl) []uuid.UUID {
	return distinctIDs(cs, func(c *store.Crawl) uuid.UUID { return c.UserID })
}

// distinctIDs are the distinct non-nil ids key picks from crawls.
func distinctIDs(cs []store.Crawl, key func(*store.Crawl) uuid.UUID) []uuid.UUID {
	seen := map[uuid.UUID]bool{uuid.Nil: true}
	var ids []uuid.UUID
	for i := range cs {
		if id := key(&cs[i]); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// crawlUpdateIn is PATCH /crawls/{id}: user-editable metadata.
type crawlUpdateIn struct {
	Name          opt[string]   `json:"name"`
	Description   opt[string]   `json:"description"`
	Tags          opt[[]string] `json:"tags"`
	CollectionIDs opt[[]string] `json:"collectionIds"`
}

func (in *crawlUpdateIn) validate() error {
	var v validator
	validateMetadata(&v, in.Name.ptr(), in.Description.ptr(), in.Tags.Value)
	validateUUIDs(&v, in.CollectionIDs.Value, "body", "collectionIds")
	return v.err()
}

// toStoreCrawlUpdate converts the metadata of a validated PATCH (not the
// collections, which change through membership); ok is false when there
// is no field to set.
func toStoreCrawlUpdate(in *crawlUpdateIn) (u store.CrawlUpdate, ok bool) {
	if in.Name.Set {
		u.Name = store.Some(in.Name.ptr())
	}
	if in.Description.Set {
		u.Description = store.Some(in.Description.ptr())
	}
	if in.Tags.Set {
		u.Tags = store.Some(nonNil(in.Tags.Value))
	}
	return u, in.Name.Set || in.Description.Set || in.Tags.Set
}

// deleteCrawlsIn is POST /crawls/delete.
type deleteCrawlsIn struct {
	CrawlIDs []string `json:"crawl_ids"`
}

// scaleIn is POST /crawls/{id}/scale.
type scaleIn struct {
	Scale *int `json:"scale"`
}

// Response bodies of the crawl routes.
type (
	deletedOut struct {
		Deleted             int  `json:"deleted"`
		StorageQuotaReached bool `json:"storageQuotaReached"`
	}
	scaledOut struct {
		Scaled int `json:"scaled"`
	}
	queueOut struct {
		Total   int64    `json:"total"`
		Results []string `json:"results"`
		Matched []string `json:"matched"`
	}
	queueMatchOut struct {
		Total   int64    `json:"total"`
		Matched []string `json:"matched"`
	}
	exclusionAddedOut struct {
		Success    bool `json:"success"`
		NumRemoved int  `json:"num_removed"`
	}
	crawlSearchOut struct {
		Names        []string `json:"names"`
		Descriptions []string `json:"descriptions"`
		FirstSeeds   []string `json:"firstSeeds"`
	}
)
