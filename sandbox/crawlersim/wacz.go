package crawlersim

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The WACZ 1.1.1 package the crawler uploads: a zip holding
//
//	archive/*.warc.gz        the WARC files, stored (already compressed)
//	indexes/index.cdx        a CDXJ line per response record, sorted
//	pages/pages.jsonl        the pages
//	logs/*.log               the crawl log of each session
//	datapackage.json         every file above with its sha256 and size
//	datapackage-digest.json  the sha256 of datapackage.json

// waczResource is one entry of datapackage.json.
type waczResource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

// wacz packages the collection into <name>.wacz and returns its path,
// size and sha256.
func (a *archive) wacz(warcs []string, created time.Time) (path string, size int64, sum string, err error) {
	path = filepath.Join(a.dir, a.name+".wacz")
	f, err := os.Create(path)
	if err != nil {
		return "", 0, "", fmt.Errorf("creating wacz: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	zw := zip.NewWriter(io.MultiWriter(f, h))
	pkg := &waczPackage{zw: zw, created: created}
	shift := map[string]int64{}
	for _, name := range warcs {
		info, err := warcinfoMember(name, a.session, created)
		if err != nil {
			return "", 0, "", err
		}
		shift[name] = int64(len(info))
		if err := pkg.addWARC(name, info, filepath.Join(a.archiveDir(), name)); err != nil {
			return "", 0, "", err
		}
	}
	index, err := a.index(warcs, shift)
	if err != nil {
		return "", 0, "", err
	}
	if err := pkg.addBytes("indexes/index.cdx", index); err != nil {
		return "", 0, "", err
	}
	if err := pkg.addFile("pages/pages.jsonl", filepath.Join(a.dir, "pages", "pages.jsonl"), zip.Deflate); err != nil {
		return "", 0, "", err
	}
	logs, _ := filepath.Glob(filepath.Join(a.logsDir(), "*.log"))
	slices.Sort(logs)
	for _, l := range logs {
		if err := pkg.addFile("logs/"+filepath.Base(l), l, zip.Deflate); err != nil {
			return "", 0, "", err
		}
	}
	if err := pkg.finish(a.name); err != nil {
		return "", 0, "", err
	}
	if err := zw.Close(); err != nil {
		return "", 0, "", fmt.Errorf("writing wacz: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		return "", 0, "", fmt.Errorf("writing wacz: %w", err)
	}
	return path, st.Size(), hex.EncodeToString(h.Sum(nil)), nil
}

type waczPackage struct {
	zw        *zip.Writer
	created   time.Time
	resources []waczResource
}

// add writes one zip entry from r and records it as a resource.
func (p *waczPackage) add(zipPath string, r io.Reader, method uint16) error {
	w, err := p.zw.CreateHeader(&zip.FileHeader{Name: zipPath, Method: method, Modified: p.created})
	if err != nil {
		return fmt.Errorf("writing wacz entry %s: %w", zipPath, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), r)
	if err != nil {
		return fmt.Errorf("writing wacz entry %s: %w", zipPath, err)
	}
	p.resources = append(p.resources, waczResource{Name: filepath.Base(zipPath), Path: zipPath,
		Hash: "sha256:" + hex.EncodeToString(h.Sum(nil)), Bytes: n})
	return nil
}

// addFile adds a local file; a missing one (no pages yet) is left out.
func (p *waczPackage) addFile(zipPath, src string, method uint16) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing wacz entry %s: %w", zipPath, err)
	}
	defer in.Close()
	return p.add(zipPath, in, method)
}

// addWARC adds a WARC file from the volume with its warcinfo member in
// front.
func (p *waczPackage) addWARC(name string, info []byte, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("writing wacz entry %s: %w", name, err)
	}
	defer in.Close()
	return p.add("archive/"+name, io.MultiReader(bytes.NewReader(info), in), zip.Store)
}

func (p *waczPackage) addBytes(zipPath string, data []byte) error {
	return p.add(zipPath, strings.NewReader(string(data)), zip.Deflate)
}

// finish writes datapackage.json and its digest.
func (p *waczPackage) finish(title string) error {
	pkg, err := marshalJSON(map[string]any{
		"profile": "data-package", "wacz_version": "1.1.1", "title": title,
		"software": "trawler crawlersim (browsertrix-crawler 0.11 simulator)",
		"created":  isoTime(p.created), "resources": p.resources,
	})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(pkg)
	digest, err := marshalJSON(map[string]string{"path": "datapackage.json", "hash": "sha256:" + hex.EncodeToString(sum[:])})
	if err != nil {
		return err
	}
	for _, e := range []struct {
		name string
		data []byte
	}{{"datapackage.json", pkg}, {"datapackage-digest.json", digest}} {
		w, err := p.zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: p.created})
		if err == nil {
			_, err = w.Write(e.data)
		}
		if err != nil {
			return fmt.Errorf("writing wacz entry %s: %w", e.name, err)
		}
	}
	return nil
}
