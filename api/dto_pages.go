package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/store"
)

// pageDocOut is upstream's PageOut (upstream-2026 §3.2): every field always
// present, null when unknown; status 200 when none is stored. Page
// routes are new, so ts follows upstream's current format (UTC with Z).
type pageDocOut struct {
	ID         uuid.UUID `json:"id"`
	OID        uuid.UUID `json:"oid"`
	CrawlID    string    `json:"crawl_id"`
	URL        string    `json:"url"`
	Title      *string   `json:"title"`
	TS         string    `json:"ts"`
	LoadState  *int      `json:"loadState"`
	Status     int       `json:"status"`
	Mime       *string   `json:"mime"`
	Filename   *string   `json:"filename"`
	Depth      *int      `json:"depth"`
	FavIconURL *string   `json:"favIconUrl"`
	IsSeed     bool      `json:"isSeed"`
	IsFile     bool      `json:"isFile"`
	IsError    bool      `json:"isError"`
	Notes      []any     `json:"notes"`
	UserID     *string   `json:"userid"`
	Modified   *string   `json:"modified"`
	Approved   *bool     `json:"approved"`
}

// pageTimeLayout writes page times so that they parse back to the same
// instant (a ts query matches by equality).
const pageTimeLayout = time.RFC3339Nano

func toPageOut(p *store.Page) pageDocOut {
	out := pageDocOut{ID: p.ID, OID: p.OID, CrawlID: p.CrawlID, URL: p.URL, Title: p.Title,
		TS: p.TS.UTC().Format(pageTimeLayout), LoadState: p.LoadState, Status: 200, Mime: p.Mime,
		Filename: p.Filename, Depth: p.Depth, FavIconURL: p.FavIconURL, IsSeed: p.IsSeed,
		IsFile: p.IsFile, IsError: p.IsError, Notes: []any{}}
	if p.Status != nil {
		out.Status = *p.Status
	}
	return out
}

func toPagesOut(pages []store.Page) []pageDocOut {
	out := make([]pageDocOut, len(pages))
	for i := range pages {
		out[i] = toPageOut(&pages[i])
	}
	return out
}

// pageItemsOut is the items-only answer of the search and collection
// page routes (no total).
type pageItemsOut struct {
	Items []pageDocOut `json:"items"`
}

// readdOut names the background job a re-add started ("" if none).
type readdOut struct {
	Started string `json:"started"`
}

// replayOut is replay.json of a crawl or upload: the item with its files,
// its first pages and where ReplayWeb.page searches the rest.
type replayOut struct {
	crawlOutWithResources
	InitialPages  []pageDocOut `json:"initialPages"`
	PagesQueryURL string       `json:"pagesQueryUrl"`
	DownloadURL   *string      `json:"downloadUrl"`
}
