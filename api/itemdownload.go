package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// One crawl or upload downloads as a multi-WACZ of its files, or as its
// only WACZ when the client prefers that (upstream-2026.md §2). Members
// are named by the basename of the stored file, so the zip is flat
// whatever folders the org's storage uses.

// itemPackage is the datapackage.json of an item's download.
type itemPackage struct {
	Profile      string         `json:"profile"`
	Resources    []itemResource `json:"resources"`
	Software     string         `json:"software"`
	Type         string         `json:"type"`
	ID           string         `json:"id"`
	Organization string         `json:"organization"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description,omitempty"`
}

// itemResource is one WACZ of itemPackage; path is the member's name.
type itemResource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

// downloadItem streams a crawl or upload (any type, on the crawls and
// all-crawls routes alike, as upstream) with the choices of the query:
// preferSingleWACZ and withDependencies.
func (s *Server) downloadItem(c echo.Context) error {
	q := newQuery(c)
	single, withDeps := q.bool("preferSingleWACZ"), q.bool("withDependencies")
	if err := q.err(); err != nil {
		return err
	}
	return s.streamItem(c, single != nil && *single, withDeps != nil && *withDeps)
}

// downloadUpload is the uploads route's download, which takes no query
// and always answers a multi-WACZ, as upstream's.
func (s *Server) downloadUpload(c echo.Context) error { return s.streamItem(c, false, false) }

func (s *Server) streamItem(c echo.Context, preferSingle, withDeps bool) error {
	item, err := s.crawlParam(c, true, crawlNotFoundID(c.Param("crawl_id")))
	if err != nil {
		return err
	}
	if len(item.Files) == 0 {
		return badRequest("no_crawl_resources")
	}
	org := currentOrg(c)
	members := make([]zipMember, len(item.Files))
	for i := range item.Files {
		f := &item.Files[i]
		b, key, err := s.fileObject(org, f)
		if err != nil {
			return storageError("download_failed", err)
		}
		members[i] = zipMember{
			resource: resourceOut{Name: path.Base(key), Hash: f.Hash, Size: f.Size, CrawlID: item.ID},
			open:     func(ctx context.Context) (io.ReadCloser, error) { return b.Open(ctx, key) },
		}
	}
	ctx := c.Request().Context()
	if preferSingle && len(members) == 1 {
		return s.streamDownload(c, members[0].resource.Name, func(w io.Writer) (bool, error) {
			return copySingleWACZ(ctx, c, w, members[0])
		}, "item", item.ID)
	}
	datapackage, err := s.itemDatapackage(org, item, members)
	if err != nil {
		return err
	}
	// trawler has no deduplicated crawls, so an item never has
	// dependencies to add; the name still says they were asked for.
	filename := item.ID + ".wacz"
	if withDeps {
		filename = item.ID + "-with-deps.wacz"
	}
	return s.streamDownload(c, filename, func(w io.Writer) (bool, error) {
		return writeZip(ctx, w, members, datapackage)
	}, "item", item.ID)
}

// itemDatapackage is the encoded datapackage.json of item's download,
// indented by two spaces as upstream writes it.
func (s *Server) itemDatapackage(org *store.Org, item *store.Crawl, members []zipMember) ([]byte, error) {
	pkg := itemPackage{
		Profile:      "multi-wacz-package",
		Resources:    make([]itemResource, len(members)),
		Software:     "Browsertrix v" + s.cfg.Version,
		Type:         item.Type,
		ID:           item.ID,
		Organization: orgSlug(org.Name),
		Title:        deref(item.Name),
		Description:  deref(item.Description),
	}
	if pkg.Type == "" {
		pkg.Type = store.TypeCrawl // crawls stored before types existed
	}
	for i, m := range members {
		pkg.Resources[i] = itemResource{Name: m.resource.Name, Path: m.resource.Name,
			Hash: sha256Digest(m.resource.Hash), Bytes: m.resource.Size}
	}
	out, err := json.MarshalIndent(pkg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding datapackage.json: %w", err)
	}
	return out, nil
}

// copySingleWACZ writes m's bytes as they are stored, with their length
// declared, so a browser shows the download's progress.
func copySingleWACZ(ctx context.Context, c echo.Context, w io.Writer, m zipMember) (started bool, err error) {
	rc, err := m.open(ctx)
	if err != nil {
		return false, fmt.Errorf("opening %s: %w", m.resource.Name, err)
	}
	defer rc.Close()
	c.Response().Header().Set(echo.HeaderContentLength, strconv.FormatInt(m.resource.Size, 10))
	cw := &countingWriter{w: w}
	n, err := io.CopyBuffer(cw, rc, make([]byte, multiWACZChunk))
	switch {
	case err != nil:
		return cw.n > 0, fmt.Errorf("copying %s: %w", m.resource.Name, err)
	case n != m.resource.Size:
		return true, fmt.Errorf("copying %s: read %d bytes, the record says %d", m.resource.Name, n, m.resource.Size)
	}
	return true, nil
}

// sha256Digest is a file record's hash as a datapackage names it: the
// crawler and uploads record bare sha256 hex, which gets its algorithm
// prefixed; a hash that has one already is kept.
func sha256Digest(hash string) string {
	if hash == "" || strings.Contains(hash, ":") {
		return hash
	}
	return "sha256:" + hash
}

// orgSlug is the org's name as a slug, the datapackage's organization:
// lower case, each run of other characters than letters and digits one
// "-", none at either end. trawler's orgs store no slug (the 2023 API
// has none), so it is derived from the name as upstream derives new
// orgs' slugs.
func orgSlug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}
