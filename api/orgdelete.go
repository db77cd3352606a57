package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// orgItemsBatch is how many items the org deletion deletes at a time
// (files, then documents), as upstream.
const orgItemsBatch = 1000

// orgDeletionTries is how many times a deletion is tried before its job
// ends unsuccessful and the superuser is told: upstream's Job runs its
// pod once and retries it three times.
const orgDeletionTries = 4

// orgDeletionPoll is how often the org deletion looks whether the org's
// CrawlJobs and ProfileJobs are gone.
const orgDeletionPoll = time.Second

// OrgDeleter runs org deletion jobs (DELETE /orgs/{oid}) in the
// background. Only the elected leader runs it: main calls Start when
// this replica gains the lease and Stop when it loses it. A job is a
// record in the store whose success stays null until every step is done;
// each step deletes by org, so a job cut short by a crash (or a lost
// lease) is run again from its first step by the next Start, and
// finishes. A failed try is tried again every rescan interval; after
// orgDeletionTries the job ends with success false, the superuser gets
// an e-mail, and POST /orgs/all/jobs/{id}/retry starts it again.
//
// The steps, in order:
//  1. cancel the org's running crawls and delete its CrawlJobs and
//     ProfileJobs, waiting until the operator has let them go (it marks
//     the crawls canceled and removes their pods and PVCs first), so
//     that nothing writes the org's documents or files after this;
//  2. the items, a batch at a time: their files, then their documents;
//  3. every other document of the org (store.DeleteOrgDocuments);
//  4. what is left under the org's folder in its storage;
//  5. the org's Kubernetes objects again (anything started meanwhile),
//     its ConfigMaps and storage Secret; the workflows' schedules go
//     with their documents (the scheduler reloads).
type OrgDeleter struct {
	srv     *Server
	objects OrgObjects
	rescan  time.Duration
	// kubeWait bounds each wait for the org's Kubernetes objects to go;
	// the attempt fails after it and is retried.
	kubeWait time.Duration
	kick     chan struct{}

	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

func newOrgDeleter(srv *Server, objects OrgObjects, rescan time.Duration) *OrgDeleter {
	return &OrgDeleter{srv: srv, objects: objects, rescan: rescan, kubeWait: 5 * time.Minute, kick: make(chan struct{}, 1)}
}

// OrgDeleter is the server's org deletion runner, for main to start and
// stop with leadership.
func (s *Server) OrgDeleter() *OrgDeleter { return s.orgDeleter }

// Start runs pending and new deletion jobs until ctx ends or Stop;
// starting twice is a no-op.
func (d *OrgDeleter) Start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stop != nil {
		return
	}
	ctx, d.stop = context.WithCancel(ctx)
	d.done = make(chan struct{})
	go d.loop(ctx, d.done)
}

// Stop stops running jobs (a job cut short resumes at the next Start)
// and waits for the runner to return.
func (d *OrgDeleter) Stop() {
	d.mu.Lock()
	stop, done := d.stop, d.done
	d.stop, d.done = nil, nil
	d.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// Kick makes the runner look for jobs now (a new one was recorded).
func (d *OrgDeleter) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *OrgDeleter) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(d.rescan)
	defer t.Stop()
	for {
		d.runPending(ctx)
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
		case <-t.C:
		}
	}
}

// runPending runs every unfinished deletion job, oldest first.
func (d *OrgDeleter) runPending(ctx context.Context) {
	jobs, err := d.srv.store.UnfinishedJobs(ctx, store.JobTypeDeleteOrg)
	if err != nil {
		if ctx.Err() == nil {
			d.srv.log.Warn("listing org deletion jobs", "err", err)
		}
		return
	}
	for i := range jobs {
		if ctx.Err() != nil {
			return
		}
		job := &jobs[i]
		log := d.srv.log.With("job", job.ID, "org", job.OID)
		log.Info("deleting org")
		if err := d.run(ctx, job); err != nil {
			if ctx.Err() == nil {
				d.failed(ctx, job, err)
			}
			continue
		}
		if err := d.srv.store.FinishJob(ctx, job.ID, true, d.srv.now()); err != nil {
			log.Warn("recording the end of the org deletion", "err", err)
			continue
		}
		d.srv.scheduler.Reload()
		log.Info("org deleted")
	}
}

