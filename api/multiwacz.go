package api

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"
)

// A collection downloads as one "multi-WACZ": a zip holding every WACZ of
// its members, stored (not compressed: WACZ files are zips already) and
// streamed from storage as it is written, then datapackage.json listing
// them (upstream-api-more.md §2.7). Memory stays at one copy buffer
// whatever the collection's size.

// multiWACZChunk is the copy buffer, upstream's chunk size.
const multiWACZChunk = 256 << 10

// zipEpoch is the modification time of every member, as upstream writes.
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// zipMember is one file of the download and how to read it.
type zipMember struct {
	resource resourceOut
	open     func(ctx context.Context) (io.ReadCloser, error)
}

// multiWACZPackage is the trailing datapackage.json.
type multiWACZPackage struct {
	Profile   string        `json:"profile"`
	Resources []resourceOut `json:"resources"`
}

// writeMultiWACZ writes the zip of members to w, each under its resource
// name, and datapackage.json last (whose paths are the member names).
// started reports whether anything was written, i.e. whether a failure
// can still be answered with an error status.
func writeMultiWACZ(ctx context.Context, w io.Writer, members []zipMember) (started bool, err error) {
	cw := &countingWriter{w: w}
	zw := zip.NewWriter(cw)
	buf := make([]byte, multiWACZChunk)
	pkg := multiWACZPackage{Profile: "multi-wacz-package", Resources: make([]resourceOut, 0, len(members))}
	for _, m := range members {
		if err := copyMember(ctx, zw, m, buf); err != nil {
			return cw.n > 0, err
		}
		res := m.resource
		res.Path = res.Name
		pkg.Resources = append(pkg.Resources, res)
	}
	fw, err := zw.CreateHeader(zipHeader("datapackage.json"))
	if err != nil {
		return cw.n > 0, err
	}
	if err := json.NewEncoder(fw).Encode(pkg); err != nil {
		return true, fmt.Errorf("writing datapackage.json: %w", err)
	}
	return true, zw.Close()
}

func copyMember(ctx context.Context, zw *zip.Writer, m zipMember, buf []byte) error {
	rc, err := m.open(ctx)
	if err != nil {
		return fmt.Errorf("opening %s: %w", m.resource.Name, err)
	}
	defer rc.Close()
	fw, err := zw.CreateHeader(zipHeader(m.resource.Name))
	if err != nil {
		return err
	}
	n, err := io.CopyBuffer(fw, rc, buf)
	if err != nil {
		return fmt.Errorf("copying %s: %w", m.resource.Name, err)
	}
	if n != m.resource.Size {
		return fmt.Errorf("copying %s: read %d bytes, the record says %d", m.resource.Name, n, m.resource.Size)
	}
	return nil
}

func zipHeader(name string) *zip.FileHeader {
	h := &zip.FileHeader{Name: name, Method: zip.Store, Modified: zipEpoch}
	h.SetMode(0o664)
	return h
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// attachment is a Content-Disposition for a download named name: the
// name as upstream puts it (quotes and control characters dropped, so the
// header stays well-formed), plus the RFC 5987 form for non-ASCII names.
func attachment(name string) string {
	plain := strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	h := `attachment; filename="` + plain + `"`
	for _, r := range name {
		if r > unicode.MaxASCII {
			return h + "; filename*=UTF-8''" + strings.ReplaceAll(url.QueryEscape(name), "+", "%20")
		}
	}
	return h
}

// downloadCollection streams the collection's successful members' files
// as one multi-WACZ, reading each from storage as it is written.
func (s *Server) downloadCollection(c echo.Context) error {
	coll, err := s.collectionParam(c)
	if err != nil {
		return err
	}
	ctx, org := c.Request().Context(), currentOrg(c)
	items, err := s.store.CollectionItems(ctx, org.ID, coll.ID)
	if err != nil {
		return err
	}
	var members []zipMember
	for i := range items {
		for j := range items[i].Files {
			f := &items[i].Files[j]
			b, key, err := s.fileObject(org, f)
			if err != nil {
				return storageError("download_failed", err)
			}
			members = append(members, zipMember{
				resource: resourceOut{Name: key, Hash: f.Hash, Size: f.Size, CrawlID: items[i].ID},
				open:     func(ctx context.Context) (io.ReadCloser, error) { return b.Open(ctx, key) },
			})
		}
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/wacz+zip")
	h.Set(echo.HeaderContentDisposition, attachment(coll.Name+".wacz"))
	started, err := writeMultiWACZ(ctx, c.Response(), members)
	switch {
	case err == nil:
		return nil
	case !started:
		h.Del(echo.HeaderContentDisposition)
		return storageError("download_failed", err)
	}
	// Half a zip is already out: break the connection off, so the client
	// sees a failed download instead of a truncated archive.
	s.log.Error("collection download broken off", "collection", coll.ID, "err", err)
	panic(http.ErrAbortHandler)
}
