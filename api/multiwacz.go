package api

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// A collection, or one crawl or upload (itemdownload.go), downloads as one
// "multi-WACZ": a zip holding every WACZ file, stored (not compressed:
// WACZ files are zips already) and streamed from storage as it is written,
// then datapackage.json listing them (upstream-api-more.md §2.7,
// upstream-2026.md §2). Memory stays at one copy buffer whatever the
// download's size.

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
	pkg := multiWACZPackage{Profile: "multi-wacz-package", Resources: make([]resourceOut, 0, len(members))}
	for _, m := range members {
		res := m.resource
		res.Path = res.Name
		pkg.Resources = append(pkg.Resources, res)
	}
	// As json.Encoder writes it: compact, with a trailing newline.
	datapackage, err := json.Marshal(pkg)
	if err != nil {
		return false, fmt.Errorf("encoding datapackage.json: %w", err)
	}
	return writeZip(ctx, w, members, append(datapackage, '\n'))
}

// writeZip writes the members to w, each stored under its resource name
// and read from storage as it is written, then datapackage.json with the
// given bytes. The datapackage is known before the first member is read:
// it lists what the records say, as upstream's does.
func writeZip(ctx context.Context, w io.Writer, members []zipMember, datapackage []byte) (started bool, err error) {
	cw := &countingWriter{w: w}
	zw := zip.NewWriter(cw)
	buf := make([]byte, multiWACZChunk)
	for _, m := range members {
		if err := copyMember(ctx, zw, m, buf); err != nil {
			return cw.n > 0, err
		}
	}
	fw, err := zw.CreateHeader(zipHeader("datapackage.json"))
	if err != nil {
		return cw.n > 0, err
	}
	if _, err := fw.Write(datapackage); err != nil {
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
	return s.streamDownload(c, coll.Name+".wacz", func(w io.Writer) (bool, error) {
		return writeMultiWACZ(ctx, w, members)
	}, "collection", coll.ID)
}

// streamDownload answers with the WACZ write produces, as an attachment
// named filename. A failure before any byte went out is an error status
// (a 503 when storage is down); after that, half a zip is out, so the
// connection is broken off and the client sees a failed download
// instead of a truncated archive. logArgs say what was downloaded.
func (s *Server) streamDownload(c echo.Context, filename string, write func(io.Writer) (started bool, err error), logArgs ...any) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/wacz+zip")
	h.Set(echo.HeaderContentDisposition, attachment(filename))
	started, err := write(c.Response())
	switch {
	case err == nil:
		return nil
	case !started:
		// The error body is JSON, which echo labels only when no type is
		// set yet.
		h.Del(echo.HeaderContentType)
		h.Del(echo.HeaderContentDisposition)
		return storageError("download_failed", err)
	}
	level := slog.LevelError
	if c.Request().Context().Err() != nil {
		level = slog.LevelDebug // the client went away: nothing failed
	}
	s.log.Log(c.Request().Context(), level, "download broken off", append(logArgs, "err", err)...)
	panic(http.ErrAbortHandler)
}
