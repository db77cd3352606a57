package api

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Bounds of the WACZ check of uploads. Real WACZ files have a directory
// of a few kilobytes and a datapackage.json of about 150 bytes per file
// they hold; the bounds leave room for tens of thousands of files.
const (
	// maxWACZCheckRead is how many bytes of the file the check reads at
	// most: the zip's directory, and datapackage.json as stored.
	maxWACZCheckRead = 8 << 20
	// maxDatapackageSize is how far datapackage.json may inflate.
	maxDatapackageSize = 4 << 20
)

// waczError says why an upload is no WACZ file; any other error of
// checkWACZ is one reading the file.
type waczError string

func (e waczError) Error() string { return "not a WACZ file: " + string(e) }

// checkWACZ checks that r, of size bytes, is a WACZ file as far as
// trawler reads one: a zip archive with a datapackage.json at its root
// that is a JSON object listing its resources. It reads at most
// maxWACZCheckRead bytes and inflates at most maxDatapackageSize, so a
// zip bomb costs it no more than any other file, and nothing else of the
// archive is unpacked.
func checkWACZ(r io.ReaderAt, size int64) error {
	if size == 0 {
		return waczError("the file is empty")
	}
	br := &budgetReaderAt{r: r, size: size, left: maxWACZCheckRead}
	zr, err := zip.NewReader(br, size)
	if err != nil {
		return br.cause("not a zip archive")
	}
	var pkg *zip.File
	for _, f := range zr.File {
		if f.Name == "datapackage.json" {
			pkg = f
			break
		}
	}
	if pkg == nil {
		return waczError("no datapackage.json")
	}
	tooBig := waczError(fmt.Sprintf("datapackage.json is larger than %d bytes", maxDatapackageSize))
	if pkg.UncompressedSize64 > maxDatapackageSize {
		return tooBig
	}
	rc, err := pkg.Open()
	if err != nil {
		return br.cause("datapackage.json cannot be unpacked")
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxDatapackageSize+1))
	switch {
	case err != nil:
		return br.cause("datapackage.json cannot be unpacked")
	case len(data) > maxDatapackageSize:
		return tooBig // its header said less
	}
	var doc struct {
		Resources *[]json.RawMessage `json:"resources"`
	}
	if json.Unmarshal(data, &doc) != nil || doc.Resources == nil {
		return waczError("datapackage.json is not a JSON object with a resources list")
	}
	return nil
}

// errReadBudget: the check would read more than maxWACZCheckRead bytes.
var errReadBudget = errors.New("read budget spent")

// errOutsideFile: a zip's offsets point before the file's start.
var errOutsideFile = errors.New("offset outside the file")

// budgetReaderAt reads the size bytes of r until left bytes were asked
// for, and remembers why reading failed, so a failed check can tell a
// bad file from storage that failed. It never asks r for bytes outside
// the file, where offsets a zip made up would take it (a ranged read of
// storage would fail there).
type budgetReaderAt struct {
	r    io.ReaderAt
	size int64
	left int64
	err  error // the first read error other than io.EOF
}

func (b *budgetReaderAt) ReadAt(p []byte, off int64) (int, error) {
	switch {
	case off < 0:
		return 0, errOutsideFile
	case off >= b.size:
		return 0, io.EOF
	case int64(len(p)) > b.left:
		b.left = 0
		b.err = errReadBudget
		return 0, errReadBudget
	}
	var short error
	if int64(len(p)) > b.size-off {
		p, short = p[:b.size-off], io.EOF
	}
	b.left -= int64(len(p))
	n, err := b.r.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	if err == nil {
		err = short
	}
	return n, err
}

// cause is the error of a failed check: the storage's, if reading
// failed; else the file's problem (the zip library's words for it are
// not shown: they are not ours to promise).
func (b *budgetReaderAt) cause(problem string) error {
	switch {
	case errors.Is(b.err, errReadBudget):
		return waczError(fmt.Sprintf("its zip directory and datapackage.json take more than %d bytes", maxWACZCheckRead))
	case b.err != nil:
		return fmt.Errorf("reading the upload: %w", b.err)
	}
	return waczError(problem)
}
