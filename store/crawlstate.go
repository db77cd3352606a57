package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The operator's writes to a crawl document. Each is idempotent, so the
// operator may repeat any of them after a crash or a lost reply. Each reads
// the crawl by _id, decides in Go under lockCrawl, and writes only when
// something changes, with condFilter (see there for why).

// CrawlStateExtra are fields written together with a state change.
type CrawlStateExtra struct {
	// Finished is set when the new state is terminal.
	Finished *time.Time
	// Stats, when not nil, replaces the crawl's stats.
	Stats *CrawlStats
}

// SetCrawlState is the compare-and-set of every state transition
// (upstream §2.3): it sets the crawl's state to newState (plus extra) only
// if its current state is in allowedFrom (any state if allowedFrom is
// empty). It returns whether it changed the document and the crawl's
// state as it is afterwards (read as GetCrawlProgress reads it: a crawl's
// config and files do not travel with each transition), so that on a lost
// race the caller adopts the stored state and finished time. Setting the
// state a crawl already has (allowed) counts as updated, which makes
// retries harmless. A change of state is appended to the crawl's
// StateHistory in the same write; a final state frees the crawl's
// workflow for its next crawl (activeCid, see AddCrawl).
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) SetCrawlState(ctx context.Context, crawlID, newState string, allowedFrom []string, extra CrawlStateExtra) (bool, *Crawl, error) {
	defer m.lockCrawl(crawlID)()
	cur, err := m.GetCrawlProgress(ctx, crawlID)
	if err != nil {
		return false, nil, err
	}
	if len(allowedFrom) > 0 && !slices.Contains(allowedFrom, cur.State) {
		return false, cur, nil
	}
	cond := bson.M{}
	if len(allowedFrom) > 0 {
		cond["state"] = bson.M{"$in": allowedFrom}
	}
	after := *cur
	after.State = newState
	set := bson.M{"state": newState}
	if newState != cur.State {
		after.StateHistory = cur.withState(newState, time.Now().UTC().Truncate(time.Millisecond))
		set["stateHistory"] = after.StateHistory
	}
	if extra.Finished != nil {
		set["finished"] = *extra.Finished
		after.Finished = extra.Finished
	}
	if extra.Stats != nil {
		set["stats"] = *extra.Stats
	}
	update := bson.M{"$set": set}
	if IsFinished(newState) {
		// The crawl's workflow may start another (see AddCrawl).
		update["$unset"] = bson.M{"activeCid": ""}
	}
	res, err := m.coll(collCrawls).UpdateOne(ctx, m.condFilter(ctx, crawlID, cond), update)
	if err != nil {
		return false, nil, fmt.Errorf("setting crawl state: %w", err)
	}
	if res.MatchedCount == 1 {
		return true, &after, nil
	}
	// Another process changed the state since we read it, or deleted it.
	cur, err = m.GetCrawlProgress(ctx, crawlID)
	if err != nil {
		return false, nil, err
	}
	return false, cur, nil
}

