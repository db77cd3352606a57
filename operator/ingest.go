package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/store"
)

// doneMessage is what a crawler pushes to crawls-done after uploading a
// WACZ.
type doneMessage struct {
	ID        string `json:"id"`
	User      string `json:"user"`
	Filename  string `json:"filename"`
	Hash      string `json:"hash"`
	Size      int64  `json:"size"`
	Completed *bool  `json:"completed"`
}

// ingester moves a crawl's finished files and error lines from its Redis
// into the store at least once: read without popping, record
// (idempotently), then remove. A crash between the steps only replays.
type ingester struct {
	store       CrawlStore
	id          string
	oid         uuid.UUID
	storagePath string
	storageName string
	timeout     time.Duration
	log         *slog.Logger

	// FilesAdded/FilesAddedSize are the recorded totals as the store last
	// reported them.
	filesAdded, filesAddedSize int64
	totalsKnown                bool
}

func newIngester(cj *trawlerv1.CrawlJob, st CrawlStore, timeout time.Duration, log *slog.Logger) *ingester {
	oid, _ := uuid.Parse(cj.Spec.OID)
	return &ingester{store: st, id: cj.Spec.ID, oid: oid, storagePath: cj.Spec.StoragePath, storageName: storageName(cj.Spec.StorageName),
		timeout: timeout, log: log, filesAdded: cj.Status.FilesAdded, filesAddedSize: cj.Status.FilesAddedSize}
}

// loadTotals reads the recorded file totals once, since the job status
// may lag behind a file recorded just before a crash.
func (in *ingester) loadTotals(ctx context.Context) error {
	if in.totalsKnown {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	c, err := in.store.GetCrawlByID(ctx, in.id)
	if errors.Is(err, store.ErrNotFound) {
		in.totalsKnown = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading file totals: %w", err)
	}
	in.filesAdded, in.filesAddedSize, in.totalsKnown = int64(c.FileCount), c.FileSize, true
	return nil
}

// files records the crawls-done messages of a snapshot, all in one store
// write, and removes them from Redis. It returns how many messages remain
// unrecorded.
func (in *ingester) files(ctx context.Context, c *redis.Client, s snapshot) (int, error) {
	if len(s.Done) == 0 {
		return int(s.DoneLen), nil
	}
	if err := in.loadTotals(ctx); err != nil {
		return int(s.DoneLen), err
	}
	if err := in.record(ctx, s.Done); err != nil {
		return int(s.DoneLen), err
	}
	rctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	if err := removeDone(rctx, c, s.Done); err != nil {
		return int(s.DoneLen), err
	}
	return int(s.DoneLen) - len(s.Done), nil
}

// record stores the files of crawls-done messages (at most once each).
func (in *ingester) record(ctx context.Context, raws []string) error {
	var files []store.CrawlFile
	for _, raw := range raws {
		if f, ok := in.crawlFile(raw); ok {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	res, err := in.store.PushCrawlFiles(ctx, in.id, files)
	if errors.Is(err, store.ErrNotFound) {
		in.log.Warn("crawl document missing, files not recorded", "crawl", in.id, "files", len(files))
		return nil
	}
	if err != nil {
		return fmt.Errorf("recording %d files: %w", len(files), err)
	}
	in.filesAdded, in.filesAddedSize, in.totalsKnown = int64(res.FileCount), res.FileSize, true
	return nil
}

// crawlFile reads a crawls-done message; unusable ones are dropped.
func (in *ingester) crawlFile(raw string) (store.CrawlFile, bool) {
	var m doneMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.Filename == "" {
		// Nothing a retry could record: upstream skipped these too.
		in.log.Warn("dropping unusable crawls-done message", "crawl", in.id, "message", raw)
		return store.CrawlFile{}, false
	}
	f := store.CrawlFile{Filename: m.Filename, Hash: m.Hash, Size: m.Size}
	if in.storagePath != "" {
		// The crawler sends the full URL; keep it from the storage path on,
		// relative to the default storage.
		if i := strings.Index(m.Filename, in.storagePath); i > 0 {
			f.Filename = m.Filename[i:]
			name := in.storageName
			f.DefStorageName = &name
		}
	}
	return f, true
}

// errorLines records the snapshot's oldest error lines and trims them.
func (in *ingester) errorLines(ctx context.Context, c *redis.Client, s snapshot) error {
	if len(s.Errors) == 0 {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, in.timeout)
	err := in.store.AddCrawlErrors(sctx, in.id, s.ErrorSeq, s.Errors)
	cancel()
	if err != nil {
		return fmt.Errorf("recording %d error lines: %w", len(s.Errors), err)
	}
	rctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	return trimErrors(rctx, c, in.id, s.ErrorSeq, len(s.Errors))
}

// drain records everything left in a crawl's Redis, for the post-crawl
// tasks. It gives up when Redis stays unreachable past ctx.
func (in *ingester) drain(ctx context.Context, c *redis.Client) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, in.timeout)
		s, err := readAndControl(rctx, c, in.id, redisControl{})
		cancel()
		if err != nil {
			return err
		}
		if len(s.Done) == 0 && len(s.Errors) == 0 && len(s.Pages) == 0 {
			return nil
		}
		if _, err := in.files(ctx, c, s); err != nil {
			return err
		}
		if err := in.errorLines(ctx, c, s); err != nil {
			return err
		}
		if err := in.pages(ctx, c, s); err != nil {
			return err
		}
	}
}