// failed counts a failed try of job and gives the job up after
// orgDeletionTries, telling the superuser.
func (d *OrgDeleter) failed(ctx context.Context, job *store.BackgroundJob, cause error) {
	log := d.srv.log.With("job", job.ID, "org", job.OID)
	gaveUp, err := d.srv.store.RecordJobFailure(ctx, job.ID, orgDeletionTries, d.srv.now())
	switch {
	case err != nil:
		log.Warn("org deletion failed, will retry", "in", d.rescan, "err", cause, "counting the failure", err)
	case gaveUp:
		log.Error("org deletion failed; giving up", "tries", orgDeletionTries, "err", cause)
		d.srv.mailJobFailed(job, orgDeletionTries, cause)
	default:
		log.Warn("org deletion failed, will retry", "in", d.rescan, "err", cause)
	}
}

// run does every step of the job; see OrgDeleter.
func (d *OrgDeleter) run(ctx context.Context, job *store.BackgroundJob) error {
	org := &store.Org{ID: job.OID}
	if job.OrgStorage != nil {
		org.Storage = *job.OrgStorage
	}
	if err := d.cancelCrawls(ctx, org.ID); err != nil {
		return fmt.Errorf("canceling crawls: %w", err)
	}
	if err := d.clearKubernetes(ctx, org.ID); err != nil {
		return err
	}
	if err := d.deleteItems(ctx, org); err != nil {
		return fmt.Errorf("deleting items: %w", err)
	}
	if err := d.srv.store.DeleteOrgDocuments(ctx, org.ID); err != nil {
		return fmt.Errorf("deleting documents: %w", err)
	}
	if err := d.emptyStorage(ctx, org); err != nil {
		return fmt.Errorf("emptying storage: %w", err)
	}
	return d.clearKubernetes(ctx, org.ID)
}

// cancelCrawls cancels the org's crawls that have not ended: their
// CrawlJobs are deleted (the operator marks them canceled), or, with no
// CrawlJob left, they are marked canceled here.
func (d *OrgDeleter) cancelCrawls(ctx context.Context, oid uuid.UUID) error {
	crawls, err := d.srv.store.OrgActiveCrawls(ctx, oid)
	if err != nil {
		return err
	}
	for i := range crawls {
		if err := d.srv.cancel(ctx, &crawls[i]); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("crawl %s: %w", crawls[i].ID, err)
		}
	}
	return nil
}

// clearKubernetes deletes the org's Kubernetes objects and waits until
// its CrawlJobs and ProfileJobs are gone, for at most kubeWait.
func (d *OrgDeleter) clearKubernetes(ctx context.Context, oid uuid.UUID) error {
	if d.objects == nil {
		return nil
	}
	deadline := d.srv.now().Add(d.kubeWait)
	for {
		left, err := d.objects.DeleteOrgObjects(ctx, oid.String())
		if err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if d.srv.now().After(deadline) {
			return fmt.Errorf("%d crawl or profile jobs of the org still there after %v", left, d.kubeWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(orgDeletionPoll):
		}
	}
}

// deleteItems deletes the org's items a batch at a time: files first, so
// that no document goes while its files remain.
func (d *OrgDeleter) deleteItems(ctx context.Context, org *store.Org) error {
	for {
		items, err := d.srv.store.OrgItemsBatch(ctx, org.ID, orgItemsBatch)
		if err != nil || len(items) == 0 {
			return err
		}
		ptrs := make([]*store.Crawl, len(items))
		ids := make([]string, len(items))
		for i := range items {
			ptrs[i], ids[i] = &items[i], items[i].ID
		}
		if err := d.srv.deleteFiles(ctx, org, ptrs); err != nil {
			return err
		}
		if err := d.srv.store.DeleteOrgItems(ctx, org.ID, ids); err != nil {
			return err
		}
	}
}

// emptyStorage deletes every object left under the org's folder of a
// shared storage (profiles, logs, files of items recorded nowhere). An
// org's own bucket is the org's: only the files recorded in items went.
func (d *OrgDeleter) emptyStorage(ctx context.Context, org *store.Org) error {
	if d.srv.objects == nil || isCustomStorage(org) {
		return nil
	}
	name, _ := d.srv.orgStorage(org)
	b, err := d.srv.objects.Named(name)
	if err != nil {
		return err
	}
	var keys []string
	for obj, err := range b.List(ctx, s3.OrgPrefix(org.ID.String())) {
		if err != nil {
			return err
		}
		keys = append(keys, obj.Key)
		if len(keys) == orgItemsBatch {
			if err := b.Delete(ctx, keys...); err != nil {
				return err
			}
			keys = keys[:0]
		}
	}
	return b.Delete(ctx, keys...)
}

var _ OrgObjects = (*k8s.Launcher)(nil)