// RecordCrawlProgress is one crawl's progress write, read first (the
// operator batches its writes with RecordCrawlsProgress): its page and
// size counters (stats; nil leaves them) and its per-pod view (pods:
// phase, exit reason, resource use; nil leaves it), in one update. The stats are written only if they differ from the
// stored ones and the crawl has not ended (a late poll must not overwrite
// the final stats); the pod view is written whatever the state, so a
// finished crawl keeps its pods' last view. It reports whether it wrote.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) RecordCrawlProgress(ctx context.Context, crawlID string, stats *CrawlStats, pods map[string]PodStatus) (bool, error) {
	defer m.lockCrawl(crawlID)()
	set, cond := bson.M{}, bson.M{}
	if stats != nil {
		var cur struct {
			State string      `bson:"state"`
			Stats *CrawlStats `bson:"stats"`
		}
		read := options.FindOne().SetProjection(bson.M{"state": 1, "stats": 1})
		if err := m.coll(collCrawls).FindOne(ctx, bson.M{"_id": crawlID}, read).Decode(&cur); err != nil {
			return false, notFoundOr(err, errCrawlNotFound, "finding crawl")
		}
		if !IsFinished(cur.State) && (cur.Stats == nil || *cur.Stats != *stats) {
			set["stats"] = *stats
			cond["state"] = bson.M{"$nin": FinishedStates}
		}
	}
	if pods != nil {
		set["podStatus"] = pods
	}
	if len(set) == 0 {
		return false, nil
	}
	res, err := m.coll(collCrawls).UpdateOne(ctx, m.condFilter(ctx, crawlID, cond), bson.M{"$set": set})
	if err != nil {
		return false, fmt.Errorf("recording crawl progress: %w", err)
	}
	switch {
	case res.MatchedCount == 1:
		return true, nil
	case pods == nil:
		// Stats alone, and the crawl ended (or went) since the read.
		return false, nil
	case len(cond) > 0:
		// The crawl ended since the read (another process did it): the
		// pods' view still goes, without the stats.
		res, err = m.coll(collCrawls).UpdateOne(ctx, bson.M{"_id": crawlID}, bson.M{"$set": bson.M{"podStatus": pods}})
		if err != nil {
			return false, fmt.Errorf("recording crawl pods: %w", err)
		}
		if res.MatchedCount == 1 {
			return true, nil
		}
	}
	return false, errCrawlNotFound
}

// CrawlProgress is one crawl's progress for RecordCrawlsProgress: its page
// and size counters (Stats; nil leaves them) and its per-pod view (Pods:
// phase, exit reason, resource use; nil leaves it).
type CrawlProgress struct {
	CrawlID string
	Stats   *CrawlStats
	Pods    map[string]PodStatus
}

// RecordCrawlsProgress is the operator's progress write, for many crawls
// in one round trip (an unordered bulk write): busy crawls' counters
// would otherwise cost a write each, every few seconds each. The stats
// are written only while a crawl has not ended (a late batch must not
// overwrite the final stats, which come with the final state); the pod
// view is written whatever the state, so a finished crawl keeps its pods'
// last view. A crawl that is gone is skipped. It returns how many
// documents matched a write.
//
// The condition on the state stays in the filter on MongoDB, so the write
// holds against other processes. FerretDB gets {_id} alone (condFilter):
// there the operator, the only writer of progress, never has a batch in
// flight for a crawl whose final state it is recording.
func (m *Mongo) RecordCrawlsProgress(ctx context.Context, progress []CrawlProgress) (int64, error) {
	var models []mongo.WriteModel
	for _, p := range progress {
		idOnly := bson.M{"_id": p.CrawlID}
		pods := p.Pods
		if p.Stats != nil {
			filter := m.condFilter(ctx, p.CrawlID, bson.M{"state": bson.M{"$nin": FinishedStates}})
			set := bson.M{"stats": *p.Stats}
			if pods != nil && len(filter) == len(idOnly) {
				set["podStatus"], pods = pods, nil
			}
			models = append(models, mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(bson.M{"$set": set}))
		}
		if pods != nil {
			models = append(models, mongo.NewUpdateOneModel().SetFilter(idOnly).SetUpdate(bson.M{"$set": bson.M{"podStatus": pods}}))
		}
	}
	if len(models) == 0 {
		return 0, nil
	}
	res, err := m.coll(collCrawls).BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	if err != nil {
		return 0, fmt.Errorf("recording crawl progress: %w", err)
	}
	return res.MatchedCount, nil
}

// FileResult reports what AddCrawlFiles did and the crawl's file counters
// afterwards.
type FileResult struct {
	Added     int   // files newly recorded (the others were already there)
	AddedSize int64 // their total size
	FileCount int
	FileSize  int64
}

// fileAttempts bounds AddCrawlFiles's compare-and-set retries; each retry
// means another process added a file to the same crawl in between.
const fileAttempts = 20

// AddCrawlFile is AddCrawlFiles for one file.
func (m *Mongo) AddCrawlFile(ctx context.Context, crawlID string, f CrawlFile) (FileResult, error) {
	return m.AddCrawlFiles(ctx, crawlID, []CrawlFile{f})
}

