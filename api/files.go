package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// errNoStorage: trawler runs without object storage configured.
var errNoStorage = errors.New("no object storage configured")

// orgStorageConfig is an org's own storage as the storage layer takes it.
func orgStorageConfig(st store.Storage) s3.Config {
	return s3.Config{AccessKey: st.AccessKey, SecretKey: st.SecretKey, EndpointURL: st.EndpointURL,
		AccessEndpointURL: st.AccessEndpointURL, Region: st.Region, UseAccessForPresign: st.UseAccessForPresign}
}

// fileObject finds a crawl file's bucket and key, following upstream: a
// file recorded for a named (default) storage lives there, in the org's
// folder; otherwise it is in the org's own storage, recorded as a full
// URL. Keys outside those places are refused (s3.ErrInvalidKey).
func (s *Server) fileObject(org *store.Org, f *store.CrawlFile) (*s3.Bucket, string, error) {
	if s.objects == nil {
		return nil, "", errNoStorage
	}
	name := ""
	switch {
	case f.DefStorageName != nil:
		name = *f.DefStorageName
	case isCustomStorage(org):
		b, err := s.objects.Custom(orgStorageConfig(org.Storage))
		if err != nil {
			return nil, "", err
		}
		key, ok := strings.CutPrefix(f.Filename, b.URL())
		if !ok {
			return nil, "", &s3.KeyError{Key: f.Filename, Reason: "not in the org's storage " + b.URL()}
		}
		return b, key, s3.ValidateKey(key)
	default:
		// A relative name without a storage (e.g. an imported record)
		// is taken to be in the org's configured storage.
		name, _ = s.orgStorage(org)
	}
	b, err := s.objects.Named(name)
	if err != nil {
		return nil, "", err
	}
	return b, f.Filename, s3.InOrg(org.ID.String(), f.Filename)
}

// linkStillGood tells whether a cached download link may be handed out
// again: it must have an expiry, with at least a tenth of the signing
// duration left, so that a user gets time to use it.
func (s *Server) linkStillGood(f *store.CrawlFile, now time.Time) bool {
	return f.PresignedURL != nil && *f.PresignedURL != "" && f.ExpireAt != nil &&
		now.Add(s.cfg.PresignDuration/10).Before(*f.ExpireAt)
}

// resources are the crawl's files with download links: cached ones while
// they last, freshly signed ones otherwise (which are then cached). A file
// that cannot be signed keeps an empty path, so one bad record does not
// hide the others.
func (s *Server) resources(ctx context.Context, org *store.Org, crawl *store.Crawl) []resourceOut {
	now := s.clock.Now()
	out := make([]resourceOut, len(crawl.Files))
	fresh := map[string]store.PresignedURL{}
	for i := range crawl.Files {
		f := &crawl.Files[i]
		out[i] = resourceOut{Name: f.Filename, Hash: f.Hash, Size: f.Size, CrawlID: crawl.ID}
		if s.linkStillGood(f, now) {
			out[i].Path = *f.PresignedURL
			continue
		}
		link, err := s.presign(ctx, org, f)
		if err != nil {
			s.log.Warn("cannot sign a download link", "crawl", crawl.ID, "file", f.Filename, "err", err)
			continue
		}
		out[i].Path = link
		// The signature dates from the whole second (X-Amz-Date), so the
		// link expires up to a second before now + duration.
		fresh[f.Filename] = store.PresignedURL{URL: link, ExpireAt: now.Truncate(time.Second).Add(s.cfg.PresignDuration)}
	}
	if len(fresh) > 0 {
		if _, err := s.store.SetCrawlFilePresignedURLs(ctx, crawl.ID, fresh); err != nil {
			s.log.Warn("caching download links", "crawl", crawl.ID, "err", err)
		}
	}
	return out
}

func (s *Server) presign(ctx context.Context, org *store.Org, f *store.CrawlFile) (string, error) {
	b, key, err := s.fileObject(org, f)
	if err != nil {
		return "", err
	}
	return b.PresignGet(ctx, key, s.cfg.PresignDuration)
}

// deleteFiles removes the stored objects of the crawls' files, grouped by
// bucket. Objects already gone are fine; keys the org may not touch are
// skipped (and logged), never deleted. Any other failure is a 503: the
// caller must keep the crawl documents, so that a retry finishes the job.
func (s *Server) deleteFiles(ctx context.Context, org *store.Org, crawls []*store.Crawl) error {
	if s.objects == nil {
		return nil
	}
	keys := map[*s3.Bucket][]string{}
	for _, c := range crawls {
		for i := range c.Files {
			b, key, err := s.fileObject(org, &c.Files[i])
			if errors.Is(err, s3.ErrInvalidKey) {
				s.log.Warn("not deleting a file outside the org's storage", "crawl", c.ID, "file", c.Files[i].Filename, "err", err)
				continue
			}
			if err != nil {
				return fileDeletionError(err)
			}
			keys[b] = append(keys[b], key)
		}
	}
	for b, ks := range keys {
		if err := b.Delete(ctx, ks...); err != nil {
			return fileDeletionError(err)
		}
	}
	return nil
}

// DeleteCanceledCrawlFiles deletes the stored files of a canceled crawl
// and then empties its file list (upstream-2026 §1.9: a crawl canceled
// while paused keeps neither its pause WACZs nor their records). The
// operator calls it before the post-crawl tasks; it is idempotent, and a
// crawl in any other state is left alone.
func (s *Server) DeleteCanceledCrawlFiles(ctx context.Context, crawlID string) error {
	crawl, err := s.store.GetCrawlByID(ctx, crawlID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if crawl.State != store.StateCanceled || len(crawl.Files) == 0 {
		return nil
	}
	org, err := s.store.GetOrg(ctx, crawl.OID)
	if err != nil {
		return err
	}
	if err := s.deleteFiles(ctx, org, []*store.Crawl{crawl}); err != nil {
		return err
	}
	return s.store.ClearCanceledCrawlFiles(ctx, crawlID)
}

func fileDeletionError(cause error) error {
	return &apiError{status: http.StatusServiceUnavailable, detail: "file_deletion_error",
		cause: fmt.Errorf("deleting stored files: %w", cause)}
}

// DownloadURLs are the download links of a crawl's files, as replay.json
// gives them, for the crawlFinished webhook.
func (s *Server) DownloadURLs(ctx context.Context, crawl *store.Crawl) ([]string, error) {
	org, err := s.store.GetOrg(ctx, crawl.OID)
	if err != nil {
		return nil, err
	}
	res := s.resources(ctx, org, crawl)
	urls := make([]string, len(res))
	for i, r := range res {
		urls[i] = r.Path
	}
	return urls, nil
}
