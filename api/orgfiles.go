package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// fileTarget is where the API stores an org's own files (uploads): its
// configured storage, in the org's folder, recorded with the storage's
// name; or the org's own bucket at its root, recorded as full URLs. Crawl
// files follow the same layout, so fileObject finds them all.
type fileTarget struct {
	bucket *s3.Bucket
	prefix string  // "<oid>/" in a named storage, "" in the org's own
	named  *string // the named storage; nil for the org's own
}

func (s *Server) orgFiles(org *store.Org) (fileTarget, error) {
	if s.objects == nil {
		return fileTarget{}, errNoStorage
	}
	if isCustomStorage(org) {
		b, err := s.objects.Custom(orgStorageConfig(org.Storage))
		return fileTarget{bucket: b}, err
	}
	name, _ := s.orgStorage(org)
	b, err := s.objects.Named(name)
	return fileTarget{bucket: b, prefix: s3.OrgPrefix(org.ID.String()), named: &name}, err
}

// filename is what a file document records for the object at key.
func (t fileTarget) filename(key string) string {
	if t.named == nil {
		return t.bucket.URL() + key
	}
	return key
}

// errOverQuota: a stored stream went past the bytes the org had left.
var errOverQuota = errors.New("storage quota exceeded")

// countingHasher passes a stream through, counting and hashing the bytes
// as they go (so each byte is read exactly once), and fails once more
// than limit bytes came (limit < 0: no limit).
type countingHasher struct {
	r     io.Reader
	h     hash.Hash
	n     int64
	limit int64
	over  bool
}

func (c *countingHasher) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	if c.limit >= 0 && c.n > c.limit {
		c.over = true
		return n, errOverQuota
	}
	return n, err
}

// putFile streams r to key of t and returns the file's record. Past
// limit bytes the upload is abandoned with errOverQuota.
func (s *Server) putFile(ctx context.Context, t fileTarget, key string, r io.Reader, limit int64) (store.CrawlFile, error) {
	cr := &countingHasher{r: r, h: sha256.New(), limit: limit}
	_, err := t.bucket.Put(ctx, key, cr, -1, "application/wacz+zip")
	if cr.over {
		return store.CrawlFile{}, errOverQuota
	}
	if err != nil {
		return store.CrawlFile{}, err
	}
	return store.CrawlFile{Filename: t.filename(key), Hash: hex.EncodeToString(cr.h.Sum(nil)), Size: cr.n,
		DefStorageName: t.named}, nil
}

// putWACZ is putFile for an uploaded WACZ: once stored, the file is
// checked (checkWACZ, reading it back with ranged reads, as uploads are
// never held whole), and one that is no WACZ is deleted again and
// refused with a 422 at loc.
func (s *Server) putWACZ(ctx context.Context, t fileTarget, key string, r io.Reader, limit int64, loc ...any) (store.CrawlFile, error) {
	f, err := s.putFile(ctx, t, key, r, limit)
	if err != nil {
		return f, err
	}
	if err := s.checkStoredWACZ(ctx, t, key); err != nil {
		if derr := t.bucket.Delete(ctx, key); derr != nil {
			s.log.Warn("deleting a refused upload", "key", key, "err", derr)
		}
		var bad waczError
		if errors.As(err, &bad) {
			return store.CrawlFile{}, validationError{{Loc: loc, Msg: bad.Error(), Type: "value_error.wacz"}}
		}
		return store.CrawlFile{}, err
	}
	return f, nil
}

func (s *Server) checkStoredWACZ(ctx context.Context, t fileTarget, key string) error {
	obj, err := t.bucket.Open(ctx, key)
	if err != nil {
		return err
	}
	defer obj.Close()
	return checkWACZ(obj, obj.Info.Size)
}

// deleteObjects removes stored files that no document records (any more):
// failures are only logged, as upstream ignores them.
func (s *Server) deleteObjects(ctx context.Context, org *store.Org, files []store.CrawlFile) {
	if err := s.deleteFiles(ctx, org, []*store.Crawl{{ID: "unrecorded", Files: files}}); err != nil {
		s.log.Warn("deleting unrecorded files", "org", org.ID, "err", err)
	}
}

// quotaLeft is how many more bytes the org may store (-1: no quota).
func quotaLeft(org *store.Org) int64 {
	if org.Quotas.StorageQuota <= 0 {
		return -1
	}
	return max(org.Quotas.StorageQuota-org.BytesStored, 0)
}