// AddCrawlFiles records finished WACZ files on the crawl (PushCrawlFiles),
// then recomputes the org's bytesStored once, also on a replay (a crash
// may have come between the two writes).
func (m *Mongo) AddCrawlFiles(ctx context.Context, crawlID string, files []CrawlFile) (FileResult, error) {
	res, oid, err := m.pushCrawlFiles(ctx, crawlID, files)
	if err != nil {
		return res, err
	}
	if err := m.RecomputeOrgBytesStored(ctx, oid); err != nil && !errors.Is(err, ErrNotFound) {
		return res, err
	}
	return res, nil
}

// PushCrawlFiles records finished WACZ files on the crawl, each at most
// once per filename; files, fileCount and fileSize change together in one
// single-document update, so a replayed or concurrent call for the same
// files changes nothing. The size of the files it added is then added to
// the org's bytesStored ($inc): the operator records a crawl's files as
// the crawler uploads them, and a scan of all the org's items per file
// (RecomputeOrgBytesStored: 1-2 s of the sandbox database's CPU at
// 10,000 crawls) made the database the bottleneck of many crawls' ends.
// A call that finds files already recorded is a replay (a crash or a
// timeout may have come between the two writes): the org's bytesStored is
// then owed a recomputation, which the crawl's post-crawl tasks make
// (healOrgBytesStored). It is not made here: the files are recorded, and
// on a loaded database a scan of the org's items outlasts the call's time,
// so a record retried after a timeout failed on its scan every time and
// the crawl's end waited for it (a crawl of 10,000 in one org not
// recorded as finished after 2 minutes, each retry another scan).
//
// A recomputation running meanwhile (a delete, an upload) can still
// count the added files twice or not at all; RunPostCrawlTasks sets that
// right too.
//
// The write is conditional on fileCount being unchanged since the read (a
// compare-and-set, retried if another process added a file in between).
// The obvious filter {"files.filename": {$nin: names}} is not used:
// FerretDB v1 matches $ne on arrays of subdocuments even when the file is
// there (see TestConformance/QuirkNeOnArrayOfSubdocs).
//
// Errors: NotFound("crawl_not_found"); Conflict("crawl_file_contention")
// if the compare-and-set kept losing.
func (m *Mongo) PushCrawlFiles(ctx context.Context, crawlID string, files []CrawlFile) (FileResult, error) {
	res, oid, err := m.pushCrawlFiles(ctx, crawlID, files)
	if err != nil {
		return res, err
	}
	if res.Added < len(files) {
		m.orgBytes.owe(oid, time.Now())
	}
	if res.AddedSize > 0 {
		if _, err := m.coll(collOrgs).UpdateOne(ctx, bson.M{"_id": oid},
			bson.M{"$inc": bson.M{"bytesStored": res.AddedSize}}); err != nil {
			m.orgBytes.owe(oid, time.Now())
			return res, fmt.Errorf("adding the files' size to the org's bytesStored: %w", err)
		}
	}
	return res, nil
}

// pushCrawlFiles is PushCrawlFiles, returning the crawl's org too.
func (m *Mongo) pushCrawlFiles(ctx context.Context, crawlID string, files []CrawlFile) (FileResult, uuid.UUID, error) {
	defer m.lockCrawl(crawlID)()
	read := options.FindOne().SetProjection(bson.M{"oid": 1, "files.filename": 1, "fileCount": 1, "fileSize": 1})
	for range fileAttempts {
		var cur struct {
			OID       uuid.UUID                   `bson:"oid"`
			Files     []struct{ Filename string } `bson:"files"`
			FileCount int                         `bson:"fileCount"`
			FileSize  int64                       `bson:"fileSize"`
		}
		if err := m.coll(collCrawls).FindOne(ctx, bson.M{"_id": crawlID}, read).Decode(&cur); err != nil {
			return FileResult{}, uuid.Nil, notFoundOr(err, errCrawlNotFound, "finding crawl")
		}
		have := map[string]bool{}
		for _, f := range cur.Files {
			have[f.Filename] = true
		}
		var add []CrawlFile
		var size int64
		for _, f := range files {
			if !have[f.Filename] {
				have[f.Filename] = true
				add = append(add, f)
				size += f.Size
			}
		}
		if len(add) == 0 {
			return FileResult{FileCount: cur.FileCount, FileSize: cur.FileSize}, cur.OID, nil
		}
		filter := m.condFilter(ctx, crawlID, bson.M{"fileCount": cur.FileCount})
		res, err := m.coll(collCrawls).UpdateOne(ctx, filter, bson.M{
			"$push": bson.M{"files": bson.M{"$each": add}},
			"$inc":  bson.M{"fileCount": len(add), "fileSize": size},
		})
		if err != nil {
			return FileResult{}, uuid.Nil, fmt.Errorf("adding crawl files: %w", err)
		}
		if res.MatchedCount == 1 {
			return FileResult{Added: len(add), AddedSize: size, FileCount: cur.FileCount + len(add), FileSize: cur.FileSize + size}, cur.OID, nil
		}
	}
	return FileResult{}, uuid.Nil, Conflict("crawl_file_contention")
}

