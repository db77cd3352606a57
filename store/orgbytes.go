package store

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// orgBytesRecomputes coalesces the recomputations of an org's
// bytesStored. Each is three sums over all the org's items, so one per
// change is a scan per change: with many of an org's items changing at
// once (a wave of deletes, replayed file records after a restart), a
// line of scans. Callers that arrive while the org's recomputation runs form
// the next one: it starts after all of them joined, so it reads every
// change they made before joining, and no caller waits for more than the
// recomputation before its own.
type orgBytesRecomputes struct {
	openBatches[uuid.UUID, bytesBatch]
	locks [16]sync.Mutex // striped by org id: one recomputation at a time per org

	mu   sync.Mutex
	last map[uuid.UUID]recountTime // each org's last recomputation here, whatever its outcome
	// owed holds, per org, when its bytesStored was last put in doubt
	// (owe): a recomputation started after that and answered clears it.
	owed map[uuid.UUID]time.Time
}

// recountTime is when a recomputation ended, how long it took and whether
// it answered.
type recountTime struct {
	ended time.Time
	took  time.Duration
	ok    bool
}

// healSpacing is how many of its own durations must pass after an org's
// recomputation before a heal (RunPostCrawlTasks) recomputes it again:
// a heal then takes at most a tenth of the database's time per org,
// however often the org's crawls end.
const healSpacing = 10

// ran notes a recomputation of org oid that took took and answered err.
func (r *orgBytesRecomputes) ran(oid uuid.UUID, ended time.Time, took time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[uuid.UUID]recountTime{}
	}
	r.last[oid] = recountTime{ended: ended, took: took, ok: err == nil}
	if since, owed := r.owed[oid]; owed && err == nil && !since.After(ended.Add(-took)) {
		delete(r.owed, oid)
	}
}

// owe notes that org oid's bytesStored may miss an addition made before
// now: its next heal recomputes it however lately it was recomputed.
func (r *orgBytesRecomputes) owe(oid uuid.UUID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owed == nil {
		r.owed = map[uuid.UUID]time.Time{}
	}
	// The latest doubt: a recomputation already running may have read
	// the crawls before this addition.
	r.owed[oid] = now
}

// due reports whether a heal of org oid recomputes it now: when it is owed
// a recomputation and the last one here answered (a failing database is
// not scanned again sooner), or when none was tried here within
// healSpacing times its duration before now.
func (r *orgBytesRecomputes) due(oid uuid.UUID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, tried := r.last[oid]
	_, owed := r.owed[oid]
	return !tried || owed && t.ok || now.Sub(t.ended) >= healSpacing*t.took
}

// bytesBatch is the callers waiting for one recomputation (how many
// joined it); done closes when it answered err, for each of them.
type bytesBatch struct {
	callers int
	done    chan struct{}
	err     error
}

// join returns the open batch of org oid, with the caller counted in.
func (r *orgBytesRecomputes) join(oid uuid.UUID) *bytesBatch {
	return r.joinOpen(oid, func() *bytesBatch { return &bytesBatch{done: make(chan struct{})} },
		func(b *bytesBatch) { b.callers++ })
}

// lock serialises org oid's recomputations.
func (r *orgBytesRecomputes) lock(oid uuid.UUID) func() {
	mu := &r.locks[oid[len(oid)-1]%uint8(len(r.locks))]
	mu.Lock()
	return mu.Unlock
}

// RecomputeOrgBytesStored sets the org's bytesStored to the total size of
// the files its crawls and uploads hold in storage, whatever their state,
// plus its profiles and seed files (bytesStoredSeedFiles, their part):
// upstream's canonical definition (its migration 0015), so the number
// rises as each file is recorded and falls when it is deleted. Calls for
// one org that arrive while its recomputation runs share the next
// (orgBytesRecomputes).
//
// Errors: NotFound("org_not_found").
func (m *Mongo) RecomputeOrgBytesStored(ctx context.Context, oid uuid.UUID) error {
	b := m.orgBytes.join(oid)
	unlock := m.orgBytes.lock(oid)
	if m.orgBytes.seal(oid, b) {
		start := time.Now()
		b.err = m.recomputeOrgBytes(ctx, oid)
		m.orgBytes.ran(oid, time.Now(), time.Since(start), b.err)
		close(b.done)
	}
	unlock()
	// Whoever sealed the batch ran it while holding the lock this call
	// held after it.
	<-b.done
	return b.err
}

// healOrgBytesStored recomputes the org's bytesStored after a crawl's end
// when it is due (orgBytesRecomputes.due): the count is kept by additions
// as files are recorded (PushCrawlFiles), and this only sets right what a
// recomputation racing an addition, or an addition lost to a timeout
// (owed), left wrong. At 10,000 crawls in one org a recomputation took
// the sandbox's database 1-2 s of CPU, and one per crawl end was most of
// its work. A failure is left to a later crawl's end: on a loaded
// database the scan outlasted the store timeout, and post-crawl tasks
// retrying it kept the database scanning for answers nobody waited for.
func (m *Mongo) healOrgBytesStored(ctx context.Context, oid uuid.UUID) {
	if m.orgBytes.due(oid, time.Now()) {
		_ = m.RecomputeOrgBytesStored(ctx, oid)
	}
}

// recomputeOrgBytes is one recomputation of the org's bytesStored.
func (m *Mongo) recomputeOrgBytes(ctx context.Context, oid uuid.UUID) error {
	return recompute(ctx, m.coll(collOrgs), oid, errOrgNotFound, func(ctx context.Context) (any, error) {
		items, err := sumField(ctx, m.coll(collCrawls), bson.M{"oid": oid}, "fileSize")
		if err != nil {
			return nil, err
		}
		profiles, err := sumField(ctx, m.coll(collProfiles), bson.M{"oid": oid}, "resource.size")
		if err != nil {
			return nil, err
		}
		seedFiles, err := sumField(ctx, m.coll(collFileUploads), bson.M{"oid": oid}, "size")
		if err != nil {
			return nil, err
		}
		return bson.M{"bytesStored": items + profiles + seedFiles, "bytesStoredSeedFiles": seedFiles}, nil
	})
}