// ClearCanceledCrawlFiles empties the file list of a canceled crawl whose
// stored objects are deleted (a crawl canceled while paused had uploaded
// its pause WACZs): a canceled crawl keeps no files. A crawl in any other
// state is left as it is.
func (m *Mongo) ClearCanceledCrawlFiles(ctx context.Context, crawlID string) error {
	defer m.lockCrawl(crawlID)()
	c, err := m.GetCrawlByID(ctx, crawlID)
	if err != nil || c.State != StateCanceled || len(c.Files) == 0 {
		return err
	}
	filter := m.condFilter(ctx, crawlID, bson.M{"state": StateCanceled})
	if _, err := m.coll(collCrawls).UpdateOne(ctx, filter, bson.M{
		"$set": bson.M{"files": bson.A{}, "fileCount": 0, "fileSize": int64(0)},
	}); err != nil {
		return fmt.Errorf("clearing a canceled crawl's files: %w", err)
	}
	if err := m.RecomputeOrgBytesStored(ctx, c.OID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// PresignedURL is a download link cached on a crawl file until ExpireAt.
type PresignedURL struct {
	URL      string
	ExpireAt time.Time
}

// SetCrawlFilePresignedURLs caches download links on the crawl's files,
// by filename; files not named keep theirs. Positional updates are not an
// option on FerretDB v1, so it rewrites the whole file list, and only once
// the list is final (the post-crawl tasks are done, or the item is not a
// crawl) and no file was added meanwhile: it never races the operator
// recording a file. Otherwise the links stay uncached and are signed again
// on the next read. It reports whether it wrote.
//
// Errors: NotFound("crawl_not_found").
func (m *Mongo) SetCrawlFilePresignedURLs(ctx context.Context, crawlID string, urls map[string]PresignedURL) (bool, error) {
	defer m.lockCrawl(crawlID)()
	var cur struct {
		Type          string      `bson:"type"`
		PostCrawlDone bool        `bson:"postCrawlDone"`
		Files         []CrawlFile `bson:"files"`
		FileCount     int         `bson:"fileCount"`
	}
	read := options.FindOne().SetProjection(bson.M{"type": 1, "postCrawlDone": 1, "files": 1, "fileCount": 1})
	if err := m.coll(collCrawls).FindOne(ctx, bson.M{"_id": crawlID}, read).Decode(&cur); err != nil {
		return false, notFoundOr(err, errCrawlNotFound, "finding crawl")
	}
	if (cur.Type == TypeCrawl || cur.Type == "") && !cur.PostCrawlDone {
		return false, nil
	}
	changed := false
	for i := range cur.Files {
		if u, ok := urls[cur.Files[i].Filename]; ok {
			cur.Files[i].PresignedURL, cur.Files[i].ExpireAt = &u.URL, &u.ExpireAt
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	filter := m.condFilter(ctx, crawlID, bson.M{"fileCount": cur.FileCount})
	res, err := m.coll(collCrawls).UpdateOne(ctx, filter, bson.M{"$set": bson.M{"files": cur.Files}})
	if err != nil {
		return false, fmt.Errorf("caching presigned urls: %w", err)
	}
	return res.MatchedCount == 1, nil
}
